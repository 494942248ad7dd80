//! A running run followed from JetStream: its journal subject read from the first message
//! (each line applied to a [`LiveRun`] and appended to its event log, as a local run's
//! events are) and its record watched (queued, running, the worker that has it). When the
//! record says the run ended, the journal is read to its last message, the finished
//! directory is written under `--data`, and the live run is finished and retired.
//!
//! A goal (research) run has no plan when it starts and no one journal: its worker mirrors
//! its whole directory, and what is followed there is each round's plan (a new pass of the
//! live view, as the runner's watch opens one locally) and the lines of every journal it
//! writes (planning, rounds, the loop's end), in the order they were committed.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use planwave_plan::ValidatedPlan;
use planwave_queue::{Followed, QueueState, RemoteRun};
use planwave_record::{Event, EventKind, TaskStatus};
use planwave_runner::ops::{Watch, Watcher};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::Remote;
use crate::live::{LiveRun, LiveWatch};
use crate::log::EventLog;
use crate::state::AppState;

/// The longest journal line shown as it is; a longer one (or one that is not a JSON object)
/// is replaced by an `unreadable` event of the same position.
pub const MAX_EVENT_BYTES: usize = 256 * 1024;
/// How long a request waits for a new follower to read what the journal already holds.
const CATCH_UP: Duration = Duration::from_secs(5);

/// Starts following run `id` (unless this server already does) and waits, bounded, until
/// what its journal held when it started has been read.
pub async fn start(state: &Arc<AppState>, remote: &Arc<Remote>, id: &str, run: RemoteRun) {
    if !remote.following.insert(id.to_owned()) {
        return;
    }
    let (caught_up, mut rx) = watch::channel(false);
    let (state, remote, id) = (state.clone(), remote.clone(), id.to_owned());
    tokio::spawn(async move {
        let end = follow(&state, &remote, &id, run, &caught_up).await;
        if let Err(e) = end {
            tracing::warn!(run = %id, error = %e, "following a run");
        }
        caught_up.send_replace(true);
        remote.following.remove(&id);
    });
    let _ = tokio::time::timeout(CATCH_UP, rx.wait_for(|done| *done)).await;
}

/// The run's plan, as it was submitted (a goal's plans are made on the worker: none).
async fn plan_of(remote: &Remote, id: &str) -> Option<Arc<ValidatedPlan>> {
    let spec = planwave_queue::run_plan(&remote.queue, id)
        .await
        .ok()
        .flatten()?;
    ValidatedPlan::new(spec).ok().map(Arc::new)
}

/// Shows where the queue has the run: `queued` until a worker has it.
fn show_state(live: &LiveRun, run: &RemoteRun) {
    let mut s = live.state();
    match run.record.state {
        QueueState::Queued => s.status = Some(crate::queue::QUEUED.into()),
        QueueState::Running if s.status.as_deref() == Some(crate::queue::QUEUED) => {
            s.status = None;
        }
        _ => {}
    }
}

async fn follow(
    state: &Arc<AppState>,
    remote: &Arc<Remote>,
    id: &str,
    first: RemoteRun,
    caught_up: &watch::Sender<bool>,
) -> Result<(), String> {
    let q = &remote.queue;
    let goal = first.record.kind == "goal";
    let plan = if goal {
        None
    } else {
        plan_of(remote, id).await
    };
    let dir = state.data.join(id);
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let live = LiveRun::new(
        id.to_owned(),
        dir,
        plan.is_none(),
        EventLog::default(),
        CancellationToken::new(),
        planwave_llm::PriceTable::default(),
    );
    let mut sink = plan.as_ref().map(|p| LiveWatch(live.clone()).open(p));
    show_state(&live, &first);
    state.insert_live(live.clone());
    let target = planwave_queue::journal_last_seq(q, id, goal)
        .await
        .map_err(|e| e.to_string())?;
    if target == 0 {
        caught_up.send_replace(true);
    }
    let mut journal = Box::pin(
        planwave_queue::follow_journal(q, id, goal)
            .await
            .map_err(|e| e.to_string())?,
    );
    let mut records = Box::pin(
        planwave_queue::watch_run(q, id)
            .await
            .map_err(|e| e.to_string())?,
    );
    let mut last = 0u64;
    // Once the record says it ended: the journal's last message then, and the record.
    let mut ended: Option<(u64, RemoteRun)> = None;
    let mut watching = true;
    loop {
        if let Some((end, _)) = &ended
            && last >= *end
        {
            break;
        }
        tokio::select! {
            m = journal.next() => {
                let Some((seq, shown)) = m else { break };
                last = seq;
                if let Some(shown) = shown {
                    show(&live, &mut sink, shown);
                }
                if last >= target {
                    caught_up.send_replace(true);
                }
            }
            r = records.next(), if watching && ended.is_none() => {
                let Some(run) = r else {
                    watching = false;
                    continue;
                };
                remote.remember(id, &run);
                show_state(&live, &run);
                if run.record.state.is_finished() {
                    // Its journal was committed before its verdict: read up to here.
                    let end = planwave_queue::journal_last_seq(q, id, goal)
                        .await
                        .unwrap_or(last);
                    ended = Some((end, run));
                }
            }
        }
    }
    let Some((_, run)) = ended else {
        live.finish(Err("lost the run's journal stream".into()));
        return Err("the journal stream ended".into());
    };
    let written = super::files::materialize(state, remote, id, &run).await;
    live.finish(Ok(run.record.state.as_str().to_owned()));
    state.retire(&live);
    written.map_err(|e| format!("{e:?}"))
}

/// One message's worth of the run on its live view: lines applied and logged; a goal
/// run's round plan opening the next pass (as the runner's watch opens one for a local
/// research); a message that is no piece of a run directory logged as `unreadable`.
fn show(live: &Arc<LiveRun>, sink: &mut Option<Arc<dyn Watcher>>, shown: Followed) {
    match shown {
        Followed::Lines(lines) => apply(live, sink.as_deref(), &lines),
        Followed::Plan(bytes) => match planwave_plan::parse_plan(&bytes).map(ValidatedPlan::new) {
            Ok(Ok(plan)) => *sink = Some(LiveWatch(live.clone()).open(&Arc::new(plan))),
            _ => tracing::warn!(run = %live.id, "a round's plan that does not validate; not shown"),
        },
        Followed::Unreadable(bytes) => live.log.push(&unreadable(bytes)),
    }
}

/// Applies each line of a journal message to the live run and appends it to its log. A line
/// that is too long or not a JSON object is logged as `{"type":"unreadable"}` instead.
pub fn apply(live: &LiveRun, sink: Option<&dyn Watcher>, payload: &[u8]) {
    let mut lines: Vec<String> = Vec::new();
    for piece in payload.split(|&b| b == b'\n') {
        if piece.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        lines.push(line_of(live, sink, piece));
    }
    live.log.push_all(lines.iter().map(String::as_str));
}

fn unreadable(bytes: usize) -> String {
    format!("{{\"type\":\"unreadable\",\"bytes\":{bytes}}}")
}

fn line_of(live: &LiveRun, sink: Option<&dyn Watcher>, piece: &[u8]) -> String {
    if piece.len() > MAX_EVENT_BYTES {
        return unreadable(piece.len());
    }
    let Ok(text) = std::str::from_utf8(piece) else {
        return unreadable(piece.len());
    };
    let text = text.trim();
    match serde_json::from_str::<Event>(text) {
        Ok(ev) => {
            seen(live, &ev);
            if let Some(sink) = sink {
                sink.emit(&ev);
            }
            text.to_owned()
        }
        Err(_) => match serde_json::from_str::<serde_json::Value>(text) {
            Ok(v) if v.is_object() => text.to_owned(),
            _ => unreadable(piece.len()),
        },
    }
}

/// What the live state learns from an event beyond what the engine's watch shows: the
/// run's start time, and a hand-over (a worker resuming it: the tasks the last one had
/// running are pending again until they start here).
fn seen(live: &LiveRun, ev: &Event) {
    match &ev.kind {
        EventKind::RunStarted { .. } => {
            let mut s = live.state();
            s.started_at = s.started_at.min(ev.ts);
        }
        EventKind::RunResumed { .. } => {
            for r in &mut live.state().records {
                if r.status == TaskStatus::Running {
                    r.status = TaskStatus::Pending;
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live() -> Arc<LiveRun> {
        LiveRun::new(
            "r".into(),
            std::env::temp_dir(),
            false,
            EventLog::default(),
            CancellationToken::new(),
            planwave_llm::PriceTable::default(),
        )
    }

    #[test]
    fn malformed_and_oversized_lines_keep_their_place_and_break_nothing() {
        let live = live();
        let big = format!(
            "{{\"type\":\"x\",\"pad\":\"{}\"}}",
            "a".repeat(MAX_EVENT_BYTES)
        );
        let mut payload = b"{\"type\":\"task_ready\",\"ts\":\"2026-01-01T00:00:00Z\",\"task\":1,\"wave\":0}\nnot json\n\xff\xfe\n[1,2]\n".to_vec();
        payload.extend_from_slice(big.as_bytes());
        payload.extend_from_slice(b"\n{\"type\":\"mystery\"}\n\n");
        apply(&live, None, &payload);
        let (n, frames) = live.log.since(0, 100);
        assert_eq!(n, 6, "one log entry per non-empty line");
        let text = String::from_utf8(frames.to_vec()).unwrap();
        let data: Vec<serde_json::Value> = text
            .lines()
            .filter_map(|l| l.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).expect("every frame is JSON"))
            .collect();
        let types: Vec<&str> = data.iter().map(|v| v["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "task_ready",
                "unreadable",
                "unreadable",
                "unreadable",
                "unreadable",
                "mystery"
            ]
        );
        assert!(text.len() < 4096, "the oversized line is not sent");
    }
}
