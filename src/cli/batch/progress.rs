//! Progress of a whole batch: one bar over every job's tasks on a terminal, plain lines
//! otherwise (`job <id>: task <t> completed`, `job <id> finished: ...`).

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use planwave_batch::JobSummary;
use planwave_record::{Event, EventKind, EventSink};
use planwave_runner::ops::BatchWatch;

use crate::cli::progress::Mode;

pub struct BatchProgress {
    jobs: usize,
    bar: Option<ProgressBar>,
    lines: bool,
    start: Instant,
    finished_jobs: AtomicUsize,
    running_jobs: AtomicUsize,
    /// The provider batch last heard of (`--batch-api`): every job with calls in it hears of
    /// it, so it is shown once per change.
    provider_batch: std::sync::Mutex<Option<String>>,
}

impl BatchProgress {
    pub fn new(jobs: usize, mode: Mode) -> BatchProgress {
        let bar = matches!(mode, Mode::Bars).then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr_with_hz(10));
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} [{elapsed_precise}] {bar:32.cyan/blue} {pos}/{len} tasks {msg}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            bar.enable_steady_tick(Duration::from_millis(120));
            bar
        });
        BatchProgress {
            jobs,
            bar,
            lines: matches!(mode, Mode::Lines),
            start: Instant::now(),
            finished_jobs: AtomicUsize::new(0),
            running_jobs: AtomicUsize::new(0),
            provider_batch: std::sync::Mutex::new(None),
        }
    }

    fn line(&self, text: String) {
        let t = self.start.elapsed().as_secs_f64();
        let _ = writeln!(std::io::stderr().lock(), "[{t:>8.3}s] {text}");
    }

    fn update(&self) {
        if let Some(b) = &self.bar {
            let batch = self
                .provider_batch
                .lock()
                .ok()
                .and_then(|p| p.clone())
                .map(|p| format!(" · {p}"))
                .unwrap_or_default();
            b.set_message(format!(
                "· jobs {}/{} done, {} running{batch}",
                self.finished_jobs.load(Ordering::Relaxed),
                self.jobs,
                self.running_jobs.load(Ordering::Relaxed)
            ));
        }
    }

    /// A provider batch's state, shown when it changed.
    fn provider_batch(&self, text: String) {
        let changed = match self.provider_batch.lock() {
            Ok(mut last) if last.as_deref() != Some(text.as_str()) => {
                *last = Some(text.clone());
                true
            }
            _ => false,
        };
        if changed && self.lines {
            self.line(text);
        }
        self.update();
    }

    pub fn job_started(&self, id: &str) {
        self.running_jobs.fetch_add(1, Ordering::Relaxed);
        if self.lines {
            self.line(format!("job {id} started"));
        }
        self.update();
    }

    pub fn skipped(&self, id: &str) {
        self.finished_jobs.fetch_add(1, Ordering::Relaxed);
        if self.lines {
            self.line(format!("job {id} already finished; kept"));
        }
    }

    /// A job's plan is known: `total` tasks, `done` of them already completed (resume).
    pub fn add_tasks(&self, total: usize, done: usize) {
        if let Some(b) = &self.bar {
            b.inc_length(total as u64);
            b.inc(done as u64);
        }
    }

    pub fn job_finished(&self, s: &JobSummary) {
        // Saturating: a job cancelled before it started was never counted as running.
        let _ = self
            .running_jobs
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1));
        self.finished_jobs.fetch_add(1, Ordering::Relaxed);
        if self.lines {
            let why = s
                .error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default();
            self.line(format!(
                "job {} finished: {} ({}/{} tasks){why}",
                s.id,
                s.state.as_str(),
                s.completed,
                s.tasks
            ));
        }
        self.update();
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }

    /// The event sink of one job's run.
    pub fn for_job(self: &Arc<Self>, id: &str) -> Arc<dyn EventSink> {
        Arc::new(JobSink {
            batch: self.clone(),
            job: id.to_owned(),
        })
    }
}

struct JobSink {
    batch: Arc<BatchProgress>,
    job: String,
}

impl EventSink for JobSink {
    fn emit(&self, event: &Event) {
        let b = &self.batch;
        if let EventKind::ProviderBatch {
            batch_id,
            state,
            total,
            completed,
            failed,
            ..
        } = &event.kind
        {
            let text =
                crate::cli::progress::batch_line(batch_id, state, *total, *completed, *failed);
            return b.provider_batch(text);
        }
        let (task, what) = match &event.kind {
            EventKind::TaskCompleted { task, .. } => (task, "completed".to_owned()),
            EventKind::TaskFailed { task, error, .. } => (task, format!("FAILED: {error}")),
            EventKind::TaskBlocked {
                task,
                reason: Some(why),
                ..
            } => (task, format!("blocked: {why}")),
            EventKind::TaskBlocked {
                task, blocked_by, ..
            } => (task, format!("blocked: prerequisite {blocked_by} failed")),
            _ => return,
        };
        if let Some(bar) = &b.bar {
            bar.inc(1);
        }
        if b.lines {
            b.line(format!("job {}: task {task} {what}", self.job));
        }
    }
}

/// The batch's progress as the runner reports to it.
pub struct BatchView(pub Arc<BatchProgress>);

impl BatchWatch for BatchView {
    fn job_started(&self, id: &str) {
        self.0.job_started(id);
    }
    fn skipped(&self, id: &str) {
        self.0.skipped(id);
    }
    fn add_tasks(&self, total: usize, done: usize) {
        self.0.add_tasks(total, done);
    }
    fn job_finished(&self, summary: &JobSummary) {
        self.0.job_finished(summary);
    }
    fn for_job(&self, id: &str) -> Arc<dyn EventSink> {
        self.0.for_job(id)
    }
}
