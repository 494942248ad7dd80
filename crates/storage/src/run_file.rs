//! Reading a finished run's `run.json` back (written by [`RunDir::write_run`](crate::RunDir)).

use std::path::{Path, PathBuf};

use planwave_record::RunResult;

/// Why a directory's run record could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadRunError {
    /// No `run.json`: not a run directory, or the run has not finished.
    #[error("{}: no run.json", dir.display())]
    NotFinished { dir: PathBuf },
    #[error("reading {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is there but is not a run record (its serde error as `reason`).
    #[error("{}: not a planwave run record: {reason}", path.display())]
    NotARecord { path: PathBuf, reason: String },
}

/// The finished run recorded in `dir/run.json`.
pub fn read_run(dir: &Path) -> Result<RunResult, ReadRunError> {
    let path = dir.join("run.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ReadRunError::NotFinished { dir: dir.into() });
        }
        Err(source) => return Err(ReadRunError::Io { path, source }),
    };
    serde_json::from_str(&text).map_err(|e| ReadRunError::NotARecord {
        path,
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_record_is_an_unfinished_run_and_a_bad_one_is_named() {
        let Ok(dir) = tempfile::tempdir() else {
            panic!("no temp dir")
        };
        assert!(matches!(
            read_run(dir.path()),
            Err(ReadRunError::NotFinished { dir: d }) if d == dir.path()
        ));
        std::fs::write(dir.path().join("run.json"), "{\"run_id\": 1}").ok();
        match read_run(dir.path()) {
            Err(ReadRunError::NotARecord { path, reason }) => {
                assert_eq!(path, dir.path().join("run.json"));
                assert!(reason.contains("UUID"), "{reason}");
            }
            other => panic!("expected NotARecord, got {other:?}"),
        }
        // A directory where the file should be cannot be read at all.
        let nested = dir.path().join("nested");
        std::fs::create_dir_all(nested.join("run.json")).ok();
        assert!(matches!(read_run(&nested), Err(ReadRunError::Io { .. })));
    }
}
