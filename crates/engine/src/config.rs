//! Run settings.

use std::time::Duration;

use planwave_llm::PriceTable;
use planwave_record::Schedule;
use serde::{Deserialize, Serialize};

/// Task-level retries of transient model errors (retry once by default).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct RetryPolicy {
    /// Retries after the first attempt; 1 means at most 2 attempts.
    pub max_retries: u32,
    /// Backoff before retry k is `base * 2^(k-1)`, capped by `max_backoff`, with full jitter.
    pub base_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 1,
            base_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(30),
        }
    }
}

/// How a subagent asks for tool calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolProtocol {
    /// The JSON tool protocol: the model answers `{"content": ..., "next": [{"mcp": ..., "args": ...}]}`.
    #[default]
    Json,
    /// OpenAI function calling: `tools` in the request, `tool_calls` in the answer.
    Native,
}

impl std::str::FromStr for ToolProtocol {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "json" => Ok(ToolProtocol::Json),
            "native" => Ok(ToolProtocol::Native),
            other => Err(format!(
                "unknown tool protocol {other:?} (expected json or native)"
            )),
        }
    }
}

/// Model turns that may ask for tools, per task; one more turn then writes the section.
pub const DEFAULT_MAX_TOOL_ROUNDS: u32 = 4;

fn default_max_tool_rounds() -> u32 {
    DEFAULT_MAX_TOOL_ROUNDS
}

/// Prerequisite context per subagent, in estimated tokens, unless configured otherwise.
pub const DEFAULT_CONTEXT_BUDGET_TOKENS: u64 = 12_000;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    pub schedule: Schedule,
    /// Most subagents in flight; `None` means no cap beyond the graph itself.
    pub concurrency: Option<usize>,
    pub retry: RetryPolicy,
    /// Most subagents the supervisor spawns per turn (a backlog of ready tasks); between
    /// turns the ones it spawned get the worker, so a large backlog is not all spawned, each
    /// holding its memory, before any of it runs.
    pub dispatch_batch: usize,
    /// Seed for retry jitter, so a seeded run replays its timings.
    pub seed: u64,
    /// Prerequisite sections given to one subagent are cut to this many estimated tokens in
    /// total (see `context`); `None` gives them whole.
    #[serde(default)]
    pub context_budget_tokens: Option<u64>,
    /// Per-model prices; when not empty, `run.json` gets a cost estimate.
    #[serde(default)]
    pub prices: PriceTable,
    #[serde(default)]
    pub tool_protocol: ToolProtocol,
    /// Most tool rounds per task (see [`DEFAULT_MAX_TOOL_ROUNDS`]).
    #[serde(default = "default_max_tool_rounds")]
    pub max_tool_rounds: u32,
    /// Set by the reflective loop: requests carry it, and completed tasks record it.
    #[serde(default)]
    pub round: Option<planwave_record::RoundTag>,
    /// Where the plan came from, set by whoever chose it; `run.json` records it.
    #[serde(default)]
    pub plan_source: Option<planwave_record::PlanSource>,
    /// A task (all its attempts) taking longer fails with a timeout.
    #[serde(default)]
    pub task_timeout: Option<Duration>,
    /// Sections shown to the executive summary's prompt are cut to this many estimated
    /// tokens in total (see `digest`); `None` shows them whole.
    #[serde(default = "default_summary_budget")]
    pub summary_budget_tokens: Option<u64>,
}

fn default_summary_budget() -> Option<u64> {
    Some(crate::digest::DEFAULT_SUMMARY_BUDGET_TOKENS)
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            schedule: Schedule::Dataflow,
            concurrency: None,
            retry: RetryPolicy::default(),
            dispatch_batch: 64,
            seed: 0,
            context_budget_tokens: Some(DEFAULT_CONTEXT_BUDGET_TOKENS),
            prices: PriceTable::default(),
            tool_protocol: ToolProtocol::Json,
            max_tool_rounds: DEFAULT_MAX_TOOL_ROUNDS,
            round: None,
            plan_source: None,
            task_timeout: None,
            summary_budget_tokens: default_summary_budget(),
        }
    }
}
