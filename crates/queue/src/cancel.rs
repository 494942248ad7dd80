//! Cancelling a batch: marked cancelled (workers stop its running jobs like Ctrl-C), its
//! queued messages purged, its queued jobs recorded cancelled.

use crate::names::{batch_record_key, job_key, job_record_key, job_subject};
use crate::record::{BatchRecord, JobRecord, QueueState, get_json, put_json, update_json};
use crate::{Queue, QueueError};

/// Returns how many queued jobs were dropped.
pub async fn cancel(q: &Queue, name: &str) -> crate::Result<usize> {
    crate::check_batch_name(name)?;
    let key = batch_record_key(name);
    let mut batch: BatchRecord = get_json(q, &key)
        .await?
        .ok_or_else(|| QueueError::new(format!("no batch named {name} on this server")))?;
    batch.cancelled = true;
    put_json(q, &key, &batch).await?;
    q.jobs
        .purge()
        .filter(job_subject(name))
        .await
        .map_err(|e| QueueError::of("dropping the queued jobs", e))?;
    let mut dropped = 0;
    for id in &batch.jobs {
        let rk = job_record_key(name, &job_key(id));
        // Only a job still queued when written: one a worker took or finished in between
        // keeps its state (a finished job's verdict is final).
        let cancelled = update_json(q, &rk, |r: &mut JobRecord| {
            if r.state != QueueState::Queued {
                return false;
            }
            r.state = QueueState::Cancelled;
            r.reason = Some("batch cancelled".into());
            true
        })
        .await?;
        dropped += usize::from(cancelled);
    }
    Ok(dropped)
}
