//! A run's event log in memory: every line of its `--events` stream (the journal's events,
//! plus the reflective loop's for `research`), in order, for Server-Sent Events. A line's
//! position (from 1) is its SSE id, so `Last-Event-ID` resumes exactly after it.

use std::io::{self, Write};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;

pub struct EventLog {
    lines: Mutex<Vec<Arc<str>>>,
    /// Lines so far, and whether the log is complete (the run ended).
    progress: watch::Sender<(usize, bool)>,
}

impl Default for EventLog {
    fn default() -> Self {
        EventLog {
            lines: Mutex::new(Vec::new()),
            progress: watch::channel((0, false)).0,
        }
    }
}

impl EventLog {
    /// A log starting with `earlier` lines (a resumed run's journal so far).
    pub fn seeded(earlier: Vec<Arc<str>>) -> EventLog {
        let n = earlier.len();
        EventLog {
            lines: Mutex::new(earlier),
            progress: watch::channel((n, false)).0,
        }
    }

    pub fn push(&self, line: Arc<str>) {
        let mut lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        lines.push(line);
        let n = lines.len();
        drop(lines);
        self.progress.send_modify(|p| p.0 = n);
    }

    /// No line will follow.
    pub fn finish(&self) {
        self.progress.send_modify(|p| p.1 = true);
    }

    /// The lines after the first `from`, at most `max`.
    pub fn since(&self, from: usize, max: usize) -> Vec<Arc<str>> {
        let lines = self.lines.lock().unwrap_or_else(PoisonError::into_inner);
        lines.iter().skip(from).take(max).cloned().collect()
    }

    pub fn subscribe(&self) -> watch::Receiver<(usize, bool)> {
        self.progress.subscribe()
    }

    pub fn len(&self) -> usize {
        self.progress.borrow().0
    }
}

/// The `Write` end a [`planwave_engine::JsonlSink`] writes the run's stream into: each
/// complete line becomes one entry of the log.
pub struct LogWriter {
    pub log: Arc<EventLog>,
    pub partial: Vec<u8>,
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.partial.extend_from_slice(buf);
        while let Some(nl) = self.partial.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.partial.drain(..=nl).collect();
            let text = String::from_utf8_lossy(&line[..line.len() - 1]);
            if !text.trim().is_empty() {
                self.log.push(Arc::from(text.as_ref()));
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_written_in_pieces_arrive_whole_and_in_order() {
        let log = Arc::new(EventLog::seeded(vec![Arc::from("{\"n\":0}")]));
        let mut w = LogWriter {
            log: log.clone(),
            partial: Vec::new(),
        };
        w.write_all(b"{\"n\":1}\n{\"n\"").unwrap();
        w.write_all(b":2}\n").unwrap();
        assert_eq!(log.len(), 3);
        let got: Vec<String> = log.since(1, 10).iter().map(|s| s.to_string()).collect();
        assert_eq!(got, ["{\"n\":1}", "{\"n\":2}"]);
        assert!(log.since(3, 10).is_empty());
        assert!(!log.subscribe().borrow().1);
        log.finish();
        assert!(log.subscribe().borrow().1);
    }
}
