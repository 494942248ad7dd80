//! `GET /api/runs/{id}/events`: the run's events as Server-Sent Events. Each event's id is
//! its position in the run's log (from 1); a client reconnecting with `Last-Event-ID: N`
//! (or `?after=N`) gets the events after the N-th. A live run's log is followed until it
//! ends; a stored run's is its `events.jsonl`. The last event is `event: end`, so a browser's
//! `EventSource` knows not to reconnect.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures::Stream;
use futures::stream::{self, StreamExt};

use crate::live::LiveRun;

/// Lines handed out per wake-up, so one subscriber far behind cannot hold the log's lock long.
const CHUNK: usize = 512;

fn event(n: usize, line: &str) -> Event {
    Event::default().id(n.to_string()).data(line)
}

fn end() -> Event {
    Event::default().event("end").data("{}")
}

pub type EventStream = Sse<
    axum::response::sse::KeepAliveStream<
        std::pin::Pin<Box<dyn Stream<Item = Result<Event, Infallible>> + Send>>,
    >,
>;

fn sse(s: impl Stream<Item = Event> + Send + 'static) -> EventStream {
    Sse::new(s.map(Ok).boxed()).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}

/// Follows a live run's log from after its `after`-th line.
pub fn follow(run: Arc<LiveRun>, after: usize) -> EventStream {
    let rx = run.log.subscribe();
    let s = stream::unfold(
        (run, rx, after, false),
        |(run, mut rx, next, ended)| async move {
            if ended {
                return None;
            }
            loop {
                let lines = run.log.since(next, CHUNK);
                if !lines.is_empty() {
                    let n = next + lines.len();
                    let events: Vec<Event> = lines
                        .iter()
                        .enumerate()
                        .map(|(i, l)| event(next + i + 1, l))
                        .collect();
                    return Some((stream::iter(events), (run, rx, n, false)));
                }
                let (len, done) = *rx.borrow_and_update();
                if done && len <= next {
                    return Some((stream::iter(vec![end()]), (run, rx, next, true)));
                }
                if len > next {
                    continue;
                }
                if rx.changed().await.is_err() {
                    return Some((stream::iter(vec![end()]), (run, rx, next, true)));
                }
            }
        },
    )
    .flatten();
    sse(s)
}

/// A stored run's journal from after its `after`-th line, then `end`.
pub fn replay(lines: Vec<String>, after: usize) -> EventStream {
    let events: Vec<Event> = lines
        .into_iter()
        .enumerate()
        .skip(after)
        .map(|(i, l)| event(i + 1, &l))
        .chain(std::iter::once(end()))
        .collect();
    sse(stream::iter(events))
}
