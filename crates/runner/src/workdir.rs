//! A run directory opened for a job: durable writes, one process at a time, the journal.

use std::path::Path;
use std::sync::Arc;

use crate::error::Context;
use planwave_storage::{Journal, JournalMirror, RunDir, RunLock};

/// The run directory, with every file made durable (fsync, rename, directory fsync).
pub fn open_run_dir(path: &Path) -> crate::Result<RunDir> {
    Ok(RunDir::create(path)
        .context("preparing the run directory")?
        .with_durable(true))
}

/// One process per run directory, for as long as the guard lives.
pub fn lock_run_dir(out: &RunDir) -> crate::Result<RunLock> {
    Ok(RunLock::acquire(out.root())?)
}

/// The journal at `rel` inside the run directory (appended to when it exists: resume); every
/// line carries the run id.
pub fn open_journal(out: &RunDir, rel: &str, run_id: uuid::Uuid) -> crate::Result<Arc<Journal>> {
    open_journal_mirrored(out, rel, run_id, None)
}

/// As [`open_journal`], every acknowledged line also stored in `mirror` (a queue worker's).
pub fn open_journal_mirrored(
    out: &RunDir,
    rel: &str,
    run_id: uuid::Uuid,
    mirror: Option<Arc<dyn JournalMirror>>,
) -> crate::Result<Arc<Journal>> {
    let path = out.path_no_links(rel)?;
    // A mirrored directory (a goal job on a queue worker) mirrors every journal in it.
    let mirror = mirror.or_else(|| out.journal_mirror(rel));
    Ok(Arc::new(
        Journal::open_mirrored(&path, out.is_durable(), Some(run_id), mirror)
            .with_context(|| format!("opening {}", path.display()))?,
    ))
}
