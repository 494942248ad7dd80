//! `GET /api/runs/{id}/events`: the run's events as Server-Sent Events. Each event's id is
//! its position in the run's log (from 1); a client reconnecting with `Last-Event-ID: N`
//! (or `?after=N`) gets the events after the N-th. A live run's log is followed until it
//! ends; a stored run's is its `events.jsonl`. The last event is `event: end`, so a browser's
//! `EventSource` knows not to reconnect. Frames are sent in blocks (all that is new at each
//! wake-up), not one write per event.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures::stream::{self, Stream, StreamExt};

use crate::live::LiveRun;
use crate::log::frame;

/// Frames per block, so one subscriber far behind cannot hold the log's lock long.
const CHUNK: usize = 2048;
/// The least time between two blocks to one subscriber: events arriving meanwhile go out
/// together (a page updating 20 times a second looks live; a hundred subscribers woken per
/// event would slow the run).
const COALESCE: Duration = Duration::from_millis(50);
/// A comment line this often on an idle stream keeps proxies from closing it.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

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

/// Follows a live run's log from after its `after`-th line.
pub fn follow(run: Arc<LiveRun>, after: usize) -> Response {
    let rx = run.log.subscribe();
    let s = stream::unfold(Some((run, rx, after, None)), |state| async move {
        let (run, mut rx, next, sent) = state?;
        if let Some(at) = sent {
            tokio::time::sleep_until(at + COALESCE).await;
        }
        loop {
            let (n, block) = run.log.since(next, CHUNK);
            if n > 0 {
                let now = tokio::time::Instant::now();
                return Some((block, Some((run, rx, next + n, Some(now)))));
            }
            let (len, done) = *rx.borrow_and_update();
            if len > next {
                continue;
            }
            if done {
                return Some((Bytes::from_static(END), None));
            }
            match tokio::time::timeout(KEEP_ALIVE, rx.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return Some((Bytes::from_static(END), None)),
                Err(_) => {
                    return Some((
                        Bytes::from_static(b": keep-alive\n\n"),
                        Some((run, rx, next, None)),
                    ));
                }
            }
        }
    });
    respond(s)
}

/// A stored run's journal from after its `after`-th line, then `end`.
pub fn replay(lines: Vec<String>, after: usize) -> Response {
    let mut blocks = Vec::new();
    let mut buf = Vec::new();
    for (i, l) in lines.iter().enumerate().skip(after) {
        buf.extend_from_slice(&frame(i + 1, l));
        if buf.len() > 1 << 16 {
            blocks.push(Bytes::from(std::mem::take(&mut buf)));
        }
    }
    buf.extend_from_slice(END);
    blocks.push(Bytes::from(buf));
    respond(stream::iter(blocks))
}
