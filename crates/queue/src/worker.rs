//! A worker: pulls jobs from the shared consumer and runs up to `jobs` of them at once with
//! the runner's batch job (one model client, one subagent cap for all of them).
//!
//! A job is acknowledged only once its verdict and run directory are stored; while it runs,
//! in-progress acks keep it ours. Stopping (SIGTERM, Ctrl-C) cancels the running jobs, whose
//! journals are flushed to JetStream, and hands them back at once (nak); it takes at most
//! [`STOP_GRACE`], even with the server gone. A job whose
//! deliveries ended `max_deliver` times in a crash of its worker or a failure to start ends
//! `failed` (counted in its record; hand-backs do not count).

mod cancels;
mod run;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use async_nats::jetstream::consumer::{AckPolicy, PullConsumer, pull};
use async_nats::jetstream::{AckKind, Message};
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use planwave_config::Settings;
use planwave_runner::ops::BatchWatch;
use planwave_runner::ops::{Notes, Resources};
use tokio_util::sync::CancellationToken;

use crate::fleet_slots::FleetCaps;
use crate::message::BadMessage;
use crate::names::{CONSUMER, job_key, job_record_key};
use crate::record::{JobRecord, QueueState, get_json, put_json};
use crate::submit::JobMessage;
use crate::{Queue, QueueError, WorkerCache};
use cancels::Cancels;
pub(crate) use run::RUN_ARCHIVE;

/// The ack-wait of a consumer the first worker creates without `--ack-wait`.
pub const DEFAULT_ACK_WAIT: Duration = Duration::from_secs(30);

/// How long a stopping worker waits for its jobs to be handed back (their journals flushed
/// to JetStream, their records written). A server that does not answer cannot make a stop
/// last longer: the jobs it could not hear of come back after the ack-wait.
pub const STOP_GRACE: Duration = Duration::from_secs(10);

pub struct Worker<'a> {
    pub queue: Queue,
    /// Shown in `batch status` as the job's worker.
    pub name: String,
    /// Jobs run at once.
    pub jobs: usize,
    /// Most subagents in flight across this worker's jobs.
    pub max_subagents: Option<usize>,
    /// Without an in-progress ack for this long, a job goes to another worker. A setting of
    /// the consumer all workers share: `None` keeps what it has (or [`DEFAULT_ACK_WAIT`] for
    /// a new one); `Some` changes it for every worker.
    pub ack_wait: Option<Duration>,
    /// Deliveries before a job is given up as failed.
    pub max_deliver: u32,
    /// Local cache of run directories (JetStream holds the durable copy): nothing this
    /// worker writes or removes is outside it.
    pub cache: &'a WorkerCache,
    pub settings: &'a Settings,
    pub resources: Resources,
    /// Stops the worker (SIGTERM, Ctrl-C): running jobs are handed back.
    pub stop: CancellationToken,
    pub watch: &'a dyn BatchWatch,
    pub notes: &'a dyn Notes,
    /// Told how long each journal commit to JetStream took (a plan job's; metrics).
    pub on_commit: Option<crate::OnCommit>,
    /// Told when a job starts running here and how it left (metrics).
    pub on_job: Option<crate::OnJob>,
}

/// What a worker did before it stopped.
#[derive(Debug, Default)]
pub struct WorkerEnd {
    /// Jobs it ran to a verdict.
    pub finished: usize,
    /// Jobs it handed back (stopping, or a job that could not start).
    pub handed_back: usize,
    /// Jobs still stopping after [`STOP_GRACE`] (the server did not answer), left behind.
    pub left: usize,
}

enum Handled {
    Finished,
    HandedBack,
    Nothing,
}

impl Worker<'_> {
    /// Pulls and runs jobs until stopped.
    pub async fn run(&self) -> crate::Result<WorkerEnd> {
        let consumer = self.consumer().await?;
        // What every worker's heartbeats follow: the consumer's ack-wait, looked up again now
        // and then (another worker may have changed it).
        let ack_wait = Arc::new(AtomicU64::new(
            consumer.cached_info().config.ack_wait.as_millis() as u64,
        ));
        let follow = {
            let (mut consumer, ack_wait) = (consumer.clone(), ack_wait.clone());
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    if let Ok(info) = consumer.info().await {
                        let ms = info.config.ack_wait.as_millis() as u64;
                        ack_wait.store(ms, Ordering::Relaxed);
                    }
                }
            })
        };
        let end = self.pull(&consumer, &ack_wait).await;
        follow.abort();
        end
    }

    /// The shared consumer: kept as it is unless this worker was told an ack-wait.
    async fn consumer(&self) -> crate::Result<PullConsumer> {
        let existing: Option<PullConsumer> = self.queue.jobs.get_consumer(CONSUMER).await.ok();
        let had = existing.as_ref().map(|c| c.cached_info().config.ack_wait);
        if let Some(c) = existing
            && self.ack_wait.is_none_or(|a| Some(a) == had)
        {
            return Ok(c);
        }
        let ack_wait = self.ack_wait.unwrap_or(DEFAULT_ACK_WAIT);
        if let Some(had) = had {
            self.notes.note(&format!(
                "worker: ack-wait of the consumer all workers share changed from {}s to {}s",
                had.as_secs_f64(),
                ack_wait.as_secs_f64()
            ));
        }
        self.queue
            .jobs
            .create_consumer(pull::Config {
                durable_name: Some(CONSUMER.into()),
                filter_subject: "planwave.jobs.>".into(),
                ack_policy: AckPolicy::Explicit,
                ack_wait,
                // Poison is decided from the job's record (crashes and start failures only);
                // this bound only stops a job handed back without end. One more than the
                // bound: the extra delivery is where the job is given up.
                max_deliver: i64::from(outer_bound(self.max_deliver)) + 1,
                ..Default::default()
            })
            .await
            .map_err(|e| QueueError::of("opening the workers' consumer", e))
    }

    async fn pull(
        &self,
        consumer: &PullConsumer,
        ack_wait: &Arc<AtomicU64>,
    ) -> crate::Result<WorkerEnd> {
        let cancels = Cancels::watch(&self.queue).await?;
        let caps = FleetCaps::default();
        let slots = self
            .max_subagents
            .map(|n| Arc::new(tokio::sync::Semaphore::new(n)));
        let mut end = WorkerEnd::default();
        let mut running = FuturesUnordered::new();
        let mut fetch = None;
        loop {
            if fetch.is_none() && running.len() < self.jobs.max(1) {
                fetch = Some(Box::pin(next_message(consumer)));
            }
            tokio::select! {
                _ = self.stop.cancelled() => break,
                Some(h) = running.next(), if !running.is_empty() => tally(&mut end, h),
                got = async { fetch.as_mut().expect("guarded").await }, if fetch.is_some() => {
                    fetch = None;
                    if let Some(m) = got {
                        running.push(self.handle(m, &cancels, &caps, slots.clone(), ack_wait));
                    }
                }
            }
        }
        // Stopping takes at most STOP_GRACE, whether the server answers or not.
        let give_up = tokio::time::Instant::now() + STOP_GRACE;
        // A pull under way may still bring a job: it goes straight back.
        if let Some(f) = fetch
            && let Ok(Some(m)) = tokio::time::timeout_at(give_up, f).await
        {
            let _ = tokio::time::timeout_at(give_up, m.ack_with(AckKind::Nak(None))).await;
        }
        let drained = tokio::time::timeout_at(give_up, async {
            while let Some(h) = running.next().await {
                tally(&mut end, h);
            }
        })
        .await;
        if drained.is_err() {
            // Their hand-back never reached the server: they come back after the ack-wait,
            // and resume from what their journals hold there.
            end.left = running.len();
            self.notes.note(&format!(
                "worker: {} job(s) not handed back within {}s (the queue does not answer); they return to the queue after its ack-wait",
                end.left,
                STOP_GRACE.as_secs()
            ));
        }
        drop(running);
        cancels.stop();
        // With the server gone, a flush would wait for it forever.
        let flush_by = give_up.max(tokio::time::Instant::now() + Duration::from_secs(1));
        let _ = tokio::time::timeout_at(flush_by, self.queue.flush()).await;
        Ok(end)
    }

    async fn handle(
        &self,
        msg: Message,
        cancels: &Cancels,
        caps: &FleetCaps,
        slots: Option<Arc<tokio::sync::Semaphore>>,
        ack_wait: &AtomicU64,
    ) -> Handled {
        // In-progress acks from the first moment: even reading the job's record may wait for
        // a cluster's election.
        let handled = tokio::select! {
            r = self.handle_inner(&msg, cancels, caps, slots) => r,
            _ = heartbeat(&msg, ack_wait) => unreachable!("the heartbeat never ends"),
        };
        match handled {
            Ok(h) => h,
            Err(e) => {
                // The queue itself failed (server away too long): let the job come back, later,
                // so an outage does not use up its deliveries.
                self.notes.note(&format!("worker: {e}"));
                let _ = msg
                    .ack_with(AckKind::Nak(Some(Duration::from_secs(5))))
                    .await;
                Handled::HandedBack
            }
        }
    }

    async fn handle_inner(
        &self,
        msg: &Message,
        cancels: &Cancels,
        caps: &FleetCaps,
        slots: Option<Arc<tokio::sync::Semaphore>>,
    ) -> crate::Result<Handled> {
        let delivered = msg.info().map(|i| i.delivered).unwrap_or(1).max(1) as u32;
        let job = match crate::message::decode(&msg.subject, &msg.payload) {
            Ok(job) => job,
            Err(bad) => {
                self.refuse(msg, bad).await;
                return Ok(Handled::Nothing);
            }
        };
        let rk = job_record_key(&job.batch, &job_key(&job.id));
        let mut record: JobRecord = get_json(&self.queue, &rk)
            .await?
            .unwrap_or_else(|| JobRecord::queued(&job.id, job.line, &job.kind, &job.dir));
        let seq = msg.info().map(|i| i.stream_sequence).ok();
        if record.seq.is_some() && seq.is_some() && record.seq != seq {
            // A second message for a job another message already brought.
            ack(msg).await;
            return Ok(Handled::Nothing);
        }
        record.seq = seq;
        if record.state.is_finished() {
            // A redelivery of a job whose verdict is stored (a worker died between storing
            // it and its ack): nothing to do.
            ack(msg).await;
            return Ok(Handled::Nothing);
        }
        if cancels.is_cancelled(&job.batch).await {
            record.state = QueueState::Cancelled;
            put_json(&self.queue, &rk, &record).await?;
            ack(msg).await;
            return Ok(Handled::Nothing);
        }
        if record.state == QueueState::Running {
            // The last delivery never reached a verdict nor a hand-back: its worker died.
            record.attempts += 1;
            record.reason =
                Some("its worker stopped without a verdict (crashed or was killed)".into());
        }
        if record.attempts >= self.max_deliver || delivered > outer_bound(self.max_deliver) {
            record.state = QueueState::Failed;
            let why = record
                .reason
                .take()
                .unwrap_or_else(|| "handed back too often".into());
            let count = if record.attempts >= self.max_deliver {
                record.attempts
            } else {
                delivered - 1
            };
            record.reason = Some(format!("gave up after {count} deliveries; last: {why}"));
            record.summary = Some(run::failed_summary(&job, record.reason.clone()));
            put_json(&self.queue, &rk, &record).await?;
            let _ = msg.ack_with(AckKind::Term).await;
            self.notes.note(&format!(
                "worker: job {} of batch {} failed: {}",
                job.id,
                job.batch,
                record.reason.as_deref().unwrap_or_default()
            ));
            return Ok(Handled::Nothing);
        }
        record.state = QueueState::Running;
        record.worker = Some(self.name.clone());
        note_worker(&mut record.workers, &self.name);
        record.deliveries = delivered;
        put_json(&self.queue, &rk, &record).await?;
        self.notes.note(&format!(
            "worker: running job {} of batch {} (delivery {delivered})",
            job.id, job.batch
        ));
        let token = self.stop.child_token();
        let _registered = cancels.register(&job.batch, token.clone());
        // Read again now that the watch would cancel it: a batch queued again after a cancel
        // (`serve --nats` resume) is not cancelled, whatever the watch saw earlier.
        if cancels.is_cancelled(&job.batch).await {
            token.cancel();
        }
        self.tell(crate::JobPhase::Started);
        // The batch's cap across the fleet, with this worker's own.
        let cap = job.max_subagents.map(|n| n as usize);
        let outcome = match caps.slots(&self.queue, &job.batch, cap, slots).await {
            Ok(slots) => self.run_job(&job, token.clone(), slots).await,
            Err(e) => Err(e),
        };
        self.settle(msg, &job, &rk, record, outcome, cancels).await
    }

    /// A message that is not a valid job: terminated (never delivered again, never run),
    /// said on this worker's stderr and in the log, and, when it names a job of a batch whose
    /// record is waiting for it, recorded there as the job's failure.
    async fn refuse(&self, msg: &Message, bad: BadMessage) {
        let _ = msg.ack_with(AckKind::Term).await;
        let subject = msg.subject.as_str();
        tracing::warn!(subject, problems = %bad, "refused a job message");
        self.notes.note(&format!(
            "worker: refused a message on {subject:?} (terminated, not run): {bad}"
        ));
        let Some((batch, id)) = &bad.job else {
            return;
        };
        let seq = msg.info().map(|i| i.stream_sequence).ok();
        if let Err(e) = self.record_refusal(batch, id, seq, &bad).await {
            self.notes.note(&format!(
                "worker: could not record the refusal in job {id:?} of batch {batch}: {e}"
            ));
        }
    }

    async fn record_refusal(
        &self,
        batch: &str,
        id: &str,
        seq: Option<u64>,
        bad: &BadMessage,
    ) -> crate::Result<()> {
        let rk = job_record_key(batch, &job_key(id));
        let Some(mut record) = get_json::<JobRecord>(&self.queue, &rk).await? else {
            // No such job was submitted: nothing for `batch status` to show it in.
            return Ok(());
        };
        // A job that ended, or that another message already brought, is not this one's.
        if record.state.is_finished() || record.seq.is_some_and(|s| Some(s) != seq) {
            return Ok(());
        }
        let reason = format!("its message was refused: {bad}");
        record.state = QueueState::Failed;
        record.worker = Some(self.name.clone());
        record.summary = Some(planwave_batch::JobSummary::failed(
            &record.id,
            record.line,
            &record.kind,
            &record.dir,
            Some(reason.clone()),
        ));
        record.reason = Some(reason);
        record.seq = seq;
        put_json(&self.queue, &rk, &record).await
    }

    /// Stores the verdict and acks, or hands the job back.
    async fn settle(
        &self,
        msg: &Message,
        job: &JobMessage,
        rk: &str,
        mut record: JobRecord,
        outcome: crate::Result<run::JobDone>,
        cancels: &Cancels,
    ) -> crate::Result<Handled> {
        match outcome {
            Err(e) => {
                record.state = QueueState::Queued;
                record.attempts += 1;
                record.reason = Some(format!("could not start on {}: {e}", self.name));
                self.tell(crate::JobPhase::Ended("not_started"));
                put_json(&self.queue, rk, &record).await?;
                self.notes.note(&format!(
                    "worker: job {} {}",
                    job.id,
                    record.reason.as_deref().unwrap_or_default()
                ));
                let _ = msg.ack_with(AckKind::Nak(None)).await;
                Ok(Handled::HandedBack)
            }
            Ok(done)
                if done.summary.state == planwave_batch::JobState::Cancelled
                    && self.stop.is_cancelled() =>
            {
                record.state = QueueState::Queued;
                record.reason = Some(format!("handed back by {} (stopping)", self.name));
                self.tell(crate::JobPhase::Ended("handed_back"));
                put_json(&self.queue, rk, &record).await?;
                let _ = msg.ack_with(AckKind::Nak(None)).await;
                self.notes
                    .note(&format!("worker: job {} handed back", job.id));
                Ok(Handled::HandedBack)
            }
            Ok(mut done) => {
                let state = verdict(done.summary.state, cancels.seen_cancelled(&job.batch));
                done.summary.state = state;
                record.state = QueueState::of(state);
                record.reason = done.summary.error.clone();
                record.files = done.files;
                self.watch.job_finished(&done.summary);
                self.tell(crate::JobPhase::Ended(record.state.as_str()));
                record.summary = Some(done.summary);
                put_json(&self.queue, rk, &record).await?;
                ack(msg).await;
                Ok(Handled::Finished)
            }
        }
    }
}

impl Worker<'_> {
    fn tell(&self, phase: crate::JobPhase<'_>) {
        if let Some(on_job) = &self.on_job {
            on_job(phase);
        }
    }
}

/// The verdict a job's record keeps, from its run's and whether its batch was seen cancelled.
/// A run that completed (or ended partial) did so whatever came after: its verdict is final,
/// so a cancel racing its end does not turn it into `cancelled` (status once said cancelled
/// while `fetch`, reading the run's summary, said completed). A failure under a cancel is the
/// cancel's doing. The record's state and its summary's always agree.
fn verdict(run: planwave_batch::JobState, cancelled: bool) -> planwave_batch::JobState {
    use planwave_batch::JobState;
    match run {
        JobState::Completed | JobState::Partial | JobState::Cancelled | JobState::NeedsInput => run,
        JobState::Failed if cancelled => JobState::Cancelled,
        JobState::Failed => run,
    }
}

/// Adds `name` to a job's workers unless it is the last one already (kept to the last 16).
fn note_worker(workers: &mut Vec<String>, name: &str) {
    if workers.last().map(String::as_str) != Some(name) {
        workers.push(name.to_owned());
    }
    let extra = workers.len().saturating_sub(16);
    workers.drain(..extra);
}

/// Deliveries of one job of any kind (hand-backs included) before it is given up: high, so
/// rolling restarts of workers never fail a job, yet finite.
fn outer_bound(max_deliver: u32) -> u32 {
    max_deliver.saturating_mul(10).max(50)
}

fn tally(end: &mut WorkerEnd, h: Handled) {
    match h {
        Handled::Finished => end.finished += 1,
        Handled::HandedBack => end.handed_back += 1,
        Handled::Nothing => {}
    }
}

/// The next job, or `None` after about a second without one (or on an error: the client
/// reconnects on its own, the loop asks again after a pause).
async fn next_message(consumer: &PullConsumer) -> Option<Message> {
    let pull = async {
        let mut batch = consumer
            .fetch()
            .max_messages(1)
            .expires(Duration::from_secs(1))
            .messages()
            .await
            .map_err(|e| e.to_string())?;
        match batch.next().await {
            Some(Ok(m)) => Ok(Some(m)),
            Some(Err(e)) => Err(e.to_string()),
            None => Ok(None),
        }
    };
    // A pull sent to a consumer whose leader just died is never answered: bounded here.
    match tokio::time::timeout(Duration::from_secs(5), pull).await {
        Ok(Ok(m)) => m,
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "pull failed");
            // Not a synchronisation: a pause before asking a server that is away again.
            tokio::time::sleep(Duration::from_millis(250)).await;
            None
        }
        Err(_) => None,
    }
}

/// In-progress acks three times per ack-wait (the consumer's, as last looked up), and at
/// least every 5 s, so a live worker keeps its job even right after the ack-wait was lowered.
async fn heartbeat(msg: &Message, ack_wait: &AtomicU64) {
    loop {
        let every = Duration::from_millis(ack_wait.load(Ordering::Relaxed) / 3)
            .clamp(Duration::from_millis(100), Duration::from_secs(5));
        tokio::time::sleep(every).await;
        let _ = msg.ack_with(AckKind::Progress).await;
    }
}

/// Acknowledged and confirmed by the server (a lost ack would hand the job out again; that
/// is harmless, the verdict is stored, but costs a delivery).
async fn ack(msg: &Message) {
    if msg.double_ack().await.is_err() {
        let _ = msg.ack().await;
    }
}

#[cfg(test)]
mod tests {
    use planwave_batch::JobState;

    use super::{note_worker, verdict};

    #[test]
    fn a_jobs_workers_are_kept_in_order_without_repeats_and_bounded() {
        let mut w = Vec::new();
        for name in ["a", "a", "b", "a"] {
            note_worker(&mut w, name);
        }
        assert_eq!(w, ["a", "b", "a"]);
        for i in 0..40 {
            note_worker(&mut w, &format!("w{i}"));
        }
        assert_eq!(w.len(), 16);
        assert_eq!(w.last().map(String::as_str), Some("w39"));
    }

    #[test]
    fn a_job_that_completed_stays_completed_when_a_cancel_races_its_end() {
        assert_eq!(verdict(JobState::Completed, true), JobState::Completed);
        assert_eq!(verdict(JobState::Partial, true), JobState::Partial);
        assert_eq!(verdict(JobState::Failed, true), JobState::Cancelled);
        assert_eq!(verdict(JobState::Cancelled, false), JobState::Cancelled);
        assert_eq!(verdict(JobState::Failed, false), JobState::Failed);
    }
}
