//! A batch's state, read from the KV bucket.

use futures::StreamExt;
use serde::Serialize;

use crate::names::{batch_record_key, job_key, job_record_key};
use crate::record::{BatchRecord, JobRecord, QueueState, get_json};
use crate::{Queue, QueueError};

#[derive(Debug, Default, Serialize)]
pub struct Counts {
    pub queued: usize,
    pub running: usize,
    pub completed: usize,
    pub partial: usize,
    pub failed: usize,
    pub cancelled: usize,
    /// Goal jobs too vague to plan: their questions are in their summaries.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub needs_input: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

#[derive(Debug, Serialize)]
pub struct BatchStatus {
    pub batch: String,
    pub cancelled: bool,
    pub counts: Counts,
    pub tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    pub bad_lines: Vec<planwave_batch::BadLine>,
    pub jobs: Vec<JobRecord>,
}

impl BatchStatus {
    /// Every job has a verdict.
    pub fn is_done(&self) -> bool {
        self.jobs.iter().all(|j| j.state.is_finished())
    }
}

/// The batch's record and every job's, in submission order.
pub async fn status(q: &Queue, name: &str) -> crate::Result<BatchStatus> {
    crate::check_batch_name(name)?;
    let batch: BatchRecord = get_json(q, &batch_record_key(name))
        .await?
        .ok_or_else(|| QueueError::new(format!("no batch named {name} on this server")))?;
    let keys: Vec<String> = batch
        .jobs
        .iter()
        .map(|id| job_record_key(name, &job_key(id)))
        .collect();
    let got: Vec<crate::Result<Option<JobRecord>>> = futures::stream::iter(keys)
        .map(|k| async move { get_json::<JobRecord>(q, &k).await })
        .buffered(32)
        .collect()
        .await;
    let mut jobs = Vec::new();
    for r in got {
        if let Some(j) = r? {
            jobs.push(j);
        }
    }
    let mut counts = Counts::default();
    let (mut tokens, mut cost) = (0, None::<f64>);
    for j in &jobs {
        *match j.state {
            QueueState::Queued => &mut counts.queued,
            QueueState::Running => &mut counts.running,
            QueueState::Completed => &mut counts.completed,
            QueueState::Partial => &mut counts.partial,
            QueueState::Failed => &mut counts.failed,
            QueueState::Cancelled => &mut counts.cancelled,
            QueueState::NeedsInput => &mut counts.needs_input,
        } += 1;
        if let Some(s) = &j.summary {
            tokens += s.tokens;
            if let Some(c) = s.cost {
                cost = Some(cost.unwrap_or(0.0) + c);
            }
        }
    }
    Ok(BatchStatus {
        batch: name.to_owned(),
        cancelled: batch.cancelled,
        counts,
        tokens,
        cost,
        bad_lines: batch.bad_lines,
        jobs,
    })
}
