//! [`execute_streaming`]: a run that starts while its plan is still streaming in. The caller
//! feeds the plan as it grows (the tasks admitted so far, see [`crate::Admission`]) and then
//! the whole validated plan; one supervisor runs throughout, rebuilt at each step (see
//! `supervisor::rebase`). Everything after the close is the ordinary run: integration, the
//! report and `run.json` of the final plan.

use std::sync::Arc;

use planwave_plan::ValidatedPlan;
use planwave_record::{CancelReason, RunResult};
use tokio::sync::mpsc;

use crate::error::EngineError;
use crate::messages::{Close, Rebase, SupervisorMsg};
use crate::run::{
    RunRequest, Running, Started, announce, conclude, lost, prepare, spawn_supervisor,
    watch_for_stop,
};

/// The plan as it streams.
pub enum PlanFeed {
    /// The tasks admitted so far: the previous plan's tasks first, in the same order.
    Grow(Arc<ValidatedPlan>),
    /// The whole answer, validated: `valid` is false when a repair was needed, `problems`
    /// are the first answer's.
    Close {
        plan: Arc<ValidatedPlan>,
        valid: bool,
        problems: Vec<String>,
    },
}

/// Runs a plan fed as it streams: `req.plan` is the plan so far (at least one task
/// admitted), `feed` brings the rest. `None` when the feed ended without a final plan
/// (planning failed or was interrupted) or the run was cancelled before it: whatever started
/// was stopped, and nothing of the run is recorded but its events.
pub async fn execute_streaming(
    mut req: RunRequest,
    mut feed: mpsc::UnboundedReceiver<PlanFeed>,
) -> Result<Option<RunResult>, EngineError> {
    let started = Started::now(&req);
    let mut shared = prepare(&req, req.plan.clone());
    let _mcp_events = crate::mcp_events::attach(&shared);
    announce(&req, &shared);
    let mut run = spawn_supervisor(&shared, &req, Vec::new(), true, started.clock).await?;
    let watcher = watch_for_stop(req.cancel.clone(), req.deadline, &run.supervisor);
    let closed = loop {
        let msg = tokio::select! {
            // Cancelled (or lost) before the plan closed.
            _ = &mut run.done => None,
            msg = feed.recv() => Some(msg),
        };
        match msg {
            None => {
                watcher.abort();
                run.stopped().await;
                return Ok(None);
            }
            Some(None) => {
                watcher.abort();
                let cancel = SupervisorMsg::Cancel(CancelReason::Interrupted);
                let _ = run.supervisor.send_message(cancel);
                let _ = run.outcome().await;
                return Ok(None);
            }
            Some(Some(PlanFeed::Grow(plan))) => {
                let map = (0..shared.plan.len()).map(Some).collect();
                let next = prepare(&req, plan);
                rebase(&run, next.clone(), map, None);
                shared = next;
            }
            Some(Some(PlanFeed::Close {
                plan,
                valid,
                problems,
            })) => break (plan, valid, problems),
        }
    };
    let (plan, valid, problems) = closed;
    let next = prepare(&req, plan.clone());
    if let Some(out) = &req.output {
        out.write_json("plan.json", plan.spec())?;
    }
    let map = crate::stream_plan::keep_map(
        &shared.plan,
        &plan,
        &shared.section_files,
        &next.section_files,
    );
    rebase(&run, next.clone(), map, Some(Close { valid, problems }));
    req.plan = plan;
    let outcome = run.outcome().await;
    watcher.abort();
    match outcome {
        // Cancelled before the closing rebase arrived: no report.
        Ok(outcome) if outcome.integration.is_none() => Ok(None),
        Ok(outcome) => conclude(&req, &next, outcome, started).map(Some),
        Err(e) => Err(lost(&req, e)),
    }
}

/// The supervisor's next plan.
fn rebase(
    run: &Running,
    shared: Arc<crate::shared::RunShared>,
    map: Vec<Option<usize>>,
    close: Option<Close>,
) {
    let rebase = Rebase { shared, map, close };
    let _ = run
        .supervisor
        .send_message(SupervisorMsg::Rebase(Box::new(rebase)));
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::Duration;

    use planwave_plan::{PlanSpec, TaskId, TaskSpec};
    use planwave_sim::{Latency, SimConfig, SimProvider};

    use super::*;
    use planwave_record::{Event, EventKind, EventSink, TaskStatus};

    /// Hands every event to the test as it happens.
    struct Tap(mpsc::UnboundedSender<Event>);

    impl EventSink for Tap {
        fn emit(&self, event: &Event) {
            let _ = self.0.send(event.clone());
        }
    }

    fn plan(tasks: Vec<TaskSpec>) -> Arc<ValidatedPlan> {
        Arc::new(
            ValidatedPlan::new(PlanSpec {
                topic: "t".into(),
                tasks,
                ..PlanSpec::default()
            })
            .expect("valid"),
        )
    }

    fn id(s: &str) -> TaskId {
        TaskId::from(s)
    }

    /// Task `slow` is still running when the plan closes without it; `quick` has completed
    /// and is kept; the final plan adds a task that builds on `quick`.
    #[tokio::test]
    async fn a_closing_plan_stops_dropped_tasks_and_keeps_finished_ones() {
        let mut slow = HashMap::new();
        slow.insert("slow".to_owned(), Duration::from_secs(600));
        let provider = SimProvider::new(SimConfig {
            latency: Latency::from_mean(0.0, 0.0),
            latency_overrides: slow,
            ..SimConfig::default()
        });
        let (tap, mut events) = mpsc::unbounded_channel();
        let early = plan(vec![
            TaskSpec::new("slow", "a slow task", vec![]),
            TaskSpec::new("quick", "a quick task", vec![]),
        ]);
        let (feed_tx, feed) = mpsc::unbounded_channel();
        let run = tokio::spawn(execute_streaming(
            RunRequest {
                sink: Arc::new(Tap(tap)),
                ..RunRequest::in_memory(early, Arc::new(provider))
            },
            feed,
        ));
        // The quick task completes while the plan is open; the run does not end.
        let mut seen = Vec::new();
        loop {
            let e = events.recv().await.expect("an event");
            let done =
                matches!(&e.kind, EventKind::TaskCompleted { task, .. } if *task == id("quick"));
            seen.push(e.kind);
            if done {
                break;
            }
        }
        let fin = plan(vec![
            TaskSpec::new("other", "instead of the slow one", vec![]),
            TaskSpec::new("quick", "a quick task", vec![]),
            TaskSpec::new("after", "builds on quick", vec![id("quick")]),
        ]);
        feed_tx
            .send(PlanFeed::Close {
                plan: fin,
                valid: false,
                problems: vec!["repaired".into()],
            })
            .expect("feed");
        let result = run.await.expect("joined").expect("ran").expect("closed");
        assert_eq!(result.stats.tasks, 3);
        assert!(
            result
                .tasks
                .iter()
                .all(|t| t.status == TaskStatus::Completed)
        );
        let ids: Vec<TaskId> = result.tasks.iter().map(|t| t.id.clone()).collect();
        assert_eq!(ids, vec![id("other"), id("quick"), id("after")]);
        // `quick` was asked once; the killed `slow` never finished its call.
        let calls = |t: &str| {
            result
                .calls
                .iter()
                .filter(|c| c.task.as_ref() == Some(&id(t)))
                .count()
        };
        assert_eq!((calls("quick"), calls("after"), calls("slow")), (1, 1, 0));
        assert_eq!(result.tasks[2].context_from, vec![id("quick")]);
        while let Ok(e) = events.try_recv() {
            seen.push(e.kind);
        }
        let completed = seen
            .iter()
            .find_map(|k| match k {
                EventKind::PlanCompleted {
                    kept, cancelled, ..
                } => Some((kept.clone(), cancelled.clone())),
                _ => None,
            })
            .expect("plan_completed");
        assert_eq!(completed, (vec![id("quick")], vec![id("slow")]));
        let starts = |t: &str| {
            seen.iter()
                .filter(|k| matches!(k, EventKind::TaskStarted { task, .. } if *task == id(t)))
                .count()
        };
        assert_eq!(
            (starts("quick"), starts("other"), starts("after")),
            (1, 1, 1)
        );
    }

    /// Before the close a plan only grows: a task added later starts once its prerequisite,
    /// which ran under the smaller plan, has completed.
    #[tokio::test]
    async fn a_growing_plan_starts_new_tasks_on_earlier_results() {
        let (tap, mut events) = mpsc::unbounded_channel();
        let first = plan(vec![TaskSpec::new(1, "one", vec![])]);
        let grown = plan(vec![
            TaskSpec::new(1, "one", vec![]),
            TaskSpec::new(2, "two", vec![TaskId::Int(1)]),
        ]);
        let (feed_tx, feed) = mpsc::unbounded_channel();
        let run = tokio::spawn(execute_streaming(
            RunRequest {
                sink: Arc::new(Tap(tap)),
                ..RunRequest::in_memory(
                    first,
                    Arc::new(SimProvider::new(SimConfig {
                        latency: Latency::from_mean(0.0, 0.0),
                        ..SimConfig::default()
                    })),
                )
            },
            feed,
        ));
        loop {
            let e = events.recv().await.expect("an event");
            if matches!(e.kind, EventKind::TaskCompleted { .. }) {
                break;
            }
        }
        feed_tx.send(PlanFeed::Grow(grown.clone())).expect("feed");
        feed_tx
            .send(PlanFeed::Close {
                plan: grown,
                valid: true,
                problems: Vec::new(),
            })
            .expect("feed");
        let result = run.await.expect("joined").expect("ran").expect("closed");
        assert_eq!(result.stats.completed, 2);
        assert_eq!(result.tasks[1].context_from, vec![TaskId::Int(1)]);
        assert_eq!(
            result.calls.iter().filter(|c| c.role == "subagent").count(),
            2
        );
    }

    /// A feed that ends without a close (planning failed) stops the run and records nothing.
    #[tokio::test]
    async fn a_feed_without_a_close_stops_the_run() {
        let (feed_tx, feed) = mpsc::unbounded_channel::<PlanFeed>();
        drop(feed_tx);
        let got = execute_streaming(
            RunRequest::in_memory(
                plan(vec![TaskSpec::new(1, "one", vec![])]),
                Arc::new(SimProvider::new(SimConfig::default())),
            ),
            feed,
        )
        .await
        .expect("no engine error");
        assert!(got.is_none());
    }
}
