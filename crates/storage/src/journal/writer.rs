//! The journal writer: one thread, group commit.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver};

use planwave_record::{Event, EventSink};

use crate::jsonl::write_line;
use crate::writer_thread::WriterThread;

/// Why queued events are not durable: the writer's first write or sync error, or a closed
/// journal. One failure answers every acknowledgement of its group commit, hence a message
/// rather than the `io::Error` itself.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JournalError(String);

impl From<&str> for JournalError {
    fn from(message: &str) -> JournalError {
        JournalError(message.to_owned())
    }
}

/// A second home for a journal's lines, which they must reach before they count as durable:
/// a queue worker's JetStream stream, so another machine can resume the run. `commit` gets
/// every byte written since its last call (whole lines, in order) on the writer thread and
/// blocks until they are stored; an error fails the journal like a failed fsync.
pub trait JournalMirror: Send + Sync {
    fn commit(&self, lines: &[u8]) -> Result<(), String>;

    /// Whether every batch of lines is committed as it is written, not only with a
    /// completion's acknowledgement or a sync: for a mirror others watch live (`serve
    /// --nats` shows a task running as soon as its `task_started` reaches JetStream).
    fn live(&self) -> bool {
        false
    }
}

/// Called once the event it came with is durable (`Ok`) or could not be written (`Err`).
pub type Ack = Box<dyn FnOnce(Result<(), JournalError>) + Send>;

enum Cmd {
    Append(Box<Event>, Option<Ack>),
    Sync(mpsc::SyncSender<Result<(), JournalError>>),
}

/// Most commands handled per commit, so acknowledgements keep flowing under a flood.
const MAX_BATCH: usize = 8192;

/// `events.jsonl`, appended with group commit. Also an [`EventSink`] (events without an
/// acknowledgement are made durable with the next batch).
pub struct Journal {
    writer: WriterThread<Cmd, JournalError>,
}

impl Journal {
    /// Opens (or creates) the journal for appending. A torn last line (a crash in the middle
    /// of a write) was never acknowledged, so it is cut off before anything is appended.
    /// With `durable` false nothing is fsynced (tests of other things, benchmarks).
    pub fn open(path: &Path, durable: bool) -> io::Result<Journal> {
        Journal::open_for_run(path, durable, None)
    }

    /// As [`Journal::open`], stamping every line that lacks one with `"run_id"` (see
    /// docs/events.md), so each line of `events.jsonl` stands alone.
    pub fn open_for_run(
        path: &Path,
        durable: bool,
        run_id: Option<uuid::Uuid>,
    ) -> io::Result<Journal> {
        Journal::open_mirrored(path, durable, run_id, None)
    }

    /// As [`Journal::open_for_run`]; with a `mirror`, an acknowledgement (and [`Journal::sync`])
    /// also waits until the lines are stored there. Lines already in the file are not sent
    /// again (they came from the mirror, or were never meant for it).
    pub fn open_mirrored(
        path: &Path,
        durable: bool,
        run_id: Option<uuid::Uuid>,
        mirror: Option<Arc<dyn JournalMirror>>,
    ) -> io::Result<Journal> {
        let mut options = OpenOptions::new();
        options.create(true).read(true).append(true);
        #[cfg(unix)]
        {
            // A journal that is a link would record the run somewhere else.
            use std::os::unix::fs::OpenOptionsExt;
            options.custom_flags(libc::O_NOFOLLOW);
        }
        let mut file = options.open(path)?;
        cut_torn_tail(&mut file)?;
        if durable && let Some(dir) = path.parent() {
            // The file's directory entry must survive a crash too.
            sync_dir(dir)?;
        }
        let writer = WriterThread::spawn("planwave-journal", move |rx| {
            write_loop(file, rx, durable, run_id, mirror)
        })?;
        Ok(Journal { writer })
    }

    /// Queues `event`; `ack` runs on the writer thread once it is durable.
    pub fn append(&self, event: Event, ack: Option<Ack>) {
        if let Err(Cmd::Append(_, Some(ack))) = self.writer.send(Cmd::Append(Box::new(event), ack))
        {
            ack(Err("the journal is closed".into()));
        }
    }

    /// Waits until everything queued so far is durable.
    pub fn sync(&self) -> Result<(), JournalError> {
        let (done_tx, done_rx) = mpsc::sync_channel(1);
        if self.writer.send(Cmd::Sync(done_tx)).is_err() {
            return Err("the journal is closed".into());
        }
        done_rx
            .recv()
            .map_err(|_| JournalError::from("the journal writer stopped"))?
    }

    /// Writes and syncs everything queued, stops the writer and returns its first error.
    /// Later events are dropped.
    pub fn close(&self) -> io::Result<()> {
        self.writer
            .close(|| JournalError::from("journal writer thread panicked"))
            .map_err(io::Error::other)
    }
}

impl EventSink for Journal {
    fn emit(&self, event: &Event) {
        self.append(event.clone(), None);
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

fn write_loop(
    file: File,
    rx: Receiver<Cmd>,
    durable: bool,
    run_id: Option<uuid::Uuid>,
    mirror: Option<Arc<dyn JournalMirror>>,
) -> Result<(), JournalError> {
    let mut w = BufWriter::with_capacity(1 << 16, file);
    let mut mirror = mirror.map(|m| Pending {
        to: m,
        lines: Vec::new(),
    });
    let live = mirror.as_ref().is_some_and(|m| m.to.live());
    let mut first_err: Option<JournalError> = None;
    let mut acks: Vec<Ack> = Vec::new();
    let mut syncs = Vec::new();
    // Block for the first command, then take whatever else is already queued: those all
    // share one write and one fdatasync.
    while let Ok(first) = rx.recv() {
        let mut next = Some(first);
        let mut n = 0;
        while let Some(cmd) = next {
            match cmd {
                Cmd::Append(ev, ack) => {
                    if first_err.is_none() {
                        let r = match &mut mirror {
                            None => write_line(&mut w, &ev, run_id),
                            Some(m) => m.write_line(&mut w, &ev, run_id),
                        };
                        if let Err(e) = r {
                            first_err =
                                Some(JournalError(format!("cannot write events.jsonl: {e}")));
                        }
                    }
                    acks.extend(ack);
                }
                Cmd::Sync(tx) => syncs.push(tx),
            }
            n += 1;
            next = if n < MAX_BATCH {
                rx.try_recv().ok()
            } else {
                None
            };
        }
        if first_err.is_none() {
            // Written at once (readers of the file see every line), synced only when someone
            // waits for durability: a completion's acknowledgement or an explicit sync. Other
            // events (task_ready, task_started, llm_call) ride along with the next sync, so a
            // chain of tasks pays one sync per completion, not one per event.
            let wanted = !acks.is_empty() || !syncs.is_empty();
            let r = w.flush().and_then(|_| {
                if durable && wanted {
                    w.get_ref().sync_data()
                } else {
                    Ok(())
                }
            });
            if let Err(e) = r {
                first_err = Some(JournalError(format!("cannot sync events.jsonl: {e}")));
            }
            if first_err.is_none()
                && (wanted || live)
                && let Some(m) = &mut mirror
            {
                first_err = m.commit().err();
            }
        }
        let result = match &first_err {
            None => Ok(()),
            Some(e) => Err(e.clone()),
        };
        for ack in acks.drain(..) {
            ack(result.clone());
        }
        for s in syncs.drain(..) {
            let _ = s.send(result.clone());
        }
    }
    // Closed: whatever was written without a sync is synced now.
    if durable
        && first_err.is_none()
        && let Err(e) = w.flush().and_then(|_| w.get_ref().sync_data())
    {
        first_err = Some(JournalError(format!("cannot sync events.jsonl: {e}")));
    }
    if first_err.is_none()
        && let Some(m) = &mut mirror
    {
        first_err = m.commit().err();
    }
    match first_err {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

/// Lines written to the file and not yet committed to the mirror.
struct Pending {
    to: Arc<dyn JournalMirror>,
    lines: Vec<u8>,
}

impl Pending {
    fn write_line(
        &mut self,
        w: &mut impl Write,
        ev: &Event,
        run_id: Option<uuid::Uuid>,
    ) -> io::Result<()> {
        let start = self.lines.len();
        let r = write_line(&mut self.lines, ev, run_id);
        if r.is_err() {
            self.lines.truncate(start);
            return r;
        }
        w.write_all(&self.lines[start..])
    }

    fn commit(&mut self) -> Result<(), JournalError> {
        if self.lines.is_empty() {
            return Ok(());
        }
        self.to
            .commit(&self.lines)
            .map_err(|e| JournalError(format!("cannot store the journal: {e}")))?;
        self.lines.clear();
        Ok(())
    }
}

/// Truncates the file after its last newline: a torn last line (a crash in the middle of a
/// write) was never acknowledged, and a line appended after it would be glued to it.
pub(crate) fn cut_torn_tail(file: &mut File) -> io::Result<()> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(());
    }
    // Scan back in blocks for the last '\n'; lines are short, so this reads little.
    let mut end = len;
    let mut buf = vec![0u8; 4096];
    while end > 0 {
        let start = end.saturating_sub(buf.len() as u64);
        let chunk = &mut buf[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(chunk)?;
        if let Some(pos) = chunk.iter().rposition(|&b| b == b'\n') {
            let keep = start + pos as u64 + 1;
            if keep != len {
                file.set_len(keep)?;
            }
            return Ok(());
        }
        end = start;
    }
    file.set_len(0)
}

/// fsyncs a directory, so a rename or a new file in it survives a crash.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use planwave_record::EventKind;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn ready(n: u32) -> Event {
        Event::now(EventKind::TaskReady {
            task: planwave_plan::TaskId::Int(i64::from(n)),
            wave: n,
        })
    }

    #[test]
    fn every_ack_comes_after_its_event_is_written_and_lines_stay_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("events.jsonl");
        let j = Arc::new(Journal::open(&path, true).expect("open"));
        let acked = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let j = j.clone();
                let acked = acked.clone();
                let path = path.clone();
                std::thread::spawn(move || {
                    for i in 0..250 {
                        let (tx, rx) = mpsc::channel();
                        j.append(
                            ready(t * 1000 + i),
                            Some(Box::new(move |r| {
                                let _ = tx.send(r);
                            })),
                        );
                        rx.recv().expect("ack").expect("durable");
                        // Acknowledged means on disk: the line is in the file now.
                        let text = std::fs::read_to_string(&path).expect("read");
                        assert!(text.contains(&format!("\"task\":{}", t * 1000 + i)));
                        acked.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        j.close().expect("close");
        assert_eq!(acked.load(Ordering::SeqCst), 1000);
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text.lines().count(), 1000);
        for l in text.lines() {
            serde_json::from_str::<Event>(l).expect("whole line");
        }
    }

    struct Recorder(std::sync::Mutex<Vec<u8>>, bool);

    impl JournalMirror for Recorder {
        fn commit(&self, lines: &[u8]) -> Result<(), String> {
            if self.1 {
                return Err("mirror down".into());
            }
            self.0.lock().expect("lock").extend_from_slice(lines);
            Ok(())
        }
    }

    #[test]
    fn an_ack_waits_for_the_mirror_and_a_failing_mirror_fails_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("events.jsonl");
        let mirror = Arc::new(Recorder(Default::default(), false));
        let j = Journal::open_mirrored(&path, false, None, Some(mirror.clone())).expect("open");
        j.emit(&ready(1));
        let (tx, rx) = mpsc::channel();
        j.append(
            ready(2),
            Some(Box::new(move |r| {
                let _ = tx.send(r);
            })),
        );
        rx.recv().expect("ack").expect("stored");
        // Acknowledged means in the mirror too, with the event before it.
        let text = String::from_utf8(mirror.0.lock().expect("lock").clone()).expect("utf8");
        assert_eq!(text.lines().count(), 2, "{text}");
        j.emit(&ready(3));
        j.close().expect("close");
        let mirrored = mirror.0.lock().expect("lock").clone();
        assert_eq!(mirrored, std::fs::read(&path).expect("read"));

        let down = Arc::new(Recorder(Default::default(), true));
        let path = dir.path().join("down.jsonl");
        let j = Journal::open_mirrored(&path, false, None, Some(down)).expect("open");
        j.emit(&ready(1));
        assert!(j.sync().is_err());
    }

    /// A mirror watched live: tells the test of each commit.
    struct Live(std::sync::Mutex<mpsc::Sender<Vec<u8>>>);

    impl JournalMirror for Live {
        fn commit(&self, lines: &[u8]) -> Result<(), String> {
            let _ = self.0.lock().expect("lock").send(lines.to_vec());
            Ok(())
        }

        fn live(&self) -> bool {
            true
        }
    }

    #[test]
    fn a_live_mirror_gets_an_event_without_waiting_for_an_acknowledgement() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("events.jsonl");
        let (tx, rx) = mpsc::channel();
        let mirror = Arc::new(Live(std::sync::Mutex::new(tx)));
        let j = Journal::open_mirrored(&path, false, None, Some(mirror)).expect("open");
        // No acknowledgement asked and no sync: the line reaches the mirror anyway.
        j.emit(&ready(1));
        let got = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("committed");
        let text = String::from_utf8(got).expect("utf8");
        assert_eq!(text.lines().count(), 1, "{text}");
        j.close().expect("close");
    }

    #[test]
    fn a_torn_last_line_is_cut_before_appending() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("events.jsonl");
        let whole = serde_json::to_string(&ready(1)).expect("json");
        std::fs::write(&path, format!("{whole}\n{{\"ts\":\"2026-")).expect("write");
        let j = Journal::open(&path, false).expect("open");
        j.emit(&ready(2));
        j.close().expect("close");
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        for l in lines {
            serde_json::from_str::<Event>(l).expect("whole line");
        }
    }
}
