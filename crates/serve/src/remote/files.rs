//! A finished run's directory, read from the object store and written under `--data`, where
//! the report, sections, `run.json` and the journal are served as any run directory's. The
//! directory is marked with the record's revision it was written for: it is written again
//! only when the record changed (a resumed run that ended again).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use planwave_queue::RemoteRun;
use planwave_storage::RunDir;

use super::{Remote, unavailable};
use crate::error::ApiError;
use crate::state::AppState;

/// The mark: the record revision the directory holds (a dot file: never a run's own).
const MARK: &str = ".planwave-remote";
/// Largest stored run directory read back.
const MAX_STORED: usize = 512 << 20;

/// Writes run `id`'s stored directory under `--data` unless it is there already for `run`'s
/// revision. A run that ended without files (it failed before it ran) gets only the mark.
pub async fn materialize(
    state: &Arc<AppState>,
    remote: &Remote,
    id: &str,
    run: &RemoteRun,
) -> Result<(), ApiError> {
    let dir = state.data.join(id);
    let mark = run.revision.to_string();
    if is_marked(&dir, &mark) {
        return Ok(());
    }
    let _one = remote.writing.lock().await;
    if is_marked(&dir, &mark) {
        return Ok(());
    }
    let files = if run.record.files.is_empty() {
        None
    } else {
        planwave_queue::run_files(&remote.queue, id, MAX_STORED)
            .await
            .map_err(unavailable)?
    };
    tokio::task::spawn_blocking(move || write(&dir, files.unwrap_or_default(), &mark))
        .await
        .map_err(|e| ApiError::Internal(e.to_string()))?
}

fn is_marked(dir: &Path, mark: &str) -> bool {
    std::fs::read_to_string(dir.join(MARK)).is_ok_and(|m| m.trim() == mark)
}

/// Replaces the directory's files with `files` (confined to it: `RunDir::path` refuses `..`
/// and absolute paths), then marks it.
fn write(dir: &Path, files: BTreeMap<String, Vec<u8>>, mark: &str) -> Result<(), ApiError> {
    let err = |e: &dyn std::fmt::Display| ApiError::Internal(format!("{}: {e}", dir.display()));
    let _ = std::fs::remove_dir_all(dir);
    let root = RunDir::create(dir).map_err(|e| err(&e))?;
    for (rel, bytes) in &files {
        let path = match root.path(rel) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(file = %rel, error = %e, "a stored file outside its run; skipped");
                continue;
            }
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| err(&e))?;
        }
        root.write_unsynced(rel, bytes).map_err(|e| err(&e))?;
    }
    root.write_unsynced(MARK, mark.as_bytes())
        .map_err(|e| err(&e))
}
