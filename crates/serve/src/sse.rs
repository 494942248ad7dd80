//! `GET /api/runs/{id}/events`: the run's events as Server-Sent Events. Each event's id is
//! its position in the run's log (from 1); a client reconnecting with `Last-Event-ID: N`
//! (or `?after=N`) gets the events after the N-th. A live run's log is followed until it
//! ends; a stored run's is its `events.jsonl`, read as it is sent (a journal of any size
//! costs one block of memory per reader, not its size). The last event is `event: end`, so
//! a browser's `EventSource` knows not to reconnect. An event goes out as soon as it is in
//! the log: a subscriber waits on no timer. What arrived while its last block was being
//! written goes out together as the next block (at most [`CHUNK`] frames, taken only when
//! the connection can take more, so a slow client costs one block of memory, never a
//! backlog). An idle live stream gets a comment line every `--sse-keep-alive`, so proxies
//! keep it and a client that left is noticed.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures::stream::{self, Stream, StreamExt};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio_util::sync::CancellationToken;

use crate::live::LiveRun;
use crate::log::frame;

/// Frames per block, so one subscriber far behind cannot hold the log's lock long.
const CHUNK: usize = 2048;
/// Bytes of frames per block of a replay.
const REPLAY_BLOCK: usize = 1 << 16;

const END: &[u8] = b"event: end\ndata: {}\n\n";

fn respond(s: impl Stream<Item = Bytes> + Send + 'static) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(s.map(Ok::<_, std::convert::Infallible>)),
    )
        .into_response()
}

/// Follows a live run's log from after its `after`-th line. When `stop` is cancelled (a
/// server over the queue stopping) the stream ends without `end`, so the client reconnects
/// with `Last-Event-ID` to whichever server answers next.
pub fn follow(
    run: Arc<LiveRun>,
    after: usize,
    keep_alive: Duration,
    stop: Option<CancellationToken>,
) -> Response {
    let rx = run.log.subscribe();
    let stop = stop.unwrap_or_default();
    // Polled for its next block only once the connection has taken the last one: whatever
    // arrived meanwhile is sent together, without waiting for more.
    let s = stream::unfold(Some((run, rx, after)), move |state| {
        let stop = stop.clone();
        async move {
            let (run, mut rx, next) = state?;
            loop {
                let (n, block) = run.log.since(next, CHUNK);
                if n > 0 {
                    return Some((block, Some((run, rx, next + n))));
                }
                let (len, done) = *rx.borrow_and_update();
                if len > next {
                    continue;
                }
                if done {
                    return Some((Bytes::from_static(END), None));
                }
                let changed = tokio::select! {
                    () = stop.cancelled() => return None,
                    c = tokio::time::timeout(keep_alive, rx.changed()) => c,
                };
                match changed {
                    Ok(Ok(())) => {}
                    Ok(Err(_)) => return Some((Bytes::from_static(END), None)),
                    Err(_) => {
                        return Some((
                            Bytes::from_static(b": keep-alive\n\n"),
                            Some((run, rx, next)),
                        ));
                    }
                }
            }
        }
    });
    respond(s)
}

/// The journal of the stored run in `dir` from after its `after`-th line, then `end`: read a
/// block at a time as the client takes them. A missing journal (or a link in its place,
/// `run_files`) is an empty one.
pub async fn replay(dir: PathBuf, after: usize) -> Response {
    let file = tokio::task::spawn_blocking(move || crate::run_files::open(&dir, "events.jsonl"))
        .await
        .ok()
        .and_then(Result::ok);
    let lines = file.map(|f| BufReader::new(tokio::fs::File::from_std(f)).lines());
    let s = stream::unfold(Some((lines, 0usize)), move |state| async move {
        let (mut lines, mut n) = state?;
        let mut buf = Vec::new();
        while buf.len() <= REPLAY_BLOCK {
            let line = match lines.as_mut() {
                Some(l) => l.next_line().await.ok().flatten(),
                None => None,
            };
            let Some(line) = line else {
                buf.extend_from_slice(END);
                return Some((Bytes::from(buf), None));
            };
            if line.trim().is_empty() {
                continue;
            }
            n += 1;
            if n > after {
                buf.extend_from_slice(&frame(n, &line));
            }
        }
        Some((Bytes::from(buf), Some((lines, n))))
    });
    respond(s)
}
