//! What the command line says. Every field is optional: an unset flag defers to the
//! environment, the config file and the defaults.

use std::path::PathBuf;
use std::time::Duration;

use planwave_engine::ToolProtocol;
use planwave_plan::Lang;
use planwave_record::Schedule;

/// Which model backend the user asked for on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LlmKind {
    Sim,
    OpenAi,
}

/// The setting-bearing flags of one command, all of them in one place.
#[derive(Clone, Debug, Default)]
pub struct Flags {
    /// `--config`: the config file (else `$PLANWAVE_CONFIG`, else `./planwave.toml`).
    pub config: Option<PathBuf>,

    // The model.
    pub llm: Option<LlmKind>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub stream: Option<bool>,
    /// `--max-output ROLE=TOKENS`, in the order given (0: no cap).
    pub max_output: Vec<(String, u32)>,
    /// `--response-format MODE`.
    pub response_format: Option<planwave_llm::openai::ResponseFormatMode>,

    // Prompts and the planner.
    pub prompts_dir: Option<PathBuf>,
    pub context_budget_tokens: Option<u64>,
    pub lang: Option<Lang>,
    pub planner_attempts: Option<u32>,
    /// `--max-tasks`: the most tasks a plan the model writes may have.
    pub task_limit: Option<usize>,
    /// `--plan-format`: research tasks or tool steps.
    pub plan_format: Option<planwave_plan::PlanFormat>,
    /// `--meta KEY=VALUE`, in the order given (a later key wins).
    pub meta: Vec<(String, String)>,
    /// `--plan-cache DIR`: reuse plans the planner wrote for the same goal and prompt.
    pub plan_cache: Option<PathBuf>,
    /// `--no-plan-cache`: no cache, whatever the file says.
    pub no_plan_cache: bool,
    /// `--plan-cache-max-entries N`.
    pub plan_cache_max_entries: Option<usize>,

    // Execution (unset: the engine's defaults).
    pub schedule: Option<Schedule>,
    pub concurrency: Option<usize>,
    pub retries: Option<u32>,
    pub retry_backoff: Option<Duration>,
    /// Seeds the simulator, the engine's retry jitter and the model client's.
    pub seed: Option<u64>,
    pub task_timeout: Option<Duration>,
    pub deadline: Option<Duration>,

    /// `--batch-api`: model calls through the provider's Batch API, with its timing.
    pub batch_api: bool,
    pub batch_linger: Option<Duration>,
    pub batch_poll: Option<Duration>,
    pub batch_poll_max: Option<Duration>,

    /// The reflective loop's round limit (`research --max-rounds`).
    pub max_rounds: Option<u32>,

    /// Tools. `None` for a command that uses none: `[mcp]` is then left unread (neither
    /// validated nor its server files opened).
    pub mcp: Option<McpFlags>,
}

/// The MCP and tool flags of a command that runs tools.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpFlags {
    /// `--mcp-config`: replaces the servers of `[mcp]`.
    pub config: Option<PathBuf>,
    pub tool_protocol: Option<ToolProtocol>,
    /// `--tool-timeout`, in seconds as given (checked when resolved).
    pub tool_timeout_secs: Option<f64>,
    /// `--mcp-start-timeout`, in seconds as given (checked when resolved).
    pub start_timeout_secs: Option<f64>,
    pub max_tool_rounds: Option<u32>,
    /// `--mcp-max-output`.
    pub max_output: Option<bytesize::ByteSize>,
}
