//! `--batch-api` in a job: the Batch API client built from the settings ([`ProviderBatches`],
//! one per command, server or worker), and each job's share of it ([`JobBatches`]): the job's
//! record of the provider batches holding its calls (`provider-batches.jsonl` in its run
//! directory, read back on resume so pending batches are polled again rather than submitted
//! again), those batches' states as `provider_batch` events of the job's executions (with the
//! job's count of calls in each), and which of its tasks are running, so the client can
//! submit a batch as soon as every job is waiting on it.
//!
//! The record is a side file rather than lines of `events.jsonl`: a job may run several
//! executions (a research loop's rounds and passes, each with its own journal opened and
//! closed by the runner), and a provider batch can hold calls of all of them. It is the
//! job's own, so a job resumes (or moves to another queue worker, which mirrors the file)
//! alone, whatever other jobs shared its batches.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use planwave_config::{LlmChoice, Settings};
use planwave_llm::LlmProvider;
use planwave_llm::batch::{BatchObserver, BatchProvider, BatchScope, BatchStatus, LedgerWrite};
use planwave_plan::TaskId;
use planwave_record::{Event, EventKind, EventSink};
use planwave_storage::{JournalMirror, RunDir};

use crate::Notes;
use crate::error::Context;

/// The side file's name in the job's run directory.
pub const LEDGER_FILE: &str = "provider-batches.jsonl";

/// The Batch API client of a command (or a server, or a worker): one for all its jobs.
#[derive(Clone)]
pub struct ProviderBatches {
    pub provider: Arc<BatchProvider>,
}

impl ProviderBatches {
    /// The Batch API client when the settings ask for it (`--batch-api` with a server).
    pub fn from_settings(settings: &Settings, notes: &dyn Notes) -> crate::Result<Option<Self>> {
        let (Some(batch), LlmChoice::OpenAi { config, .. }) = (&settings.batch_api, &settings.llm)
        else {
            return Ok(None);
        };
        let provider = Arc::new(BatchProvider::new((**config).clone(), *batch)?);
        notes.note(&format!(
            "planwave: calls go through the Batch API of {} (submitted once every job waits, at most {:?} after the first call; polled from every {:?})",
            planwave_redact::redact_url(&config.base_url),
            batch.linger,
            batch.poll
        ));
        Ok(Some(ProviderBatches { provider }))
    }

    pub fn as_provider(&self) -> Arc<dyn LlmProvider> {
        self.provider.clone()
    }

    /// A job's share, recorded in `dir`'s side file (and wherever `dir` is mirrored), with
    /// what an earlier process of the job recorded there: its calls already submitted wait
    /// for their batch.
    pub async fn join(&self, dir: &RunDir) -> crate::Result<JobBatches> {
        let (file, text) = planwave_storage::open_append(dir, LEDGER_FILE)
            .with_context(|| format!("opening {LEDGER_FILE}"))?;
        let out = SideFile {
            file,
            mirror: dir.journal_mirror(LEDGER_FILE),
        };
        let events = Arc::new(BatchEvents::default());
        let scope = self
            .provider
            .scope(Some((Box::new(out), &text)), Some(events.clone()))
            .await
            .with_context(|| format!("{LEDGER_FILE}: its batches at the provider"))?;
        Ok(JobBatches {
            share: JobShare { scope, events },
        })
    }
}

/// The job's side file: appended and synced, then stored in the mirror (a queue worker's
/// JetStream) before a line counts.
struct SideFile {
    file: std::fs::File,
    mirror: Option<Arc<dyn JournalMirror>>,
}

impl LedgerWrite for SideFile {
    fn append(&mut self, line: &[u8]) -> std::io::Result<()> {
        self.file.append(line)?;
        match &self.mirror {
            Some(m) => m.commit(line).map_err(std::io::Error::other),
            None => Ok(()),
        }
    }
}

/// A job's share of the client: closed (nothing waits for the job any more) when dropped.
pub struct JobBatches {
    share: JobShare,
}

impl JobBatches {
    pub fn share(&self) -> JobShare {
        self.share.clone()
    }
}

impl Drop for JobBatches {
    fn drop(&mut self) {
        self.share.scope.close();
    }
}

/// What a job's resources carry of its share: its calls go through its scope, and its
/// executions hear of its batches.
#[derive(Clone)]
pub struct JobShare {
    scope: Arc<BatchScope>,
    events: Arc<BatchEvents>,
}

impl JobShare {
    /// `provider` with every call made as this job's.
    pub fn wrap(&self, provider: Arc<dyn LlmProvider>) -> Arc<dyn LlmProvider> {
        self.scope.wrap(provider)
    }

    /// `sink` hears of the job's batches' states until the guard is dropped; the guard's
    /// [`Listening::activity`] is told the execution's events (which tasks run).
    pub fn listen(&self, sink: Arc<dyn EventSink>) -> Listening {
        let id = self.events.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut v) = self.events.sinks.lock() {
            v.push((id, sink));
        }
        Listening {
            events: self.events.clone(),
            id,
            activity: Arc::new(Activity {
                scope: self.scope.clone(),
                running: Mutex::new(HashSet::new()),
            }),
        }
    }
}

/// The sinks of the job's executions running now, each told of every batch holding the
/// job's calls.
#[derive(Default)]
struct BatchEvents {
    sinks: Mutex<Vec<(u64, Arc<dyn EventSink>)>>,
    next: AtomicU64,
}

impl BatchObserver for BatchEvents {
    fn batch_state(&self, s: &BatchStatus) {
        let event = Event::now(EventKind::ProviderBatch {
            batch_id: s.batch_id.clone(),
            state: s.state.clone(),
            total: s.total,
            completed: s.completed,
            failed: s.failed,
            calls: s.calls,
        });
        let sinks: Vec<Arc<dyn EventSink>> = self
            .sinks
            .lock()
            .map(|v| v.iter().map(|(_, s)| s.clone()).collect())
            .unwrap_or_default();
        for sink in sinks {
            sink.emit(&event);
        }
    }
}

/// Which of an execution's tasks are running, told to the job's scope.
struct Activity {
    scope: Arc<BatchScope>,
    running: Mutex<HashSet<TaskId>>,
}

impl EventSink for Activity {
    fn emit(&self, event: &Event) {
        let Ok(mut running) = self.running.lock() else {
            return;
        };
        match &event.kind {
            EventKind::TaskStarted { task, .. } if running.insert(task.clone()) => {
                self.scope.add_running(1);
            }
            EventKind::TaskCompleted { task, .. } | EventKind::TaskFailed { task, .. }
                if running.remove(task) =>
            {
                self.scope.add_running(-1);
            }
            _ => {}
        }
    }
}

impl Activity {
    /// The execution ended: its tasks run no more.
    fn end(&self) {
        if let Ok(mut running) = self.running.lock() {
            let n = running.len() as i64;
            running.clear();
            if n > 0 {
                self.scope.add_running(-n);
            }
        }
    }
}

/// An execution's sink, told of batch states until dropped.
pub struct Listening {
    events: Arc<BatchEvents>,
    id: u64,
    activity: Arc<Activity>,
}

impl Listening {
    /// The sink to give the execution, so the client knows which of its tasks run.
    pub fn activity(&self) -> Arc<dyn EventSink> {
        self.activity.clone()
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.activity.end();
        if let Ok(mut v) = self.events.sinks.lock() {
            v.retain(|(id, _)| *id != self.id);
        }
    }
}
