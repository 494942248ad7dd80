//! A goal to a plan: the planner's loop with a note per attempt, cancellable, and what its
//! failure means for the job (bad input, or a model that never answered).

use planwave_engine::{Event, EventKind};
use planwave_llm::AgentRole;
use planwave_planner::{Attempt, PlanOutcome, Planner, PlannerConfig, PlanningFailed};
use tokio_util::sync::CancellationToken;

use crate::{InvalidInput, Notes, Resources, RunnerError};

pub struct PlanRequest<'a> {
    pub goal: &'a str,
    /// The previous round's reflection (the reflective loop's later rounds).
    pub reflection: Option<&'a str>,
    /// The model client, and the MCP servers whose tools the planner's prompt lists.
    pub resources: &'a Resources,
    pub config: PlannerConfig,
    /// No note per attempt.
    pub quiet: bool,
    pub cancel: &'a CancellationToken,
    pub notes: &'a dyn Notes,
}

/// A planning attempt's model call as the journal records it.
pub fn planner_call_event(a: &Attempt) -> Event {
    Event::now(EventKind::LlmCall {
        task: None,
        role: AgentRole::Planner.as_str().into(),
        model: a.model.clone(),
        attempt: a.attempt,
        duration_ms: a.duration_ms,
        usage: a.usage,
        error: a.error.clone(),
    })
}

/// One line per attempt.
pub fn describe_attempt(a: &Attempt) -> String {
    let what = if a.valid {
        format!("valid plan ({} tokens)", a.usage.total())
    } else if let Some(e) = &a.error {
        format!("model call failed: {e}")
    } else {
        format!("{} problem(s): {}", a.problems.len(), a.problems.join("; "))
    };
    format!("planning attempt {} ({}): {what}", a.attempt, a.kind)
}

/// Runs the planner; `None` when cancelled. `on_attempt` sees every attempt as it ends.
pub async fn plan_goal(
    req: PlanRequest<'_>,
    on_attempt: &mut (dyn FnMut(&Attempt) + Send),
) -> crate::Result<Option<PlanOutcome>> {
    if req.goal.trim().is_empty() {
        return Err(InvalidInput::one("goal", "the goal is empty").into());
    }
    let planner = Planner::new(
        req.resources.provider.clone(),
        req.resources.templates.clone(),
        req.config,
    )
    .with_tools(req.resources.planner_tools());
    let (quiet, notes) = (req.quiet, req.notes);
    let mut report = |a: &Attempt| {
        if !quiet {
            notes.note(&describe_attempt(a));
        }
        on_attempt(a);
    };
    let result = tokio::select! {
        r = planner.plan_with_reflection(req.goal, req.reflection, &mut report) => Some(r),
        _ = req.cancel.cancelled() => None,
    };
    match result {
        None => Ok(None),
        Some(r) => Ok(Some(r.map_err(|e| RunnerError::Other(Box::new(e)))?)),
    }
}

/// What a planning failure means for a job: no valid plan is bad input (every problem of
/// every attempt, under `planner`); a model that never answered or refused is not.
impl From<PlanningFailed> for RunnerError {
    fn from(e: PlanningFailed) -> RunnerError {
        match e {
            PlanningFailed::Invalid { problems, .. } => RunnerError::Invalid(InvalidInput {
                source_name: "planner".into(),
                problems,
            }),
            other => RunnerError::message(other.to_string()),
        }
    }
}

/// What a planning failure says on one line: every problem of bad input, or the error.
pub fn failure_detail(e: &PlanningFailed) -> String {
    match e {
        PlanningFailed::Invalid { problems, .. } => problems.join("; "),
        other => other.to_string(),
    }
}
