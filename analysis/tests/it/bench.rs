#[test]
fn bench_runs_small_and_reports_every_step() {
    let tmp = tempfile::tempdir().unwrap();
    let r = locklab_analysis::bench::bench_pipeline(20_000, tmp.path()).unwrap();
    assert!(r.rows >= 20_000 && r.points >= 2);
    assert_eq!(r.claims, 5);
    assert_eq!(r.aggregate.len(), 5);
    let text = r.to_string();
    assert!(
        text.contains("thread rows") && text.contains("peak RSS"),
        "{text}"
    );
}
