//! [`execute_streaming`]: a run that starts while its plan is still streaming in. The caller
//! feeds the plan as it grows (the tasks admitted so far, see [`crate::Admission`]) and then
//! the whole validated plan; one supervisor runs throughout, rebuilt at each step (see
//! `supervisor::rebase`). Everything after the close is the ordinary run: integration, the
//! report and `run.json` of the final plan.

use std::sync::Arc;
use std::time::Instant;

use planwave_plan::ValidatedPlan;
use tokio::sync::mpsc;

use crate::outcome::{CancelReason, RunResult};
use crate::run::{
    Ended, EngineError, RunRequest, announce, conclude, prepare, spawn_integrator,
    spawn_supervisor, watch_for_stop,
};
use crate::supervisor::{Close, Rebase, SupervisorMsg};
use crate::timefmt;

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
    let first = req.plan.clone();
    let started_at = timefmt::now();
    let clock = Instant::now();
    let retries_before = req.provider.retry_counts();
    let calls: crate::shared::Calls = Default::default();
    let (mut shared, _) = prepare(&req, first, calls.clone());
    let _mcp_events = crate::mcp_events::attach(&shared);
    announce(&req, &shared);
    let (supervisor, supervisor_join, mut done) =
        spawn_supervisor(&shared, None, Vec::new(), true).await?;
    let watcher = watch_for_stop(req.cancel.clone(), req.deadline, &supervisor);
    let closed = loop {
        let msg = tokio::select! {
            // Cancelled (or lost) before the plan closed.
            _ = &mut done => None,
            msg = feed.recv() => Some(msg),
        };
        match msg {
            None => {
                watcher.abort();
                let _ = supervisor_join.await;
                return Ok(None);
            }
            Some(None) => {
                watcher.abort();
                supervisor
                    .send_message(SupervisorMsg::Cancel(CancelReason::Interrupted))
                    .ok();
                let _ = (&mut done).await;
                let _ = supervisor_join.await;
                return Ok(None);
            }
            Some(Some(PlanFeed::Grow(plan))) => {
                let map = (0..shared.plan.len()).map(Some).collect();
                let (next, _) = prepare(&req, plan, calls.clone());
                let rebase = Rebase {
                    shared: next.clone(),
                    map,
                    close: None,
                };
                let _ = supervisor.send_message(SupervisorMsg::Rebase(Box::new(rebase)));
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
    let (next, files) = prepare(&req, plan.clone(), calls);
    if let Some(out) = &req.output {
        out.write_json("plan.json", plan.spec())?;
    }
    let map = crate::stream_plan::keep_map(
        &shared.plan,
        &plan,
        &shared.section_files,
        &next.section_files,
    );
    let (integrator, integrator_join) = spawn_integrator(&next, &files).await?;
    let rebase = Rebase {
        shared: next.clone(),
        map,
        close: Some(Close {
            integrator: integrator.clone(),
            valid,
            problems,
        }),
    };
    let _ = supervisor.send_message(SupervisorMsg::Rebase(Box::new(rebase)));
    req.plan = plan;
    let outcome = done.await;
    watcher.abort();
    let Ok(outcome) = outcome else {
        integrator.stop(None);
        return Err(EngineError::Lost("supervisor"));
    };
    let _ = supervisor_join.await;
    let ended = Ended {
        started_at,
        clock,
        retries_before,
        integrator,
        integrator_join,
    };
    conclude(&req, &next, &files, outcome, ended)
        .await
        .map(Some)
}
