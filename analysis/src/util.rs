//! Small helpers shared by the modules: atomic writes and UTC timestamps.

use crate::error::{Error, Result};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The temporary name used while `path` is being written (same directory, so the
/// final rename is atomic).
pub(crate) fn tmp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp"))
}

/// Write `bytes` to `path` atomically: temporary file, fsync, rename, fsync the
/// directory. A reader sees the old file or the new one, never half of one.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |f| {
        f.write_all(bytes).map_err(Error::io("write", path))
    })
}

/// Like [`write_atomic`], with the content produced by `fill`.
pub(crate) fn write_atomic_with(
    path: &Path,
    fill: impl FnOnce(&mut File) -> Result<()>,
) -> Result<()> {
    let tmp = tmp_path(path);
    let mut f = File::create(&tmp).map_err(Error::io("create", &tmp))?;
    if let Err(e) = fill(&mut f) {
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    f.sync_all().map_err(Error::io("sync", &tmp))?;
    drop(f);
    fs::rename(&tmp, path).map_err(Error::io("rename into place", path))?;
    sync_dir(path.parent().unwrap_or(Path::new(".")));
    Ok(())
}

/// Make a rename durable. Best effort: some filesystems refuse to sync directories.
pub(crate) fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    }) {
        let _ = d.sync_all();
    }
}

pub(crate) fn create_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).map_err(Error::io("create directory", dir))
}

pub(crate) fn read_to_string(path: &Path) -> Result<String> {
    fs::read_to_string(path).map_err(Error::io("read", path))
}

/// The current time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn now_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    utc_from_unix(secs)
}

/// Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
pub(crate) fn utc_from_unix(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3_600,
        rem % 3_600 / 60,
        rem % 60
    )
}

/// Path as UTF-8, which polars needs for scanning.
pub(crate) fn utf8(path: &Path) -> Result<&str> {
    path.to_str()
        .ok_or_else(|| Error::Results(format!("path {} is not valid UTF-8", path.display())))
}

/// Format a number with about four significant digits, trailing zeros dropped, for
/// tables and labels (`2.228`, `41`, `0.8434`, `1.5e6`).
pub fn fmt_num(v: f64) -> String {
    if v.is_nan() {
        return "n/a".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let a = v.abs();
    let t = if a == 0.0 {
        return "0".into();
    } else if !(1e-3..1e6).contains(&a) {
        return format!("{v:.3e}");
    } else if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 100.0 {
        format!("{v:.1}")
    } else if a >= 10.0 {
        format!("{v:.2}")
    } else if a >= 1.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.4}")
    };
    if t.contains('.') {
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(utc_from_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc_from_unix(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc_from_unix(1_700_000_000), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn numbers_read_naturally() {
        assert_eq!(fmt_num(41.0), "41");
        assert_eq!(fmt_num(2.2281), "2.228");
        assert_eq!(fmt_num(0.84341), "0.8434");
        assert_eq!(fmt_num(1.7), "1.7");
        assert_eq!(fmt_num(8_008_000.0), "8.008e6");
        assert_eq!(fmt_num(f64::NAN), "n/a");
    }
}
