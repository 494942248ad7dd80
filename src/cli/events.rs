//! Where a run's events go: `events.jsonl` in the run directory always, and with
//! `--events FILE|-` also a live JSON-lines stream for other programs (schema:
//! docs/events.md). When the stream is stdout, human output moves to stderr.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use clap::Args;
use planwave_engine::{Event, EventSink, JsonlOptions, JsonlSink, RunDir};

#[derive(Debug, Args)]
pub struct EventsOptions {
    /// Also stream the run's events as JSON lines to FILE as they happen; `-` is stdout (the
    /// summary then goes to stderr). Same lines as events.jsonl; schema in docs/events.md.
    #[arg(long, value_name = "FILE|-")]
    pub events: Option<PathBuf>,
}

static HUMAN_TO_STDERR: AtomicBool = AtomicBool::new(false);

/// Where lines meant for people go: stdout, unless stdout carries the event stream.
pub fn human() -> Box<dyn Write> {
    if HUMAN_TO_STDERR.load(Ordering::Relaxed) {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    }
}

/// `events.jsonl` plus the optional stream, every line stamped with the run id.
pub struct RunEvents {
    file: JsonlSink,
    stream: Option<JsonlSink>,
}

impl RunEvents {
    pub fn open(
        out: &RunDir,
        run_id: uuid::Uuid,
        opts: &EventsOptions,
    ) -> anyhow::Result<RunEvents> {
        let path = out.root().join("events.jsonl");
        let file = JsonlSink::create_with(
            &path,
            JsonlOptions {
                run_id: Some(run_id),
                flush_when_idle: false,
            },
        )
        .with_context(|| format!("opening {}", path.display()))?;
        let live = JsonlOptions {
            run_id: Some(run_id),
            flush_when_idle: true,
        };
        let stream = match &opts.events {
            None => None,
            Some(p) if p.as_os_str() == "-" => {
                HUMAN_TO_STDERR.store(true, Ordering::Relaxed);
                Some(JsonlSink::with_options(Box::new(std::io::stdout()), live))
            }
            Some(p) => {
                let f = std::fs::File::create(p)
                    .with_context(|| format!("opening --events {}", p.display()))?;
                Some(JsonlSink::with_options(Box::new(f), live))
            }
        };
        Ok(RunEvents { file, stream })
    }

    /// Flushes both; the first write error wins. Later events are dropped.
    pub fn close(&self) -> anyhow::Result<()> {
        let stream = self.stream.as_ref().map(JsonlSink::close).transpose();
        self.file.close().context("writing events.jsonl")?;
        stream.context("writing the --events stream")?;
        Ok(())
    }
}

impl EventSink for RunEvents {
    fn emit(&self, event: &Event) {
        self.file.emit(event);
        if let Some(s) = &self.stream {
            s.emit(event);
        }
    }
}
