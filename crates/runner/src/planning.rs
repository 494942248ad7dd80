//! A goal to a plan: the planner's loop with a note per attempt, cancellable, and what its
//! failure means for the job (bad input, or a model that never answered).

use planwave_llm::AgentRole;
use planwave_planner::{Attempt, PlanOutcome, Planner, PlannerConfig, PlanningFailed};
use planwave_record::{Event, EventKind, PlanSource};
use tokio_util::sync::CancellationToken;

use crate::plan_cache::PlanCache;
use crate::{InvalidInput, Notes, Resources, RunnerError};

pub struct PlanRequest<'a> {
    pub goal: &'a str,
    /// The previous round's reflection (the reflective loop's later rounds).
    pub reflection: Option<&'a str>,
    /// A complete replan's failed steps: each one's tool and error, for the planner's
    /// request context (the reflection names them for the model to read).
    pub failed_tools: &'a [planwave_llm::ToolResultRef],
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
    let planner = planner_for(&req)?;
    run_planner(&planner, &req, on_attempt).await
}

/// A goal's plan and where it came from.
pub struct GoalPlan {
    /// A cache hit has the plan and no attempt.
    pub outcome: PlanOutcome,
    /// [`PlanSource::Cache`] or [`PlanSource::Planner`].
    pub source: PlanSource,
}

/// [`plan_goal`] through the plan cache: a hit makes no model call; a valid plan from the
/// planner (not the single-task fallback) is stored. A request told a reflection is never
/// cached: its prompt is about one earlier round.
pub async fn plan_goal_cached(
    req: PlanRequest<'_>,
    cache: Option<&PlanCache>,
    on_attempt: &mut (dyn FnMut(&Attempt) + Send),
) -> crate::Result<Option<GoalPlan>> {
    let planner = planner_for(&req)?;
    let cache = cache.filter(|_| req.reflection.is_none());
    let model = req.resources.provider.model_for(AgentRole::Planner);
    let key = cache.and_then(|_| PlanCache::key(&planner, req.goal, &model));
    if let (Some(cache), Some(key)) = (cache, &key) {
        let tools = req.resources.catalog();
        // A cached plan is one the model wrote: over this job's task limit it is not used.
        let hit = cache
            .load(key, req.goal, &tools, &req.config.meta, req.notes)
            .filter(|plan| plan.len() <= req.config.task_limit);
        if let Some(mut plan) = hit {
            // As the planner does: a forced language is the plan's, not its text's.
            if let Some(l) = req.config.lang {
                plan = plan.with_lang(l);
            }
            if !req.quiet {
                req.notes.note(&format!(
                    "plan from the cache: {} tasks ({})",
                    plan.len(),
                    cache.dir().join(format!("{}.json", key.as_str())).display()
                ));
            }
            let lang = req
                .config
                .lang
                .unwrap_or_else(|| planwave_plan::Lang::detect(req.goal.trim()));
            let outcome = PlanOutcome {
                plan: Some(plan),
                attempts: Vec::new(),
                fatal: None,
                lang,
            };
            return Ok(Some(GoalPlan {
                outcome,
                source: PlanSource::Cache,
            }));
        }
    }
    let Some(outcome) = run_planner(&planner, &req, on_attempt).await? else {
        return Ok(None);
    };
    if let (Some(cache), Some(key), Some(plan)) = (cache, &key, &outcome.plan)
        && plan.spec().about.fallback().is_none()
    {
        cache.store(key, req.goal, &model, plan, req.notes);
    }
    Ok(Some(GoalPlan {
        outcome,
        source: PlanSource::Planner,
    }))
}

pub(crate) fn planner_for(req: &PlanRequest<'_>) -> crate::Result<Planner> {
    if req.goal.trim().is_empty() {
        return Err(InvalidInput::one("goal", "the goal is empty").into());
    }
    Ok(Planner::new(
        req.resources.provider.clone(),
        req.resources.templates.clone(),
        req.config.clone(),
    )
    .with_tools(req.resources.planner_tools())
    .with_failed_tools(req.failed_tools.to_vec()))
}

pub(crate) async fn run_planner(
    planner: &Planner,
    req: &PlanRequest<'_>,
    on_attempt: &mut (dyn FnMut(&Attempt) + Send),
) -> crate::Result<Option<PlanOutcome>> {
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
            // The request can never fit as configured: the settings or the goal must change.
            PlanningFailed::Fatal(e) if e.is_context_overflow() => {
                RunnerError::Invalid(InvalidInput {
                    source_name: "planner".into(),
                    problems: vec![e.to_string()],
                })
            }
            other => RunnerError::message(other.to_string()),
        }
    }
}
