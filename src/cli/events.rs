//! Where a run's events go: `events.jsonl` in the run directory always, and with
//! `--events FILE|-` also a live JSON-lines stream for other programs (schema:
//! docs/events.md). When the stream is stdout, human output moves to stderr.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use clap::Args;
use planwave_storage::{JsonlOptions, JsonlSink};

#[derive(Debug, Default, Args)]
pub struct EventsOptions {
    /// Also stream the run's events as JSON lines to FILE as they happen; `-` is stdout (the
    /// summary then goes to stderr). Same lines as events.jsonl; schema in docs/events.md.
    #[arg(long, value_name = "FILE|-")]
    pub events: Option<PathBuf>,
}

impl EventsOptions {
    /// `--events` must not point into the run directory: the journal (`events.jsonl`) and
    /// the run's other files would be overwritten or interleaved with the stream.
    pub fn check(&self, out: &std::path::Path) -> Result<(), planwave_runner::ops::InvalidInput> {
        match &self.events {
            Some(p) if p.as_os_str() != "-" && planwave_runner::ops::inside(p, out) => {
                Err(planwave_runner::ops::InvalidInput::one(
                    "--events",
                    format!(
                        "{} is inside the run directory {}, where the run writes its journal and files; choose a path outside it",
                        p.display(),
                        out.display()
                    ),
                ))
            }
            _ => Ok(()),
        }
    }
}

static HUMAN_TO_STDERR: AtomicBool = AtomicBool::new(false);

/// Where lines meant for people go: stdout, unless stdout carries the event stream.
pub fn human() -> Box<dyn Write> {
    if HUMAN_TO_STDERR.load(Ordering::Relaxed) {
        Box::new(planwave_runner::term::Safe(std::io::stderr()))
    } else {
        Box::new(planwave_runner::term::Safe(std::io::stdout()))
    }
}

/// The `--events` stream (every line stamped with the run id, flushed whenever the writer
/// has caught up), or `None` without the flag. `events.jsonl` itself is the run's journal.
pub fn open_stream(
    run_id: uuid::Uuid,
    opts: &EventsOptions,
) -> anyhow::Result<Option<Arc<JsonlSink>>> {
    let live = JsonlOptions {
        run_id: Some(run_id),
        flush_when_idle: true,
    };
    Ok(match &opts.events {
        None => None,
        Some(p) if p.as_os_str() == "-" => {
            HUMAN_TO_STDERR.store(true, Ordering::Relaxed);
            Some(Arc::new(JsonlSink::with_options(
                Box::new(std::io::stdout()),
                live,
            )))
        }
        Some(p) => {
            let f = std::fs::File::create(p)
                .with_context(|| format!("opening --events {}", p.display()))?;
            Some(Arc::new(JsonlSink::with_options(Box::new(f), live)))
        }
    })
}

/// The `--events` stream as the runner's operations ask for it, by run id.
pub fn stream_to(
    opts: &EventsOptions,
) -> impl Fn(uuid::Uuid) -> planwave_runner::ops::Result<Option<Arc<JsonlSink>>> + Sync + '_ {
    move |run_id| {
        open_stream(run_id, opts)
            .map_err(|e| planwave_runner::ops::RunnerError::message(format!("--events: {e:#}")))
    }
}
