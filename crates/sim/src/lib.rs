//! The simulated LLM: a real provider behind [`planwave_llm::LlmProvider`], deterministic for
//! a seed, with lognormal latency, paced token streams and scripted faults, for offline runs,
//! tests and load tests (`--llm sim`, and `planwave sim-llm serve` over HTTP).
//!
//! Main types: [`SimProvider`] (the provider), [`SimConfig`] (seed, [`Latency`],
//! [`TokenRate`], the faults: failing, flaky, panicking and terse tasks, [`PlannerFault`]s and
//! the reflective loop's [`ReflectScript`]). It answers every role from the request's
//! [`RequestContext`](planwave_llm::RequestContext), in the plan's language, and says in its
//! text that its figures are simulated; [`timer`] is its sub-millisecond sleep.
//! [`ServerStats`] is what `sim-llm serve` reports about itself (`/planwave/stats`), plain
//! data shared by the server and the load tester that reads it.
//!
//! It knows nothing of the HTTP client, run directories, actors or the CLI: callers cannot
//! tell it from a model except by [`ProviderInfo::simulated`].

#[cfg(test)]
mod call_size_tests;
mod latency;
mod length;
mod pace;
pub mod plan;
pub mod prefix_cache;
pub mod reflect;
mod stats;
pub mod steps;
mod text;
#[cfg(test)]
mod text_reference;
pub mod timer;
mod tools;

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use planwave_llm::{AgentRole, ChatRequest, ChatResponse, LlmError, LlmProvider};
use planwave_record::{ProviderInfo, Usage, stable_hash};

pub use latency::Latency;
pub use length::{AnswerLength, MAX_MODEL_LEN, max_tokens_problem};
pub use pace::TokenRate;
pub use plan::PlannerFault;
pub use prefix_cache::{CacheLookup, PrefixCache, PrefixCacheConfig, PrefixCacheStats};
pub use reflect::{FaultKind, ReflectScript, TaskFault};
pub use stats::{ServerStats, ServingStats};

/// Scripted behaviour of the simulator. Task ids are matched by their text (`1`, `step_1`).
#[derive(Clone, Debug, Default)]
pub struct SimConfig {
    pub seed: u64,
    pub latency: Latency,
    /// Tasks that fail on every attempt (a transient error, so retries are exercised).
    pub fail: HashSet<String>,
    /// Tasks that fail their first attempt only.
    pub flaky: HashSet<String>,
    /// Tasks whose subagent panics inside the model call.
    pub panic: HashSet<String>,
    /// Tasks answered with a short section without figures (one sentence), as a terse model
    /// would write: exercises the engine's data-quality warnings.
    pub terse: HashSet<String>,
    /// Fixed latency for particular tasks, overriding `latency` (replayable workloads).
    pub latency_overrides: HashMap<String, Duration>,
    /// Planner faults by planning attempt: entry k applies to attempt k + 1; attempts past
    /// the list get a valid plan.
    pub planner_faults: Vec<PlannerFault>,
    /// Scores, replan decisions, invalid answers and task failures of the reflective loop.
    pub reflect: ReflectScript,
    /// Output tokens per second (per role); with a rate the latency above is the time to
    /// the first token and the answer streams after it. Default: all at once.
    pub token_rate: TokenRate,
    /// Automatic prefix caching: usage then reports the cached part of each prompt.
    /// `None`: no cache, nothing reported cached.
    pub prefix_cache: Option<PrefixCacheConfig>,
}

pub const SIM_MODEL: &str = "planwave-sim-1";

#[derive(Debug, Default)]
pub struct SimProvider {
    config: SimConfig,
    /// Shared by every call, as a server's cache is shared by every request.
    cache: Option<std::sync::Mutex<PrefixCache>>,
}

impl SimProvider {
    pub fn new(config: SimConfig) -> Self {
        SimProvider {
            cache: config
                .prefix_cache
                .map(|c| std::sync::Mutex::new(PrefixCache::new(c))),
            config,
        }
    }

    /// The prefix cache's counts, when it has one.
    pub fn prefix_cache_stats(&self) -> Option<PrefixCacheStats> {
        let cache = self.cache.as_ref()?.lock().ok()?;
        Some(cache.stats())
    }

    /// Tokens of `messages` found in the prefix cache (0 without one); caches them.
    fn cached_tokens(&self, messages: &[planwave_llm::ChatMessage], now: Instant) -> u64 {
        self.cache
            .as_ref()
            .and_then(|c| c.lock().ok())
            .map_or(0, |mut c| c.lookup_messages(messages, now).cached_tokens)
    }

    pub fn config(&self) -> &SimConfig {
        &self.config
    }

    fn transient(&self, message: String) -> LlmError {
        LlmError::Transient {
            provider: "sim".into(),
            model: SIM_MODEL.into(),
            message,
            retry_after: None,
        }
    }

    /// Latency of one call: a pure function of seed, task and attempt, so runs replay exactly.
    pub fn latency_for(&self, request: &ChatRequest) -> Duration {
        let key = request
            .context
            .task_id
            .as_deref()
            .unwrap_or(request.role.as_str());
        self.config.latency_of(key, request.attempt)
    }
}

impl SimConfig {
    /// The simulated latency of attempt `attempt` of the call keyed `key` (a task id, or the
    /// role for calls without a task): the override if there is one, else a draw from
    /// `latency` seeded by seed, key and attempt. Load tests use it to know the planned
    /// latency of every task before running.
    pub fn latency_of(&self, key: &str, attempt: u32) -> Duration {
        if let Some(fixed) = self.latency_overrides.get(key) {
            return *fixed;
        }
        self.latency
            .sample_keyed(|| stable_hash(self.seed, key, attempt))
    }
}

impl SimProvider {
    /// The planner's answer: a replacement for a partial replan, a step plan, or a research
    /// plan, with this attempt's scripted fault applied.
    fn planner_answer(&self, request: &Asked) -> String {
        let ctx = &request.context;
        // Sections name the kept and replaced tasks of a partial replan.
        if !ctx.sections.is_empty() {
            if ctx.plan_format == Some(planwave_plan::PlanFormat::Steps) {
                return steps::replacement(ctx);
            }
            return plan::replacement(ctx);
        }
        // `attempt` counts planning attempts (repairs included).
        let fault = self
            .config
            .planner_faults
            .get(request.attempt.saturating_sub(1) as usize)
            .copied();
        if ctx.plan_format == Some(planwave_plan::PlanFormat::Steps) {
            // A complete replan's context names the tools that failed.
            let failed: Vec<&str> = ctx
                .tool_results
                .iter()
                .filter(|r| r.is_error)
                .map(|r| r.tool.as_str())
                .collect();
            return steps::answer(&ctx.topic, ctx.lang, fault, (&ctx.tools, &failed));
        }
        // The goal is the topic.
        plan::answer_with_tools(&ctx.topic, ctx.lang, fault, &ctx.tools)
    }
}

/// The prompt's length in characters. The simulator only counts the prompt, so it lets go of
/// it before the simulated wait: a call in flight does not hold a second copy (the caller
/// keeps its own for retries).
fn take_prompt(request: &mut ChatRequest) -> usize {
    let chars = request
        .messages
        .iter()
        .map(|m| planwave_llm::char_count(&m.content))
        .sum();
    request.messages = Vec::new();
    chars
}

#[async_trait]
impl LlmProvider for SimProvider {
    fn info(&self) -> ProviderInfo {
        ProviderInfo {
            provider: "sim".into(),
            model: SIM_MODEL.into(),
            simulated: true,
            base_url: None,
            response_format: None,
        }
    }

    /// Written out rather than `async fn`: async_trait's future keeps the request twice
    /// (its argument and the body's copy of it) for the whole simulated wait, which with
    /// many calls in flight was a large part of each one's memory. Here the request is
    /// captured once.
    fn chat<'life0, 'async_trait>(
        &'life0 self,
        request: ChatRequest,
    ) -> planwave_llm::ChatCall<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        // A call's own bound, as `max_tokens` bounds an answer over HTTP.
        let length = AnswerLength {
            max_tokens: request.max_tokens.map(u64::from),
            exact: false,
        };
        self.chat_bounded(request, length)
    }
}

impl SimProvider {
    /// [`LlmProvider::chat`] with the answer's length bounded as the request asks
    /// (`max_tokens` over HTTP): the bound applies before pacing, so a short answer also
    /// streams for less time.
    pub fn chat_bounded(
        &self,
        mut request: ChatRequest,
        length: AnswerLength,
    ) -> planwave_llm::ChatCall<'_> {
        // Latency counts from here, so the work below does not lengthen it.
        let start = Instant::now();
        let cached = self.cached_tokens(&request.messages, start);
        let prompt_tokens = text::estimate_tokens(take_prompt(&mut request));
        let delay = self.latency_for(&request);
        let asked = Asked::of(request);
        Box::pin(async move {
            if let Some(id) = asked
                .context
                .task_id
                .as_deref()
                .filter(|id| self.config.panic.contains(*id))
            {
                // Deliberate: exercises the supervisor's handling of a subagent that dies.
                panic!("simulated panic in task {id}");
            }
            if !delay.is_zero() {
                timer::sleep_until(start + delay).await;
            }
            let (content, tool_calls, pace) = self.answer(&asked)?;
            let (content, cut) = length.fit(content);
            let usage = Usage {
                cached_tokens: cached.min(prompt_tokens),
                ..Usage::new(
                    prompt_tokens,
                    text::estimate_tokens(planwave_llm::char_count(&content)),
                    0,
                )
            };
            let sink = asked.on_delta.as_ref();
            let timing = if pace::is_paced(&pace, &content) {
                // Boxed: paced answers are rare, and inlined the pacing's future would grow
                // every call's future, which lives through the whole simulated wait.
                Box::pin(pace::deliver(&content, pace, start, sink)).await
            } else {
                pace::at_once(&content, pace, start, sink)
            };
            Ok(ChatResponse {
                timing: Some(timing),
                content,
                usage,
                model: SIM_MODEL.into(),
                finish_reason: Some(
                    if !tool_calls.is_empty() {
                        "tool_calls"
                    } else if length.max_tokens.is_some() && (cut || length.exact) {
                        "length"
                    } else {
                        "stop"
                    }
                    .into(),
                ),
                tool_calls,
            })
        })
    }
}

/// What a call's answer depends on, kept through the simulated wait instead of the whole
/// request: its messages (already counted), trace header, token bound and tool schemas are
/// not needed after the call starts, and every call in flight held a slot for each of them.
struct Asked {
    role: AgentRole,
    attempt: u32,
    /// Tools were offered natively (answer with `tool_calls`).
    native_tools: bool,
    context: planwave_llm::RequestContext,
    on_delta: Option<planwave_llm::DeltaSink>,
}

impl Asked {
    fn of(request: ChatRequest) -> Asked {
        Asked {
            role: request.role,
            attempt: request.attempt,
            native_tools: !request.tools.is_empty(),
            context: request.context,
            on_delta: request.on_delta,
        }
    }
}

impl SimProvider {
    /// The answer to `request` once its wait is over: its text, native tool calls and the
    /// pace it is delivered at, or the scripted failure.
    fn answer(
        &self,
        request: &Asked,
    ) -> Result<(String, Vec<planwave_llm::ToolCall>, pace::Pace), LlmError> {
        let task = request.context.task_id.as_deref();
        if let Some(id) = task {
            if self.config.fail.contains(id) {
                return Err(self.transient(format!(
                    "simulated failure of task {id} (attempt {})",
                    request.attempt
                )));
            }
            match self.config.reflect.task_fault(&request.context) {
                Some(FaultKind::Transient) => {
                    return Err(self.transient(format!(
                        "simulated transient failure of task {id} in this pass (attempt {})",
                        request.attempt
                    )));
                }
                Some(FaultKind::Fatal) => {
                    return Err(LlmError::Fatal {
                        provider: "sim".into(),
                        model: SIM_MODEL.into(),
                        message: format!("simulated refusal of task {id} as phrased"),
                    });
                }
                None => {}
            }
            // A task with tools fails once its calls have run (a model that gives out
            // mid-task), so a retry shows which tool results it reuses.
            let after_tools =
                request.context.tools.is_empty() || !request.context.tool_results.is_empty();
            if self.config.flaky.contains(id) && request.attempt <= 1 && after_tools {
                return Err(self.transient(format!(
                    "simulated transient failure of task {id} (first attempt)"
                )));
            }
        }
        let seed = stable_hash(self.config.seed, task.unwrap_or("-"), 0);
        let mut tool_calls = Vec::new();
        let content = match request.role {
            AgentRole::Subagent => match tools::chain(&request.context, seed) {
                // Offered natively: answer with tool_calls; otherwise the JSON protocol.
                Some(calls) if request.native_tools => {
                    tool_calls = tools::native_calls(&calls);
                    String::new()
                }
                Some(calls) => tools::json_answer(&calls),
                None if task.is_some_and(|id| self.config.terse.contains(id)) => {
                    text::terse_section(&request.context)
                }
                None => text::section(&request.context, seed) + &tools::findings(&request.context),
            },
            AgentRole::Integrator => text::summary(&request.context, seed),
            AgentRole::Evaluator => {
                reflect::evaluation(&request.context, request.attempt, &self.config.reflect)
            }
            AgentRole::Reflector if request.context.step_reflection => {
                reflect::step_reflection(&request.context, &self.config.reflect)
            }
            AgentRole::Reflector => {
                reflect::reflection(&request.context, request.attempt, &self.config.reflect)
            }
            AgentRole::Planner => self.planner_answer(request),
        };
        let pace = pace::Pace {
            tokens_per_sec: self.config.token_rate.for_role(request.role),
            jitter: self.config.token_rate.jitter,
            seed: stable_hash(seed, "pace", request.attempt),
        };
        Ok((content, tool_calls, pace))
    }
}
