//! The planning loop: plan -> parse -> validate; while invalid, send the problems back and
//! ask for a corrected plan, up to `attempts` times. Every attempt is kept with its raw text.

use std::sync::Arc;

use crate::ask::{Attempt, AttemptKind, Question, ask};
use crate::clarifying::Answer;
use crate::questions::{Clarification, answer_schema_for};
use crate::schema::plan_schema_text_for;
use planwave_llm::{AgentRole, ChatMessage, LlmError, LlmProvider, RequestContext};
use planwave_record::Usage;
use std::collections::BTreeMap;

use planwave_plan::{
    FALLBACK_KEY, LLM_CALL, Lang, PlanFormat, PlanSpec, ToolCatalog, ValidatedPlan, parse_plan_str,
};
use planwave_prompts::{MetaEntry, PlannerTool, PlannerVars, PromptError, RepairVars, Templates};

/// The most tasks a plan may have unless told otherwise (`--max-tasks`; `planwave serve`'s
/// limit for posted plans has the same default).
pub const DEFAULT_TASK_LIMIT: usize = 1000;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannerConfig {
    /// Attempts in total, the first plan included.
    pub attempts: u32,
    /// The range of task counts the prompt asks for (a plan outside it is kept, with a
    /// warning).
    pub min_tasks: usize,
    pub max_tasks: usize,
    /// The most tasks a plan may have, whatever the model writes: a plan with more is
    /// invalid (the model is asked to repair it; planning fails if it never fits), and a plan
    /// that streams in stops growing there. What one goal can make a job cost.
    pub task_limit: usize,
    /// Forces the prompts' (and the plan's) language; `None` follows the goal.
    pub lang: Option<Lang>,
    /// Which plan the model is asked for: research tasks, or tool steps.
    pub format: PlanFormat,
    /// What happens after the last failed attempt: an error, or a one-task plan that answers
    /// the goal directly.
    pub fallback: Fallback,
    /// The job's metadata (`--meta`): shown in the planning prompt, kept in the plan for
    /// `{{meta.KEY}}`.
    pub meta: BTreeMap<String, String>,
    /// The domain's process specification (`[planner] process_spec`): how research in this
    /// domain is done, rendered in its own section of the planning prompt.
    pub process_spec: Option<String>,
    /// The model may answer a vague goal with clarifying questions instead of a plan (a
    /// research plan's first planning, with no answers yet; `--no-questions` turns it off).
    pub questions: bool,
    /// The user's answers to earlier questions, told to the model (which then must plan).
    pub answers: Vec<Clarification>,
}

impl Default for PlannerConfig {
    fn default() -> Self {
        PlannerConfig {
            attempts: 3,
            min_tasks: 4,
            max_tasks: 7,
            task_limit: DEFAULT_TASK_LIMIT,
            lang: None,
            format: PlanFormat::Research,
            fallback: Fallback::None,
            meta: BTreeMap::new(),
            process_spec: None,
            questions: true,
            answers: Vec::new(),
        }
    }
}

/// What planning does when no attempt produced a valid plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// Planning fails (exit 2 from the command line).
    #[default]
    None,
    /// A one-task plan that answers the goal directly, marked as a fallback.
    SingleTask,
}

impl std::str::FromStr for Fallback {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(Fallback::None),
            "single_task" | "single-task" => Ok(Fallback::SingleTask),
            other => Err(format!(
                "unknown fallback {other:?} (expected none or single_task)"
            )),
        }
    }
}

/// What planning produced.
#[derive(Debug)]
pub struct PlanOutcome {
    /// The valid plan, if any attempt produced one.
    pub plan: Option<ValidatedPlan>,
    pub attempts: Vec<Attempt>,
    /// A model error that ended planning early (authentication, bad request).
    pub fatal: Option<LlmError>,
    pub lang: Lang,
    /// The model asked these instead of planning: the goal is too vague.
    pub questions: Option<Vec<String>>,
}

/// Why planning produced no plan.
#[derive(Debug, Clone, thiserror::Error)]
pub enum PlanningFailed {
    /// A model error not worth another attempt (authentication, bad request) ended planning.
    #[error("planning failed: {0}")]
    Fatal(LlmError),
    /// The model never answered: an outage, not bad input.
    #[error(
        "planning failed: the model call failed on all {attempts} attempt(s); last error: {last}"
    )]
    Unavailable { attempts: usize, last: String },
    /// Answers came, but none was a valid plan: every problem of every attempt
    /// (`attempt K: ...`), then `no valid plan after N attempt(s)`.
    #[error("no valid plan after {attempts} attempt(s)")]
    Invalid {
        attempts: usize,
        problems: Vec<String>,
    },
    /// The goal is too vague to plan: the model asked these questions instead.
    #[error("the goal needs clarifying: {}", questions.join(" / "))]
    NeedsInput { questions: Vec<String> },
}

impl PlanOutcome {
    /// The plan, or why there is none.
    pub fn into_plan(self) -> Result<ValidatedPlan, PlanningFailed> {
        match (self.plan, self.questions) {
            (Some(plan), _) => Ok(plan),
            (None, Some(questions)) => Err(PlanningFailed::NeedsInput { questions }),
            (None, None) => Err(failure(self.attempts, self.fatal)),
        }
    }

    pub fn usage(&self) -> Usage {
        let mut u = Usage::default();
        for a in &self.attempts {
            u += a.usage;
        }
        u
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PlannerError {
    #[error("the goal is empty")]
    EmptyGoal,
    #[error(transparent)]
    Prompt(#[from] PromptError),
}

pub struct Planner {
    provider: Arc<dyn LlmProvider>,
    templates: Arc<Templates>,
    config: PlannerConfig,
    tools: Vec<PlannerTool>,
    /// A complete replan's failed steps (tool and error), for the request context.
    failed_tools: Vec<planwave_llm::ToolResultRef>,
    on_delta: Option<planwave_llm::DeltaSink>,
    /// The custom validator (`[validate] command`), asked about every plan that passes
    /// the built-in checks.
    validator: Option<Arc<dyn crate::PlanValidator>>,
}

impl Planner {
    pub fn new(
        provider: Arc<dyn LlmProvider>,
        templates: Arc<Templates>,
        config: PlannerConfig,
    ) -> Planner {
        Planner {
            provider,
            templates,
            config,
            tools: Vec::new(),
            failed_tools: Vec::new(),
            on_delta: None,
            validator: None,
        }
    }

    /// Plans must also pass `validator`: its problems go back to the model for repair, and
    /// planning stops if it fails.
    pub fn with_validator(mut self, validator: Option<Arc<dyn crate::PlanValidator>>) -> Planner {
        self.validator = validator;
        self
    }

    /// Tools the planner may suggest (none until tool support exists).
    /// The first attempt's answer goes to `sink` as it streams (executing a plan while it
    /// streams).
    pub fn with_stream(mut self, sink: planwave_llm::DeltaSink) -> Planner {
        self.on_delta = Some(sink);
        self
    }

    /// The tool catalogue a plan from this planner is checked against.
    pub fn catalog(&self) -> ToolCatalog {
        ToolCatalog::new(self.tools.iter().map(|t| t.name.clone()))
    }

    pub fn with_tools(mut self, tools: Vec<PlannerTool>) -> Planner {
        self.tools = tools;
        self
    }

    /// The tools of a failed plan's steps with their errors (a complete replan): the
    /// reflection names them for the model, the request context carries them too (as a
    /// step replan's does), so a server answering from the context knows them.
    pub fn with_failed_tools(mut self, failed: Vec<planwave_llm::ToolResultRef>) -> Planner {
        self.failed_tools = failed;
        self
    }

    /// Plans `goal`. `on_attempt` sees each attempt as soon as it is judged (to write it out,
    /// show progress). Never fails for an invalid plan: see [`PlanOutcome::plan`].
    pub async fn plan(
        &self,
        goal: &str,
        on_attempt: &mut (dyn FnMut(&Attempt) + Send),
    ) -> Result<PlanOutcome, PlannerError> {
        self.plan_with_reflection(goal, None, on_attempt).await
    }

    /// What a planning request is about (the simulator and the server read it): the tools,
    /// the questions allowed, and the schema the answer must follow.
    fn planning_context(&self, goal: &str, lang: Lang, reflection: Option<&str>) -> RequestContext {
        let steps = self.config.format == PlanFormat::Steps;
        RequestContext {
            lang,
            topic: goal.to_owned(),
            // Names only for a research plan: the prompt has the schemas, and the context
            // header must stay small. A step plan fills in parameters, so the (simulated)
            // model gets the schemas too.
            tools: self
                .tools
                .iter()
                .map(|t| planwave_llm::ToolRef {
                    name: t.name.clone(),
                    schema: if steps {
                        serde_json::from_str(&t.input_schema).unwrap_or_default()
                    } else {
                        serde_json::Value::Null
                    },
                })
                .collect(),
            tool_results: self.failed_tools.clone(),
            plan_format: steps.then_some(PlanFormat::Steps),
            questions_allowed: self.may_ask(reflection),
            answers: self
                .config
                .answers
                .iter()
                .map(|a| a.answer.clone())
                .collect(),
            answer_schema: Some(planwave_llm::AnswerSchema::new(
                if steps { "step_plan" } else { "research_plan" },
                crate::questions::with_questions(
                    crate::schema::bounded_plan_schema(self.config.format, self.task_range().1),
                    self.config.format,
                    self.may_ask(reflection),
                ),
            )),
            ..RequestContext::default()
        }
    }

    /// Plans `goal` for a later round of the reflective loop: the previous round's reflection
    /// summary goes into the planning prompt.
    pub async fn plan_with_reflection(
        &self,
        goal: &str,
        reflection: Option<&str>,
        on_attempt: &mut (dyn FnMut(&Attempt) + Send),
    ) -> Result<PlanOutcome, PlannerError> {
        let goal = goal.trim();
        let (first, lang) = self.first_prompt(goal, reflection)?;
        let steps = self.config.format == PlanFormat::Steps;
        let context = self.planning_context(goal, lang, reflection);
        let (min_tasks, max_tasks) = self.task_range();
        let shorter = |tokens: u64| crate::shorter::shorter_plan(lang, min_tasks, tokens);
        let repair = |n: u32, problems: &[String]| {
            self.templates.repair(
                lang,
                &RepairVars {
                    goal,
                    attempt: n,
                    problems,
                    min_tasks,
                    max_tasks,
                    steps,
                },
            )
        };
        let ask_allowed = self.may_ask(reflection);
        let judge = |raw: &str| self.judge_answer(raw, goal, ask_allowed);
        // The custom validator sees plans; questions have nothing for it to check.
        let check = |answer: &Answer| match (&self.validator, answer) {
            (Some(v), Answer::Plan(plan)) => crate::validator::check_of(v, plan),
            _ => Box::pin(async { Ok(Vec::new()) }) as crate::ask::CheckFuture,
        };
        let asked = ask(
            &self.provider,
            Question {
                role: AgentRole::Planner,
                messages: first,
                first: AttemptKind::Plan,
                context,
                attempts: self.config.attempts,
                repair: &repair,
                judge: &judge,
                check: self
                    .validator
                    .is_some()
                    .then_some(&check as &crate::Check<'_, Answer>),
                span: &plan_span,
                record: &record_plan_span,
                on_delta: self.on_delta.clone(),
                shorter: Some(&shorter),
            },
            on_attempt,
        )
        .await?;
        let (plan, questions) = match asked.value {
            Some(Answer::Plan(plan)) => (Some(*plan), None),
            Some(Answer::Questions(q)) => (None, Some(q)),
            None => (None, None),
        };
        let plan = match plan {
            None if questions.is_none()
                && asked.fatal.is_none()
                && self.config.fallback == Fallback::SingleTask =>
            {
                let why = failure(asked.attempts.clone(), None).to_string();
                Some(self.fallback_plan(goal, lang, &why))
            }
            other => other,
        };
        Ok(PlanOutcome {
            plan: plan.map(|plan| match self.config.lang {
                Some(l) => plan.with_lang(l),
                None => plan,
            }),
            attempts: asked.attempts,
            fatal: asked.fatal,
            lang,
            questions,
        })
    }

    /// The first planning request's messages and the plan's language: what the model is
    /// asked before any repair. A plan cache keys on it (the template's text, the goal, the
    /// tools with their schemas, the metadata and the format are all in it).
    pub fn first_prompt(
        &self,
        goal: &str,
        reflection: Option<&str>,
    ) -> Result<(Vec<ChatMessage>, Lang), PlannerError> {
        let goal = goal.trim();
        if goal.is_empty() {
            return Err(PlannerError::EmptyGoal);
        }
        let lang = self.config.lang.unwrap_or_else(|| Lang::detect(goal));
        let ask = self.may_ask(reflection);
        let schema = if ask {
            serde_json::to_string_pretty(&answer_schema_for(self.config.format, true))
                .unwrap_or_default()
        } else {
            plan_schema_text_for(self.config.format)
        };
        let (min_tasks, max_tasks) = self.task_range();
        let messages = self.templates.planner(
            lang,
            &PlannerVars {
                goal,
                tools: &self.tools,
                schema: &schema,
                min_tasks,
                max_tasks,
                reflection: reflection.map(str::trim).filter(|r| !r.is_empty()),
                meta: self
                    .config
                    .meta
                    .iter()
                    .map(|(key, value)| MetaEntry { key, value })
                    .collect(),
                steps: self.config.format == PlanFormat::Steps,
                process_spec: self.config.process_spec.as_deref(),
            },
        )?;
        let messages = self.with_clarifying(messages, lang, ask)?;
        Ok((messages, lang))
    }

    pub fn config(&self) -> &PlannerConfig {
        &self.config
    }

    pub(crate) fn templates(&self) -> &Templates {
        &self.templates
    }

    /// The range of task counts the prompts ask for: the configured one, within the limit.
    fn task_range(&self) -> (usize, usize) {
        let max = self.config.max_tasks.min(self.config.task_limit);
        (self.config.min_tasks.min(max), max)
    }

    /// The problem of a plan with more tasks than the limit (told to the model in the repair
    /// prompt, and to the user if planning fails).
    fn over_limit(&self, n: usize) -> Option<String> {
        let limit = self.config.task_limit;
        (n > limit).then(|| {
            format!(
                "the plan has {n} tasks; at most {limit} are allowed (--max-tasks {limit}): write fewer, broader tasks"
            )
        })
    }

    /// The tools the prompt lists.
    pub fn tools(&self) -> &[PlannerTool] {
        &self.tools
    }

    /// Parse and validate one answer: the plan with warnings, or every problem found.
    /// The plan run while the answer streams: the tasks admitted so far under what the
    /// answer said before its task array (`header`, see `TaskStream::header`), normalized as
    /// [`Planner::judge`] normalizes the whole answer, so a task that stays unchanged is the
    /// same task in the final plan. `None` when those tasks are no valid plan yet.
    pub fn provisional(
        &self,
        header: Option<&str>,
        format: PlanFormat,
        tasks: Vec<planwave_plan::TaskSpec>,
        goal: &str,
    ) -> Option<ValidatedPlan> {
        // Beyond the limit the plan so far stops growing: no more of its tasks start before
        // the whole answer is judged (and, over the limit, repaired or refused).
        if tasks.len() > self.config.task_limit {
            return None;
        }
        let mut spec = header
            .and_then(|h| parse_plan_str(h).ok())
            .unwrap_or_default();
        spec.tasks = tasks;
        spec.format = format;
        spec.about.meta = self.config.meta.clone();
        if spec.topic.trim().is_empty() {
            spec.topic = goal.trim().to_owned();
        }
        let plan = ValidatedPlan::with_tools(spec, &self.catalog()).ok()?;
        Some(match self.config.lang {
            Some(l) => plan.with_lang(l),
            None => plan,
        })
    }

    pub fn judge(
        &self,
        raw: &str,
        goal: &str,
    ) -> Result<(ValidatedPlan, Vec<String>), Vec<String>> {
        if raw.trim().is_empty() {
            return Err(vec!["the answer was empty; expected a JSON plan".into()]);
        }
        let mut spec: PlanSpec = parse_plan_str(raw)
            .map_err(|e| e.to_string().lines().map(str::to_owned).collect::<Vec<_>>())?;
        // Before validating it: a plan of a million tasks costs nothing more to refuse.
        if let Some(p) = self.over_limit(spec.tasks.len()) {
            return Err(vec![p]);
        }
        let mut problems = self.format_problems(&spec);
        // The job's metadata is the runner's, not the model's: `{{meta.KEY}}` reads it.
        spec.about.meta = self.config.meta.clone();
        let mut warnings = Vec::new();
        if spec.topic.trim().is_empty() {
            spec.topic = goal.to_owned();
            warnings.push("the plan has no topic; the goal is used".into());
        }
        let catalog = ToolCatalog::new(self.tools.iter().map(|t| t.name.clone()));
        let plan = match ValidatedPlan::with_tools(spec, &catalog) {
            Ok(p) if problems.is_empty() => p,
            Ok(_) => return Err(problems),
            Err(e) => {
                problems.extend(e.0.iter().map(|p| p.to_string()));
                return Err(problems);
            }
        };
        warnings.extend(plan.warnings().iter().map(|w| w.to_string()));
        let plan = identify(plan, &mut warnings);
        let n = plan.len();
        let (min, max) = self.task_range();
        if n < min || n > max {
            warnings.push(format!(
                "the plan has {n} tasks; {min}-{max} is the default"
            ));
        }
        Ok((plan, warnings))
    }
}

impl Planner {
    /// The plan when planning has failed: rather than no answer at all, one task that
    /// answers the goal directly, marked in its metadata so the run and its report say
    /// what happened.
    fn fallback_plan(&self, goal: &str, lang: Lang, why: &str) -> ValidatedPlan {
        let description = match lang {
            Lang::Zh => format!("直接回答研究目标：{goal}"),
            Lang::En => format!("Answer the research goal directly: {goal}"),
        };
        let mut spec = PlanSpec {
            topic: goal.to_owned(),
            tasks: vec![planwave_plan::TaskSpec::new(1, description, Vec::new())],
            ..PlanSpec::default()
        };
        spec.about.meta = self.config.meta.clone();
        spec.about.metadata.insert(
            FALLBACK_KEY.into(),
            serde_json::Value::String(why.to_owned()),
        );
        // One task without dependencies or tools cannot be invalid.
        let plan = ValidatedPlan::new(spec).unwrap_or_else(|e| unreachable!("fallback plan: {e}"));
        identify(plan, &mut Vec::new())
    }

    /// What the answer's shape gets wrong for the format asked for: a research plan's tasks
    /// take no tool; a step plan's steps each run an available tool or `llm_call`.
    fn format_problems(&self, spec: &PlanSpec) -> Vec<String> {
        let known = |tool: &str| tool == LLM_CALL || self.tools.iter().any(|x| x.name == tool);
        let mut problems = Vec::new();
        match self.config.format {
            PlanFormat::Research => {
                for t in &spec.tasks {
                    if let Some(tool) = &t.tool
                        && !known(tool)
                    {
                        problems.push(format!(
                            "task {}: tool {tool} is not available; research tasks are chapters for a subagent, without a tool",
                            t.id
                        ));
                    }
                }
            }
            PlanFormat::Steps => {
                if spec.format != PlanFormat::Steps && !spec.tasks.is_empty() {
                    problems.push(
                        "expected an execution plan with \"steps\" (each with a tool and params), not research \"tasks\"".into(),
                    );
                }
                for t in &spec.tasks {
                    if t.tool.as_deref().is_none_or(|x| x.trim().is_empty()) {
                        problems.push(format!(
                            "step {}: no tool; every step names an available tool or llm_call",
                            t.id
                        ));
                    }
                }
            }
        }
        problems
    }
}

/// Every plan the planner writes gets its own identity: a UUID (v7, so ids sort by creation)
/// and the time it was written. A `plan_id` or `created_at` the model wrote is replaced, with
/// a warning saying so: the model cannot know whether its id is unique.
fn identify(plan: ValidatedPlan, warnings: &mut Vec<String>) -> ValidatedPlan {
    let about = &plan.spec().about;
    if let Some(id) = &about.plan_id {
        warnings.push(format!(
            "the plan's plan_id {id:?} is replaced by the planner's own"
        ));
    }
    if let Some(at) = &about.created_at {
        warnings.push(format!(
            "the plan's created_at {at} is replaced by the time the planner wrote it"
        ));
    }
    plan.with_identity(
        uuid::Uuid::now_v7().to_string(),
        planwave_record::timefmt::format(&planwave_record::timefmt::now()),
    )
}

/// One `plan` span per attempt; its model call is a child. Status is set with the
/// `otel.status_*` fields so this crate needs no OpenTelemetry types.
fn plan_span(n: u32, kind: AttemptKind) -> tracing::Span {
    tracing::info_span!(
        target: "planwave::planner",
        "plan",
        planwave.plan.attempt = i64::from(n),
        planwave.plan.kind = kind.as_str(),
        planwave.plan.valid = tracing::field::Empty,
        planwave.plan.problems = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
        otel.status_description = tracing::field::Empty,
    )
}

fn record_plan_span(span: &tracing::Span, a: &Attempt) {
    span.record("planwave.plan.valid", a.valid);
    if let Some(e) = &a.error {
        span.record("otel.status_code", "error");
        span.record("otel.status_description", e.as_str());
    } else if !a.valid {
        span.record("planwave.plan.problems", a.problems.join("; ").as_str());
        span.record("otel.status_code", "error");
        span.record("otel.status_description", "the plan is invalid");
    }
}

/// Why the attempts gave no plan.
fn failure(attempts: Vec<Attempt>, fatal: Option<LlmError>) -> PlanningFailed {
    if let Some(fatal) = fatal {
        return PlanningFailed::Fatal(fatal);
    }
    let n = attempts.len();
    if attempts.iter().all(|a| a.error.is_some())
        && let Some(last) = attempts.last().and_then(|a| a.error.clone())
    {
        return PlanningFailed::Unavailable { attempts: n, last };
    }
    let mut problems = Vec::new();
    for a in &attempts {
        if let Some(e) = &a.error {
            problems.push(format!("attempt {}: model call failed: {e}", a.attempt));
        }
        for p in &a.problems {
            problems.push(format!("attempt {}: {p}", a.attempt));
        }
    }
    problems.push(format!("no valid plan after {n} attempt(s)"));
    PlanningFailed::Invalid {
        attempts: n,
        problems,
    }
}
