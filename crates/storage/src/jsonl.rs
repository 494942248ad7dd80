//! Events as JSON lines: the line format `events.jsonl` and `--events` share, and
//! [`JsonlSink`], the stream that writes them on its own thread.

use std::io::{self, BufWriter, Write};
use std::sync::mpsc::Receiver;

use planwave_record::{Event, EventKind, EventSink};

use crate::writer_thread::WriterThread;

struct Cmd(Box<Event>);

/// Writes events as JSON lines on a dedicated thread, so serialization and I/O stay off the
/// actors' threads. [`JsonlSink::close`] flushes and reports the first write error.
pub struct JsonlSink {
    writer: WriterThread<Cmd, io::Error>,
}

/// How a [`JsonlSink`] writes.
#[derive(Clone, Copy, Debug, Default)]
pub struct JsonlOptions {
    /// Put `"run_id"` first on every line that does not carry one already
    /// (`run_started`/`run_finished` do), so each line stands alone.
    pub run_id: Option<uuid::Uuid>,
    /// Flush whenever no more events are queued, so a program reading the stream sees each
    /// event promptly (files leave this off and flush in 64 KiB blocks).
    pub flush_when_idle: bool,
}

impl JsonlSink {
    pub fn with_options(out: Box<dyn Write + Send>, opts: JsonlOptions) -> JsonlSink {
        let writer = WriterThread::spawn("planwave-events", move |rx: Receiver<Cmd>| {
            let mut w = BufWriter::with_capacity(1 << 16, out);
            // The first error stops the writing; it is what `close` reports.
            let mut result: io::Result<()> = Ok(());
            while let Ok(Cmd(ev)) = rx.recv() {
                if result.is_ok() {
                    result = write_line(&mut w, &ev, opts.run_id);
                }
                if opts.flush_when_idle {
                    // Write what is queued, then let the reader see it.
                    while let Ok(Cmd(ev)) = rx.try_recv() {
                        if result.is_ok() {
                            result = write_line(&mut w, &ev, opts.run_id);
                        }
                    }
                    if result.is_ok() {
                        result = w.flush();
                    }
                }
            }
            result.and_then(|()| w.flush())
        })
        // Without its thread the stream drops events; the run itself goes on.
        .unwrap_or_else(|_| WriterThread::closed());
        JsonlSink { writer }
    }

    /// Flushes, stops the writer thread and returns its first error. Later events are dropped.
    pub fn close(&self) -> io::Result<()> {
        self.writer
            .close(|| io::Error::other("event writer thread panicked"))
    }
}

/// One event as a JSON line, with the run id spliced in first when the event lacks one.
pub(crate) fn write_line(
    w: &mut impl Write,
    ev: &Event,
    run_id: Option<uuid::Uuid>,
) -> io::Result<()> {
    let carries_id = matches!(
        ev.kind,
        EventKind::RunStarted { .. } | EventKind::RunFinished { .. } | EventKind::RunResumed { .. }
    );
    match run_id.filter(|_| !carries_id) {
        Some(id) => {
            let body = serde_json::to_vec(ev)?;
            write!(w, "{{\"run_id\":\"{id}\",")?;
            // `body` is a JSON object: drop its `{`.
            w.write_all(&body[1..])?;
        }
        None => serde_json::to_writer(&mut *w, ev)?,
    }
    w.write_all(b"\n")
}

impl EventSink for JsonlSink {
    fn emit(&self, event: &Event) {
        let _ = self.writer.send(Cmd(Box::new(event.clone())));
    }
}

impl Drop for JsonlSink {
    fn drop(&mut self) {
        let _ = self.close();
    }
}
