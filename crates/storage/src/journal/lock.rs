//! One process per run directory: two processes appending to one journal would interleave
//! two runs into one record.

use std::fs::File;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{0} is in use by another planwave process (it holds {0}/.lock)")]
    Busy(PathBuf),
    #[error("cannot lock {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// An exclusive advisory lock on `DIR/.lock`, released when dropped or when the process dies
/// (so a `kill -9` never leaves a stale lock behind).
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

impl RunLock {
    pub fn acquire(dir: &Path) -> Result<RunLock, LockError> {
        let path = dir.join(".lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| LockError::Io {
                path: path.clone(),
                source,
            })?;
        match file.try_lock() {
            Ok(()) => Ok(RunLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(LockError::Busy(dir.to_path_buf())),
            Err(std::fs::TryLockError::Error(source)) => Err(LockError::Io { path, source }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn second_lock_on_one_dir_is_refused_until_the_first_is_dropped() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = RunLock::acquire(dir.path()).expect("first lock");
        assert!(matches!(
            RunLock::acquire(dir.path()),
            Err(LockError::Busy(_))
        ));
        drop(first);
        RunLock::acquire(dir.path()).expect("lock after release");
    }
}
