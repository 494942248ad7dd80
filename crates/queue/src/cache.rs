//! A worker's local cache of run directories: the one directory a worker writes in, and what
//! it removes when it stops. JetStream holds the durable copy of every job; the cache only
//! holds the job a worker is running.
//!
//! `worker --cache .` once emptied the directory it ran in. A worker now removes only what it
//! created, inside a directory it owns:
//! - without `--cache`, a new directory under the system's temp dir, removed when it stops;
//! - `--cache DIR` that does not exist: created, and removed when the worker stops if nothing
//!   but the worker's own files was put in it;
//! - `--cache DIR` that is empty, or an earlier worker's cache (its marker file and job
//!   directories only, as a worker killed with SIGKILL leaves it): used, and left in place,
//!   empty, when the worker stops;
//! - anything else is refused, as `--out` refuses a directory that is not new, empty or a run
//!   directory.
//!
//! The marker file (`.planwave-worker`) is locked while the worker runs, so two workers never
//! share a cache. Every job directory is built by [`WorkerCache::job_dir`], which checks the
//! built path is one plain entry of the cache before anything is written or removed.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use crate::QueueError;
use crate::names::check_batch_name;

/// The file that makes a directory a worker's cache.
const MARKER: &str = ".planwave-worker";

/// Why a directory cannot be a worker's cache.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The directory named is not one a worker may own (the person's choice: bad input).
    #[error("{}: {problem}", path.display())]
    Refused { path: PathBuf, problem: String },
    /// The file system failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The worker's cache directory, owned while this value lives; cleaned when dropped.
#[derive(Debug)]
pub struct WorkerCache {
    root: PathBuf,
    /// Made by this worker: removed when it stops (when empty but for the worker's own).
    created: bool,
    /// The default temporary directory: all of it is this worker's.
    temporary: bool,
    /// The locked marker: held for the worker's life.
    marker: Option<File>,
    /// Job directories this worker made (removed when it stops, if still there).
    jobs: Mutex<BTreeSet<PathBuf>>,
}

impl WorkerCache {
    /// A new directory under the system's temp dir, the worker's alone.
    pub fn temporary() -> Result<WorkerCache, CacheError> {
        let root = std::env::temp_dir().join(format!(
            "planwave-worker-{}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir(&root).map_err(|source| CacheError::Io {
            path: root.clone(),
            source,
        })?;
        let mut cache = WorkerCache::owned(root, true);
        cache.temporary = true;
        cache.lock()?;
        Ok(cache)
    }

    /// `dir` as this worker's cache: created when missing; an existing one must be empty or
    /// an earlier worker's cache (whose job directories are removed: JetStream has them).
    pub fn claim(dir: &Path) -> Result<WorkerCache, CacheError> {
        let refused = |problem: &str| CacheError::Refused {
            path: dir.to_path_buf(),
            problem: problem.into(),
        };
        let io = |source| CacheError::Io {
            path: dir.to_path_buf(),
            source,
        };
        let meta = match std::fs::metadata(dir) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir_all(dir).map_err(io)?;
                let mut cache = WorkerCache::owned(dir.to_path_buf(), true);
                cache.lock()?;
                return Ok(cache);
            }
            Err(e) => return Err(io(e)),
        };
        if !meta.is_dir() {
            return Err(refused(
                "is not a directory; a worker's cache is a new or empty directory",
            ));
        }
        let mut leftovers = Vec::new();
        let mut foreign = false;
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name();
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            match name.to_str() {
                Some(MARKER) => {}
                Some(n) if is_dir && is_job_dir_name(n) => leftovers.push(entry.path()),
                _ => foreign = true,
            }
        }
        let marked = dir.join(MARKER).is_file();
        if foreign || (!leftovers.is_empty() && !marked) {
            return Err(refused(
                "is not empty and is not a planwave worker's cache; choose a new or empty \
                 directory (a worker removes what it writes there)",
            ));
        }
        let mut cache = WorkerCache::owned(dir.to_path_buf(), false);
        cache.lock()?;
        // An earlier worker's jobs (it was killed): rebuilt from JetStream when run again.
        for old in leftovers {
            std::fs::remove_dir_all(&old).map_err(|source| CacheError::Io { path: old, source })?;
        }
        Ok(cache)
    }

    fn owned(root: PathBuf, created: bool) -> WorkerCache {
        WorkerCache {
            root,
            created,
            temporary: false,
            marker: None,
            jobs: Mutex::new(BTreeSet::new()),
        }
    }

    /// Creates and locks the marker; another live worker holding it is a refusal.
    fn lock(&mut self) -> Result<(), CacheError> {
        let path = self.root.join(MARKER);
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| CacheError::Io {
                path: path.clone(),
                source,
            })?;
        match file.try_lock() {
            Ok(()) => {
                self.marker = Some(file);
                Ok(())
            }
            Err(std::fs::TryLockError::WouldBlock) => Err(CacheError::Refused {
                path: self.root.clone(),
                problem: "is the cache of another running worker; give each worker its own".into(),
            }),
            Err(std::fs::TryLockError::Error(source)) => Err(CacheError::Io { path, source }),
        }
    }

    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The directory of job `key` of `batch`: checked, once built, to be one plain entry
    /// directly inside the cache, and remembered so the worker removes it when it stops.
    pub(crate) fn job_dir(&self, batch: &str, key: &str) -> crate::Result<PathBuf> {
        let name = format!("{batch}-{key}");
        let path = self.root.join(&name);
        let mut below = path
            .strip_prefix(&self.root)
            .map_err(|_| QueueError::new(format!("job directory {name:?} leaves the cache")))?
            .components();
        let plain = matches!(below.next(), Some(Component::Normal(n)) if n == name.as_str())
            && below.next().is_none()
            && is_job_dir_name(&name);
        if !plain {
            return Err(QueueError::new(format!(
                "job directory {name:?} is not a plain name inside the cache"
            )));
        }
        if let Ok(mut jobs) = self.jobs.lock() {
            jobs.insert(path.clone());
        }
        Ok(path)
    }
}

/// `{batch}-{hex id}`: what [`WorkerCache::job_dir`] makes.
fn is_job_dir_name(name: &str) -> bool {
    name.rsplit_once('-').is_some_and(|(batch, hex)| {
        check_batch_name(batch).is_ok()
            && !hex.is_empty()
            && hex.len() % 2 == 0
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}

impl Drop for WorkerCache {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_dir_all(&self.root);
            return;
        }
        let jobs = std::mem::take(self.jobs.get_mut().unwrap_or_else(|e| e.into_inner()));
        for dir in jobs {
            // A link is removed as a link, never followed.
            if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
        let _ = std::fs::remove_file(self.root.join(MARKER));
        self.marker = None;
        if self.created {
            // Not recursive: whatever someone else put here meanwhile stays, with the directory.
            let _ = std::fs::remove_dir(&self.root);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_with_files_of_its_own_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("notes.txt"), "mine").expect("write");
        let e = WorkerCache::claim(dir.path()).expect_err("not ours");
        assert!(
            matches!(&e, CacheError::Refused { problem, .. } if problem.contains("is not empty")),
            "{e}"
        );
        assert!(dir.path().join("notes.txt").is_file());
        assert!(!dir.path().join(MARKER).exists());
    }

    #[test]
    fn an_existing_empty_directory_is_kept_and_a_new_one_removed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = WorkerCache::claim(dir.path()).expect("empty");
        let job = cache.job_dir("q3", "6162").expect("job dir");
        std::fs::create_dir_all(job.join("jobs/a")).expect("mkdir");
        drop(cache);
        assert!(dir.path().is_dir(), "the person's directory stays");
        assert_eq!(std::fs::read_dir(dir.path()).expect("read").count(), 0);

        let new = dir.path().join("new");
        let cache = WorkerCache::claim(&new).expect("new");
        std::fs::create_dir(cache.job_dir("q3", "61").expect("job")).expect("mkdir");
        drop(cache);
        assert!(!new.exists(), "made by the worker: removed");
    }

    #[test]
    fn an_earlier_workers_cache_is_taken_over_and_a_live_ones_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let first = WorkerCache::claim(dir.path()).expect("empty");
        let e = WorkerCache::claim(dir.path()).expect_err("in use");
        assert!(e.to_string().contains("another running worker"), "{e}");
        drop(first);
        // What a worker killed mid-job leaves: its marker and a job directory.
        std::fs::write(dir.path().join(MARKER), "").expect("marker");
        std::fs::create_dir_all(dir.path().join("q3-61/jobs")).expect("mkdir");
        let second = WorkerCache::claim(dir.path()).expect("an earlier worker's");
        assert!(!dir.path().join("q3-61").exists(), "its leftovers go");
        drop(second);
    }

    #[test]
    fn job_directories_stay_inside_the_cache() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = WorkerCache::claim(dir.path()).expect("empty");
        for batch in ["/srv/data/victim", "..", "../victim", "a/b"] {
            assert!(cache.job_dir(batch, "00").is_err(), "{batch}");
        }
        assert_eq!(
            cache.job_dir("q3", "00").expect("plain"),
            dir.path().join("q3-00")
        );
    }

    #[test]
    fn the_temporary_cache_is_removed_whole() {
        let cache = WorkerCache::temporary().expect("temp");
        let root = cache.path().to_path_buf();
        std::fs::write(root.join("stray"), "x").expect("write");
        drop(cache);
        assert!(!root.exists());
    }
}
