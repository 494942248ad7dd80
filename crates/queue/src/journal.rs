//! A job's journal in JetStream: the engine's journal writer commits its lines here (one
//! message per group commit, acknowledged by the server) before any task counts as
//! completed, and a worker taking the job over reads them all back.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use async_nats::jetstream::message::PublishMessage as Publish;
use async_nats::jetstream::stream::RawMessageErrorKind;
use planwave_storage::JournalMirror;
use tokio_util::sync::CancellationToken;

use crate::Queue;

/// Largest message sent (the server's default limit is 1 MiB); a commit is split at lines.
const CHUNK: usize = 512 * 1024;
/// How long a commit keeps retrying while the server is away (a restart, a lost node).
const PATIENCE: Duration = Duration::from_secs(120);

/// The mirror of one job's `events.jsonl`.
pub(crate) struct StreamMirror {
    pub queue: Queue,
    pub subject: String,
    /// Unique to this attempt: message ids `session.seq` make a retried publish land once.
    pub session: String,
    pub seq: AtomicU64,
    pub handle: tokio::runtime::Handle,
    /// Told how long each commit took (the worker's journal-commit metric).
    pub on_commit: Option<crate::OnCommit>,
    /// The worker's stop: once it is stopping, a failed publish is not tried again.
    pub stop: CancellationToken,
}

impl StreamMirror {
    async fn publish(&self, chunk: &[u8], id: String) -> Result<(), String> {
        publish(&self.queue, &self.subject, chunk, id, &self.stop).await
    }
}

/// An acknowledged publish, retried (same message id: stored once) while the server is away,
/// unless the worker is stopping (`stop`): then one failed attempt ends it, so a worker whose
/// server is gone stops in bounded time. The commit then fails, nothing it held counts, and
/// the next worker does that work again.
pub(crate) async fn publish(
    queue: &Queue,
    subject: &str,
    chunk: &[u8],
    id: String,
    stop: &CancellationToken,
) -> Result<(), String> {
    let started = Instant::now();
    loop {
        let attempt = async {
            let ack = queue
                .js
                .send_publish(
                    subject.to_owned(),
                    Publish::build()
                        .payload(bytes::Bytes::copy_from_slice(chunk))
                        .message_id(&id),
                )
                .await
                .map_err(|e| e.to_string())?;
            ack.await.map(|_| ()).map_err(|e| e.to_string())
        };
        match attempt.await {
            Ok(()) => return Ok(()),
            Err(e) if started.elapsed() > PATIENCE || stop.is_cancelled() => return Err(e),
            Err(e) => {
                tracing::warn!(error = %e, "journal publish failed; retrying");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    }
}

impl JournalMirror for StreamMirror {
    fn commit(&self, lines: &[u8]) -> Result<(), String> {
        let started = Instant::now();
        let committed = self.handle.block_on(async {
            for chunk in chunks(lines) {
                let n = self.seq.fetch_add(1, Ordering::SeqCst);
                self.publish(chunk, format!("{}.{n}", self.session)).await?;
            }
            Ok(())
        });
        if let Some(on_commit) = &self.on_commit
            && committed.is_ok()
        {
            on_commit(started.elapsed());
        }
        committed
    }

    /// Every batch goes out as it is written: `serve --nats` follows the stream live.
    fn live(&self) -> bool {
        true
    }
}

/// `lines` cut after newlines into pieces of at most [`CHUNK`] bytes (a longer line is one
/// piece of its own).
fn chunks(lines: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut rest = lines;
    while !rest.is_empty() {
        if rest.len() <= CHUNK {
            out.push(rest);
            break;
        }
        let cut = rest[..CHUNK]
            .iter()
            .rposition(|&b| b == b'\n')
            .map(|p| p + 1)
            .or_else(|| rest.iter().position(|&b| b == b'\n').map(|p| p + 1))
            .unwrap_or(rest.len());
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out
}

/// Every line journaled on `subject`, in order.
pub(crate) async fn read_journal(q: &Queue, subject: &str) -> crate::Result<Vec<u8>> {
    let mut text = Vec::new();
    read_messages(q, subject, |m| text.extend_from_slice(m)).await?;
    Ok(text)
}

/// The payload of every message on `subject`, in order.
pub(crate) async fn read_messages(
    q: &Queue,
    subject: &str,
    mut each: impl FnMut(&[u8]),
) -> crate::Result<()> {
    let mut seq = 1;
    loop {
        let next = crate::record::retrying("reading a job's journal", || async {
            match q
                .journal
                .raw_message_builder()
                .sequence(seq)
                .next_by_subject(subject.to_owned())
                .send()
                .await
            {
                Ok(m) => Ok(Some(m)),
                Err(e) if e.kind() == RawMessageErrorKind::NoMessageFound => Ok(None),
                Err(e) => Err(e),
            }
        })
        .await?;
        let Some(m) = next else {
            return Ok(());
        };
        each(&m.payload);
        seq = m.sequence + 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cut_at_lines() {
        let line = vec![b'x'; 300 * 1024];
        let mut text = line.clone();
        text.push(b'\n');
        text.extend_from_slice(&line);
        text.push(b'\n');
        text.extend_from_slice(b"short\n");
        let parts = chunks(&text);
        assert_eq!(parts.len(), 2);
        assert!(parts.iter().all(|p| p.ends_with(b"\n")));
        assert_eq!(parts.concat(), text);
    }
}
