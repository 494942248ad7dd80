//! A goal job's whole run directory in JetStream: the reflective loop writes rounds
//! (`rounds/<k>/plan.json`, sections, `round.json`...), planner files and a journal per round,
//! far more than one `events.jsonl`. Every file written through the job's [`RunDir`] and every
//! journal commit is published (acknowledged) on the job's `.dir` subject as it happens, so a
//! worker taking the job over rebuilds the directory and the runner's own `research` resume
//! path goes on from it: finished rounds kept, the interrupted round's completed tasks kept.
//!
//! Order makes it sound: a round's plan and a task's section are written (so published)
//! before the journal commit that counts the task completed.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use base64::Engine;
use planwave_storage::{DirMirror, JournalMirror, RunDir};
use serde::{Deserialize, Serialize};

use crate::journal::{publish, read_messages};
use crate::{Queue, QueueError};
use tokio_util::sync::CancellationToken;

/// Raw bytes per message (base64 makes them 4/3 larger; the server's limit is 1 MiB).
const CHUNK: usize = 384 * 1024;

/// One message: a piece of the file at `path`, replacing it (`append: false`, a file's first
/// piece) or added to its end; `journal` when it is lines a journal committed (what
/// `serve --nats` shows live), not a piece of a file written whole.
#[derive(Serialize, Deserialize)]
pub(crate) struct Piece {
    pub path: String,
    #[serde(default)]
    pub append: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub journal: bool,
    pub data: String,
}

impl Piece {
    /// A message of a `.dir` subject, decoded (`None`: not a piece).
    pub(crate) fn decode(payload: &[u8]) -> Option<(Piece, Vec<u8>)> {
        let p = serde_json::from_slice::<Piece>(payload).ok()?;
        let data = base64::engine::general_purpose::STANDARD
            .decode(&p.data)
            .ok()?;
        Some((p, data))
    }
}

pub(crate) struct DirStream {
    queue: Queue,
    subject: String,
    /// Unique to this attempt: message ids `session.seq` make a retried publish land once.
    session: String,
    seq: AtomicU64,
    handle: tokio::runtime::Handle,
    /// The worker's stop: a failed publish is not retried once it is stopping.
    stop: CancellationToken,
}

pub(crate) fn dir_subject(journal_subject: &str) -> String {
    format!("{journal_subject}.dir")
}

impl DirStream {
    pub(crate) fn new(queue: Queue, subject: String, stop: CancellationToken) -> Arc<DirStream> {
        Arc::new(DirStream {
            queue,
            subject,
            session: uuid::Uuid::new_v4().simple().to_string(),
            seq: AtomicU64::new(0),
            handle: tokio::runtime::Handle::current(),
            stop,
        })
    }

    fn send(&self, path: &str, append: bool, journal: bool, bytes: &[u8]) -> Result<(), String> {
        let mut pieces: Vec<&[u8]> = bytes.chunks(CHUNK).collect();
        if pieces.is_empty() {
            pieces.push(&[]);
        }
        let fut = async {
            for (i, piece) in pieces.iter().enumerate() {
                let body = serde_json::to_vec(&Piece {
                    path: path.to_owned(),
                    append: append || i > 0,
                    journal,
                    data: base64::engine::general_purpose::STANDARD.encode(piece),
                })
                .map_err(|e| e.to_string())?;
                let n = self.seq.fetch_add(1, Ordering::SeqCst);
                publish(
                    &self.queue,
                    &self.subject,
                    &body,
                    format!("{}.{n}", self.session),
                    &self.stop,
                )
                .await?;
            }
            Ok(())
        };
        // Called from the journal's writer thread (no runtime) or from async code on a
        // runtime worker, which must let the runtime go on (the client's connection task runs
        // there) while it waits.
        match tokio::runtime::Handle::try_current() {
            Err(_) => self.handle.block_on(fut),
            Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                tokio::task::block_in_place(|| self.handle.block_on(fut))
            }
            Ok(_) => Err("mirroring a run directory needs a multi-thread runtime".into()),
        }
    }
}

impl DirMirror for DirStream {
    fn file(&self, rel: &str, bytes: &[u8]) -> Result<(), String> {
        self.send(rel, false, false, bytes)
    }

    fn journal(&self, rel: &str) -> Arc<dyn JournalMirror> {
        Arc::new(DirJournal {
            dir: DirStream {
                queue: self.queue.clone(),
                subject: self.subject.clone(),
                session: format!(
                    "{}j{}",
                    self.session,
                    self.seq.fetch_add(1, Ordering::SeqCst)
                ),
                seq: AtomicU64::new(0),
                handle: self.handle.clone(),
                stop: self.stop.clone(),
            },
            path: rel.to_owned(),
        })
    }
}

/// One journal of the directory: its commits appended to its file.
struct DirJournal {
    dir: DirStream,
    path: String,
}

impl JournalMirror for DirJournal {
    fn commit(&self, lines: &[u8]) -> Result<(), String> {
        self.dir.send(&self.path, true, true, lines)
    }

    /// Every batch goes out as it is written: `serve --nats` follows a goal run live too.
    fn live(&self) -> bool {
        true
    }
}

/// Rebuilds under `root` what was mirrored on `subject`; returns how many files.
pub(crate) async fn restore_dir(q: &Queue, subject: &str, root: &RunDir) -> crate::Result<usize> {
    let mut files = std::collections::BTreeMap::<String, Vec<u8>>::new();
    let mut bad = 0usize;
    read_messages(q, subject, |m| {
        let Some((p, data)) = Piece::decode(m) else {
            bad += 1;
            return;
        };
        let file = files.entry(p.path).or_default();
        if !p.append {
            file.clear();
        }
        file.extend_from_slice(&data);
    })
    .await?;
    if bad > 0 {
        tracing::warn!(
            bad,
            "unreadable pieces of a mirrored run directory; skipped"
        );
    }
    for (rel, bytes) in &files {
        // Confined to the job's directory: `path` refuses absolute paths and `..`.
        let path = root
            .path(rel)
            .map_err(|e| QueueError::of("a mirrored file", e))?;
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| QueueError::of("the job cache", e))?;
        }
        write_file(&path, bytes)?;
    }
    Ok(files.len())
}

fn write_file(path: &Path, bytes: &[u8]) -> crate::Result<()> {
    std::fs::write(path, bytes).map_err(|e| QueueError::of(&format!("{}", path.display()), e))
}
