//! Writing a queued batch back as a local batch directory: `batch.json` and `jobs/<dir>/`
//! with every file its worker stored, so `show` and every other tool work on it unchanged.

use std::path::Path;

use base64::Engine;
use planwave_batch::BatchSummary;
use planwave_storage::RunDir;
use tokio::io::AsyncReadExt;

use crate::names::{job_key, object_name};
use crate::worker::RUN_ARCHIVE;
use crate::{Queue, QueueError};

/// What `fetch` wrote.
#[derive(Debug)]
pub struct Fetched {
    pub summary: BatchSummary,
    /// Jobs without a verdict yet (not written).
    pub unfinished: Vec<String>,
}

/// The file a fetch leaves in its directory, holding the batch's name: what makes a later
/// fetch of the same batch free to write there again.
const FETCHED: &str = ".planwave-fetched";

/// Whether batch `name` may be written into `out`: it is new, empty, or an earlier fetch of
/// the same batch (as `--out` elsewhere: a user's own `batch.json` or `jobs/<id>/report.md`
/// is never written over). The problem, in words, when not.
pub fn check_fetch_dir(out: &Path, name: &str) -> Result<(), String> {
    let meta = match std::fs::symlink_metadata(out) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("cannot use it as the batch directory: {e}")),
    };
    if !meta.is_dir() {
        return Err("is not a directory; --out names the directory to write (new or empty)".into());
    }
    let mut entries =
        std::fs::read_dir(out).map_err(|e| format!("cannot read the batch directory: {e}"))?;
    if entries.next().is_none() {
        return Ok(());
    }
    match std::fs::read_to_string(out.join(FETCHED)) {
        Ok(earlier) if earlier.trim() == name => Ok(()),
        Ok(earlier) => Err(format!(
            "holds a fetch of batch {:?}, not {name:?}; choose a new or empty directory",
            earlier.trim()
        )),
        Err(_) => Err(
            "is not empty and is not an earlier fetch of this batch; choose a new or empty directory"
                .into(),
        ),
    }
}

/// Writes batch `name` into `out` (made if missing), when [`check_fetch_dir`] allows it.
pub async fn fetch(q: &Queue, name: &str, out: &Path) -> crate::Result<Fetched> {
    check_fetch_dir(out, name).map_err(|p| QueueError::new(format!("{}: {p}", out.display())))?;
    let status = crate::status(q, name).await?;
    let root = RunDir::create(out)
        .map_err(|e| QueueError::of("preparing the batch directory", e))?
        .with_durable(true);
    root.write(FETCHED, format!("{name}\n").as_bytes())
        .map_err(|e| QueueError::of("marking the batch directory", e))?;
    // A batch directory has no sections/ of its own (as a local batch).
    let _ = std::fs::remove_dir(out.join("sections"));
    let mut jobs = Vec::new();
    let mut unfinished = Vec::new();
    for j in &status.jobs {
        let Some(summary) = j.summary.clone().filter(|_| j.state.is_finished()) else {
            unfinished.push(j.id.clone());
            continue;
        };
        let dir = root
            .child(&format!("jobs/{}", j.dir))
            .map_err(|e| QueueError::of(&format!("job {}", j.id), e))?;
        let key = job_key(&j.id);
        if j.files.is_empty() {
            // Failed before it ran (gave up after its deliveries): nothing stored.
            jobs.push(summary);
            continue;
        }
        let mut obj = q
            .runs
            .get(object_name(name, &key, RUN_ARCHIVE).as_str())
            .await
            .map_err(|e| QueueError::of(&format!("job {}: fetching its run", j.id), e))?;
        let mut bytes = Vec::new();
        obj.read_to_end(&mut bytes)
            .await
            .map_err(|e| QueueError::of(&format!("job {}: fetching its run", j.id), e))?;
        let archive: std::collections::BTreeMap<String, String> = serde_json::from_slice(&bytes)
            .map_err(|e| QueueError::of(&format!("job {}: its stored run", j.id), e))?;
        for (rel, content) in &archive {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(content)
                .map_err(|e| QueueError::of(&format!("job {}: {rel}", j.id), e))?;
            // `RunDir::path` refuses paths that leave the directory (`..`, absolute).
            let target = dir
                .path(rel)
                .map_err(|e| QueueError::of(&format!("job {}: {rel}", j.id), e))?;
            if let Some(parent) = target.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| QueueError::of(&format!("job {}: {rel}", j.id), e))?;
            }
            dir.write(rel, &bytes)
                .map_err(|e| QueueError::of(&format!("job {}: writing {rel}", j.id), e))?;
        }
        let mut summary = summary;
        summary.run_dir = format!("jobs/{}", j.dir);
        jobs.push(summary);
    }
    let elapsed = jobs.iter().map(|j| j.wall_ms).fold(0.0, f64::max);
    let summary = BatchSummary::new(jobs, status.bad_lines.clone(), elapsed);
    root.write_json("batch.json", &summary)
        .map_err(|e| QueueError::of("writing batch.json", e))?;
    Ok(Fetched {
        summary,
        unfinished,
    })
}
