//! `--batch-api` in a job: the Batch API client built from the settings, its durable record
//! (`provider-batches.jsonl` in the run directory, read back on resume so pending batches
//! are polled again rather than submitted again), and its batches' states as
//! `provider_batch` events of the runs executing while they change.
//!
//! The record is a side file rather than lines of `events.jsonl`: one client serves every
//! run of a command (a research loop's rounds and passes, a batch's jobs, each with its own
//! journal opened and closed by the runner), and a provider batch holds calls of all of
//! them, so its record belongs to the command's directory, not to one journal.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use planwave_config::{LlmChoice, Settings};
use planwave_llm::LlmProvider;
use planwave_llm::batch::{BatchObserver, BatchProvider, BatchStatus, Ledger, Recorded};
use planwave_record::{Event, EventKind, EventSink};
use planwave_storage::RunDir;

use crate::Notes;
use crate::error::Context;

/// The side file's name in the run (or batch) directory.
pub const LEDGER_FILE: &str = "provider-batches.jsonl";

/// The Batch API client of a command, and where its batches' states go.
#[derive(Clone)]
pub struct ProviderBatches {
    pub provider: Arc<BatchProvider>,
    events: Arc<BatchEvents>,
}

/// The sinks of the executions running now, each told of every batch state.
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

/// An execution's sink, told of batch states until dropped.
pub struct Listening {
    events: Arc<BatchEvents>,
    id: u64,
}

impl Drop for Listening {
    fn drop(&mut self) {
        if let Ok(mut v) = self.events.sinks.lock() {
            v.retain(|(id, _)| *id != self.id);
        }
    }
}

impl ProviderBatches {
    /// The Batch API client when the settings ask for it (`--batch-api` with a server).
    pub fn from_settings(settings: &Settings, notes: &dyn Notes) -> crate::Result<Option<Self>> {
        let (Some(batch), LlmChoice::OpenAi { config, .. }) = (&settings.batch_api, &settings.llm)
        else {
            return Ok(None);
        };
        let provider = Arc::new(BatchProvider::new((**config).clone(), *batch)?);
        let events = Arc::new(BatchEvents::default());
        provider.set_observer(Some(events.clone()));
        notes.note(&format!(
            "planwave: calls go through the Batch API of {} (submitted after {:?}, polled from every {:?})",
            planwave_redact::redact_url(&config.base_url),
            batch.linger,
            batch.poll
        ));
        Ok(Some(ProviderBatches { provider, events }))
    }

    pub fn as_provider(&self) -> Arc<dyn LlmProvider> {
        self.provider.clone()
    }

    /// Records batches in `dir`'s side file from now on, and lets calls submitted by an
    /// earlier process (a resume) wait for their recorded batch.
    pub async fn open_ledger(&self, dir: &RunDir) -> crate::Result<()> {
        let (file, text) = planwave_storage::open_append(dir, LEDGER_FILE)
            .with_context(|| format!("opening {LEDGER_FILE}"))?;
        self.provider
            .recover(Ledger::new(file), Recorded::parse(&text))
            .await;
        Ok(())
    }

    /// `sink` hears of every batch state until the guard is dropped.
    pub fn listen(&self, sink: Arc<dyn EventSink>) -> Listening {
        let id = self.events.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut v) = self.events.sinks.lock() {
            v.push((id, sink));
        }
        Listening {
            events: self.events.clone(),
            id,
        }
    }
}
