//! A run's event log in memory: every line of its `--events` stream (the journal's events,
//! plus the reflective loop's for `research`), in order, for Server-Sent Events. A line's
//! position (from 1) is its SSE id, so `Last-Event-ID` resumes exactly after it.
//!
//! Each line is kept as its SSE frame (`id: N\ndata: LINE\n\n`), formatted once: a hundred
//! subscribers copy the same bytes instead of formatting every event a hundred times.
//!
//! A `task_completed` line goes out without its `section` text (the journal's durable copy of
//! the section, most of the journal's bytes): a page fetches a section when it shows it, and
//! a hundred subscribers do not each receive every section of a 10,000-task run.

use std::borrow::Cow;
use std::io::{self, Write};
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Bytes;
use tokio::sync::watch;

pub struct EventLog {
    frames: Mutex<Vec<Bytes>>,
    /// Lines so far, and whether the log is complete (the run ended).
    progress: watch::Sender<(usize, bool)>,
}

impl Default for EventLog {
    fn default() -> Self {
        EventLog::seeded(Vec::new())
    }
}

/// The SSE frame of the `n`-th line (a JSON line has no newline: serde escapes them).
pub fn frame(n: usize, line: &str) -> Bytes {
    Bytes::from(format!("id: {n}\ndata: {}\n\n", without_section(line)))
}

/// `line` without the `"section"` member of a `task_completed` event. Found as text, not
/// by parsing: inside a JSON string every `"` is escaped, so an unescaped `,"section":"` is
/// the member itself; its value ends at the next unescaped `"`. Key order is kept.
pub fn without_section(line: &str) -> Cow<'_, str> {
    const KEY: &str = ",\"section\":\"";
    if !line.contains("\"type\":\"task_completed\"") {
        return Cow::Borrowed(line);
    }
    let Some(start) = line.find(KEY) else {
        return Cow::Borrowed(line);
    };
    let bytes = line.as_bytes();
    let mut i = start + KEY.len();
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => {
                let mut out = String::with_capacity(line.len() - (i + 1 - start));
                out.push_str(&line[..start]);
                out.push_str(&line[i + 1..]);
                return Cow::Owned(out);
            }
            _ => i += 1,
        }
    }
    Cow::Borrowed(line)
}

impl EventLog {
    /// A log starting with `earlier` lines (a resumed run's journal so far).
    pub fn seeded(earlier: Vec<Arc<str>>) -> EventLog {
        let n = earlier.len();
        let frames = earlier
            .iter()
            .enumerate()
            .map(|(i, l)| frame(i + 1, l))
            .collect();
        EventLog {
            frames: Mutex::new(frames),
            progress: watch::channel((n, false)).0,
        }
    }

    pub fn push(&self, line: &str) {
        self.push_all(std::iter::once(line));
    }

    /// Appends lines and wakes the subscribers once for all of them.
    pub fn push_all<'a>(&self, lines: impl IntoIterator<Item = &'a str>) {
        let mut frames = self.frames.lock().unwrap_or_else(PoisonError::into_inner);
        let before = frames.len();
        for line in lines {
            let n = frames.len() + 1;
            frames.push(frame(n, line));
        }
        let n = frames.len();
        drop(frames);
        if n > before {
            self.progress.send_modify(|p| p.0 = n);
        }
    }

    /// No line will follow.
    pub fn finish(&self) {
        self.progress.send_modify(|p| p.1 = true);
    }

    /// The frames after the first `from`, at most `max`, as one buffer. Only the handles
    /// are taken under the lock (a reference count each); the bytes are copied after it is
    /// released, so a hundred subscribers copying their blocks never hold up the run's
    /// writer appending to the log.
    pub fn since(&self, from: usize, max: usize) -> (usize, Bytes) {
        let picked: Vec<Bytes> = {
            let frames = self.frames.lock().unwrap_or_else(PoisonError::into_inner);
            frames.iter().skip(from).take(max).cloned().collect()
        };
        let len: usize = picked.iter().map(Bytes::len).sum();
        let mut buf = Vec::with_capacity(len);
        for f in &picked {
            buf.extend_from_slice(f);
        }
        (picked.len(), Bytes::from(buf))
    }

    pub fn subscribe(&self) -> watch::Receiver<(usize, bool)> {
        self.progress.subscribe()
    }

    pub fn len(&self) -> usize {
        self.progress.borrow().0
    }
}

/// The `Write` end a [`planwave_storage::JsonlSink`] writes the run's stream into: each
/// complete line becomes one entry of the log.
pub struct LogWriter {
    pub log: Arc<EventLog>,
    pub partial: Vec<u8>,
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.partial.extend_from_slice(buf);
        // Every complete line of this write, appended together: one wake-up per write
        // (JsonlSink writes in blocks), not one per event.
        let Some(last) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return Ok(buf.len());
        };
        let text = String::from_utf8_lossy(&self.partial[..last]);
        self.log
            .push_all(text.split('\n').filter(|l| !l.trim().is_empty()));
        self.partial.drain(..=last);
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
    fn a_completion_goes_out_without_its_section_and_nothing_else_changes() {
        let done = r#"{"run_id":"r","ts":"t","type":"task_completed","task":1,"section":"a \"quoted\", \\ \"section\":\"x\" text","preview":"p"}"#;
        assert_eq!(
            without_section(done),
            r#"{"run_id":"r","ts":"t","type":"task_completed","task":1,"preview":"p"}"#
        );
        let other = r#"{"type":"task_started","task":1,"description":",\"section\":\"x"}"#;
        assert_eq!(without_section(other), other);
        let last = r#"{"type":"task_completed","task":1,"section":"end"}"#;
        assert_eq!(
            without_section(last),
            r#"{"type":"task_completed","task":1}"#
        );
        for line in [done, other, last] {
            let v: serde_json::Value = serde_json::from_str(&without_section(line)).unwrap();
            assert!(v.get("section").is_none() || v["type"] != "task_completed");
        }
    }

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
        let (n, bytes) = log.since(1, 10);
        assert_eq!(n, 2);
        assert_eq!(
            std::str::from_utf8(&bytes).unwrap(),
            "id: 2\ndata: {\"n\":1}\n\nid: 3\ndata: {\"n\":2}\n\n"
        );
        assert_eq!(log.since(3, 10).0, 0);
        assert_eq!(log.since(0, 1).0, 1);
        assert!(!log.subscribe().borrow().1);
        log.finish();
        assert!(log.subscribe().borrow().1);
    }
}
