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

/// Writes batch `name` into `out` (made if missing).
pub async fn fetch(q: &Queue, name: &str, out: &Path) -> crate::Result<Fetched> {
    let status = crate::status(q, name).await?;
    let root = RunDir::create(out)
        .map_err(|e| QueueError::of("preparing the batch directory", e))?
        .with_durable(true);
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
