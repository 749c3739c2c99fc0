//! The journal: one YAML file per finished record under `parts/`, written durably
//! as it arrives, and `manifest.yaml`.

use super::{RecordKey, Tables, MANIFEST_FILE, PARTS_DIR};
use crate::error::{Error, Result};
use crate::util::{self, write_atomic};
use locklab_model::manifest::{Manifest, MANIFEST_SCHEMA_VERSION};
use locklab_model::plan::Mode;
use locklab_model::records::RunRecord;
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Writes a results directory record by record, so an interrupted run keeps every
/// record it finished.
#[derive(Debug)]
pub struct ResultsWriter {
    dir: PathBuf,
    finished: BTreeSet<RecordKey>,
}

impl ResultsWriter {
    /// Start a new results directory (created if needed) and write `manifest.yaml`.
    /// Refuses a directory that already holds records of a run.
    pub fn create(dir: &Path, manifest: &Manifest) -> Result<Self> {
        util::create_dir(dir)?;
        let parts = dir.join(PARTS_DIR);
        if !list_parts(&parts)?.is_empty() {
            return Err(Error::Results(format!(
                "results directory {} already holds records of a run; resume it or choose another directory",
                dir.display()
            )));
        }
        util::create_dir(&parts)?;
        write_manifest(dir, manifest)?;
        Ok(ResultsWriter {
            dir: dir.to_path_buf(),
            finished: BTreeSet::new(),
        })
    }

    /// Reopen an interrupted (or finished) results directory. Returns the writer,
    /// the stored manifest and the records already finished, which the caller skips.
    pub fn resume(dir: &Path) -> Result<(Self, Manifest, BTreeSet<RecordKey>)> {
        let manifest = read_manifest(dir)?;
        let parts = dir.join(PARTS_DIR);
        util::create_dir(&parts)?;
        // Leftovers of a write that was cut short never became records.
        if let Ok(entries) = fs::read_dir(&parts) {
            for e in entries.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name.starts_with('.') && name.ends_with(".tmp") {
                    let _ = fs::remove_file(e.path());
                }
            }
        }
        let finished: BTreeSet<RecordKey> =
            list_parts(&parts)?.into_iter().map(|(k, _)| k).collect();
        let w = ResultsWriter {
            dir: dir.to_path_buf(),
            finished: finished.clone(),
        };
        Ok((w, manifest, finished))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Records finished so far (including those found by `resume`).
    pub fn finished(&self) -> &BTreeSet<RecordKey> {
        &self.finished
    }

    /// Store one record durably (fsync'd before this returns). Writing a key again
    /// replaces the earlier record (a repeated, disturbed repetition).
    pub fn write(&mut self, rec: &RunRecord) -> Result<()> {
        let key = (rec.point.point, rec.point.mode, rec.point.rep);
        let path = self.dir.join(PARTS_DIR).join(part_name(key));
        let text = serde_yaml::to_string(rec).map_err(|source| Error::Yaml {
            path: path.clone(),
            source,
        })?;
        write_atomic(&path, text.as_bytes())?;
        self.finished.insert(key);
        Ok(())
    }

    /// Rewrite `manifest.yaml` (e.g. to record an interruption).
    pub fn write_manifest(&self, manifest: &Manifest) -> Result<()> {
        write_manifest(&self.dir, manifest)
    }

    /// Write the Parquet tables from every finished record; the manifest is left as
    /// it is, for the caller to mark the run complete once everything derived from
    /// the records (claims, report) is written too ([`set_status`]).
    pub fn write_tables(&self, manifest: &Manifest) -> Result<()> {
        let records = read_parts(&self.dir)?;
        Tables::from_records(manifest, &records)?.write(&self.dir)
    }

    /// Write the Parquet tables from every finished record, then the manifest.
    /// A manifest whose status is empty or `running` is marked `complete`, and a
    /// missing finish time is set to now; any other status is kept as given.
    pub fn finish(self, manifest: &Manifest) -> Result<()> {
        let records = read_parts(&self.dir)?;
        let mut tables = Tables::from_records(manifest, &records)?;
        tables.write(&self.dir)?;
        let mut m = manifest.clone();
        if m.status.is_empty() || m.status == "running" {
            m.status = "complete".into();
        }
        if m.finished_utc.is_none() {
            m.finished_utc = Some(util::now_utc());
        }
        write_manifest(&self.dir, &m)
    }
}

/// The keys of the finished records of a results directory (reads nothing else,
/// changes nothing).
pub fn finished_records(dir: &Path) -> Result<BTreeSet<RecordKey>> {
    Ok(list_parts(&dir.join(PARTS_DIR))?
        .into_iter()
        .map(|(k, _)| k)
        .collect())
}

/// Set the status of the run in `dir` (`complete`, `failed: <why>`), with the
/// finish time when it becomes `complete`.
pub fn set_status(dir: &Path, status: &str) -> Result<()> {
    let mut m = read_manifest(dir)?;
    m.status = status.to_string();
    // When the run finished: kept by a rebuilt report, cleared by a resumption.
    match status {
        "complete" => m.finished_utc = m.finished_utc.take().or_else(|| Some(util::now_utc())),
        "running" => m.finished_utc = None,
        _ => {}
    }
    write_manifest(dir, &m)
}

pub(super) fn part_name((point, mode, rep): RecordKey) -> String {
    format!("p{point:06}-{}-r{rep:04}.yaml", mode.as_str())
}

fn parse_part_name(name: &str) -> Option<RecordKey> {
    let stem = name.strip_suffix(".yaml")?.strip_prefix('p')?;
    let mut it = stem.splitn(3, '-');
    let point = it.next()?.parse().ok()?;
    let mode = match it.next()? {
        "sim" => Mode::Sim,
        "native" => Mode::Native,
        _ => return None,
    };
    let rep = it.next()?.strip_prefix('r')?.parse().ok()?;
    Some((point, mode, rep))
}

/// Finished part files, sorted by key. A missing directory has none.
pub(super) fn list_parts(parts: &Path) -> Result<Vec<(RecordKey, PathBuf)>> {
    let entries = match fs::read_dir(parts) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("list", parts)(e)),
    };
    let mut out = Vec::new();
    for e in entries {
        let e = e.map_err(Error::io("list", parts))?;
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(k) = parse_part_name(&name) {
            out.push((k, e.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// Every finished record of a results directory, sorted by (point, mode, rep).
pub fn read_parts(dir: &Path) -> Result<Vec<RunRecord>> {
    list_parts(&dir.join(PARTS_DIR))?
        .into_iter()
        .map(|(_, path)| {
            let text = util::read_to_string(&path)?;
            serde_yaml::from_str(&text).map_err(|source| Error::Yaml { path, source })
        })
        .collect()
}

/// Read `manifest.yaml`. A manifest of a newer layout than this locklab knows
/// ([`MANIFEST_SCHEMA_VERSION`]) is refused: what it says may mean something else.
pub fn read_manifest(dir: &Path) -> Result<Manifest> {
    let path = dir.join(MANIFEST_FILE);
    let text = util::read_to_string(&path)?;
    let m: Manifest = serde_yaml::from_str(&text).map_err(|source| Error::Yaml {
        path: path.clone(),
        source,
    })?;
    if m.schema_version > MANIFEST_SCHEMA_VERSION {
        return Err(Error::Results(format!(
            "{} has schema_version {}, and this locklab reads manifests up to version {MANIFEST_SCHEMA_VERSION}; use a newer locklab",
            path.display(),
            m.schema_version
        )));
    }
    Ok(m)
}

/// Check the part files of a results directory before a run resumes there: the
/// keys of the records that are whole and belong to the run (`expected`), and the
/// part files removed, each with why: one cut short or damaged (it does not parse,
/// or holds another record than its name says) or of a record the run does not
/// have. Their records then run again.
pub fn check_parts(dir: &Path, expected: &BTreeSet<RecordKey>) -> Result<CheckedParts> {
    let mut done = BTreeSet::new();
    let mut removed = Vec::new();
    for (key, path) in list_parts(&dir.join(PARTS_DIR))? {
        let why = if !expected.contains(&key) {
            Some("not a record of this run".to_string())
        } else {
            match util::read_to_string(&path).and_then(|t| {
                serde_yaml::from_str::<RunRecord>(&t).map_err(|source| Error::Yaml {
                    path: path.clone(),
                    source,
                })
            }) {
                Ok(rec) if (rec.point.point, rec.point.mode, rec.point.rep) == key => None,
                Ok(_) => Some(
                    "it holds another record than its name says; the record runs again".to_string(),
                ),
                Err(e) => Some(format!("damaged ({e}); the record runs again")),
            }
        };
        match why {
            None => {
                done.insert(key);
            }
            Some(why) => {
                fs::remove_file(&path).map_err(Error::io("remove", &path))?;
                removed.push((path, why));
            }
        }
    }
    Ok(CheckedParts { done, removed })
}

/// What [`check_parts`] found.
#[derive(Debug, Clone, Default)]
pub struct CheckedParts {
    /// The records that are whole and belong to the run.
    pub done: BTreeSet<RecordKey>,
    /// The part files removed, each with why.
    pub removed: Vec<(PathBuf, String)>,
}

pub fn write_manifest(dir: &Path, manifest: &Manifest) -> Result<()> {
    let path = dir.join(MANIFEST_FILE);
    let text = serde_yaml::to_string(manifest).map_err(|source| Error::Yaml {
        path: path.clone(),
        source,
    })?;
    write_atomic(&path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn part_names_round_trip() {
        for key in [(0, Mode::Sim, 0), (123_456, Mode::Native, 42)] {
            assert_eq!(parse_part_name(&part_name(key)), Some(key));
        }
        assert_eq!(parse_part_name(".p000001-sim-r0001.yaml.tmp"), None);
        assert_eq!(parse_part_name("p1-gpu-r1.yaml"), None);
    }
}
