//! `planwave.toml` as written: every field optional, unknown fields rejected (a typo should
//! be an error, not a silently ignored setting).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use planwave_llm::ModelPrice;
use serde::Deserialize;

use crate::SettingsError;

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    #[serde(default)]
    pub llm: LlmSection,
    #[serde(default)]
    pub planner: PlannerSection,
    #[serde(default)]
    pub prompts: PromptsSection,
    #[serde(default)]
    pub prices: PricesSection,
    #[serde(default)]
    pub orchestrator: OrchestratorSection,
    #[serde(default)]
    pub reflection: ReflectionSection,
    #[serde(default)]
    pub run: RunSection,
    #[serde(default)]
    pub mcp: McpSection,
    /// Where it was read from (relative paths inside resolve against its directory).
    #[serde(skip)]
    pub path: Option<PathBuf>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmSection {
    /// `openai` (any OpenAI-compatible server) or `sim`.
    pub provider: Option<String>,
    /// A label for messages and `run.json` (`deepseek`, `qwen`, ...); guessed from the URL.
    pub name: Option<String>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    /// Name of the environment variable holding the key (preferred over `api_key`).
    pub api_key_env: Option<String>,
    /// The key itself. Allowed for local setups; keep such a file out of version control.
    pub api_key: Option<String>,
    pub stream: Option<bool>,
    /// `json_schema`, `json_object` or `none`.
    pub response_format: Option<String>,
    pub context_headers: Option<bool>,
    pub temperature: Option<f32>,
    /// Every role's output cap (`[llm.output_caps]` and `--max-output` set one role's).
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub output_caps: crate::caps::OutputCapsSection,
    #[serde(default)]
    pub models: ModelsSection,
    #[serde(default)]
    pub timeouts: TimeoutsSection,
    #[serde(default)]
    pub retry: RetrySection,
    #[serde(default)]
    pub limits: LimitsSection,
    /// `--batch-api`'s timing.
    #[serde(default)]
    pub batch: BatchSection,
}

/// `[llm.batch]`: how calls are batched with `--batch-api`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchSection {
    /// How long the first ready call waits for others before their batch is submitted.
    pub linger_ms: Option<u64>,
    /// First interval between polls of a submitted batch.
    pub poll_secs: Option<f64>,
    /// Longest interval between polls.
    pub poll_max_secs: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelsSection {
    pub planner: Option<String>,
    pub subagent: Option<String>,
    pub integrator: Option<String>,
    pub evaluator: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeoutsSection {
    pub connect_secs: Option<f64>,
    pub request_secs: Option<f64>,
    pub idle_secs: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetrySection {
    pub max_retries: Option<u32>,
    pub base_ms: Option<u64>,
    pub max_ms: Option<u64>,
    pub max_retry_after_secs: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    pub max_in_flight: Option<usize>,
    pub requests_per_minute: Option<u32>,
    pub tokens_per_minute: Option<u64>,
    /// The period of the per-minute limits, for tests (default 60).
    pub window_secs: Option<f64>,
}

/// `[run]`: limits of one run (`--task-timeout`, `--deadline` override them).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    pub task_timeout_secs: Option<f64>,
    pub deadline_secs: Option<f64>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannerSection {
    pub attempts: Option<u32>,
    pub min_tasks: Option<usize>,
    pub max_tasks: Option<usize>,
    /// The most tasks a plan the model writes may have (`--max-tasks`).
    pub task_limit: Option<usize>,
    /// `tasks` (research plans, the default) or `steps` (tool-step plans).
    pub format: Option<String>,
    /// `none` (the default) or `single_task`.
    pub fallback: Option<String>,
    /// The plan cache's directory, relative to this file.
    pub plan_cache: Option<PathBuf>,
    /// Most plans the cache keeps (oldest evicted first).
    pub plan_cache_max_entries: Option<usize>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PromptsSection {
    /// Directory of template overrides (`zh/subagent.j2`, ...), relative to this file.
    pub dir: Option<PathBuf>,
    /// `zh`, `en` or `auto` (follow the goal).
    pub lang: Option<String>,
    /// Prerequisite sections given to a subagent are cut to this many tokens in total.
    pub context_budget_tokens: Option<u64>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PricesSection {
    pub currency: Option<String>,
    /// The share taken off for requests sent through a Batch API (0.5 = half price).
    pub batch_discount: Option<f64>,
    #[serde(default)]
    pub models: BTreeMap<String, ModelPrice>,
}

/// `[orchestrator]`: the reflective loop's rounds and when a round is good enough.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrchestratorSection {
    /// Rounds of plan -> run -> evaluate -> reflect, the first included.
    pub max_reflection_rounds: Option<u32>,
    /// `is_successful` and `overall_score` at least this (0-100) ends the loop.
    pub success_threshold: Option<f64>,
    /// This many rounds in a row with failed tasks ends the loop.
    pub max_consecutive_failures: Option<u32>,
    /// The whole loop's time limit, in seconds (default 3600).
    pub task_timeout_secs: Option<f64>,
    /// `false`: rounds are evaluated but not reflected on (default true).
    pub enable_auto_reflection: Option<bool>,
}

/// `[reflection]`: how much recovery a failed task gets within a round.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReflectionSection {
    /// `retry_step` passes per round for tasks that failed on transient errors.
    pub max_step_retries: Option<u32>,
    /// `replan_from_failure` / `complete_replan` passes per round.
    pub max_task_replanning_attempts: Option<u32>,
    /// Ask the reflector about failed tasks before choosing their recovery (default false).
    pub enable_step_level_reflection: Option<bool>,
}

/// `[mcp]`: MCP servers for subagents and tool steps, and the tool loop's limits. Servers
/// come from an `mcpServers` JSON file (`config`, relative to `planwave.toml`) and/or inline
/// `[mcp.servers.NAME]` tables in the same shape (`command`/`args`/`env`, or `url`/`headers`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpSection {
    /// An `mcpServers` JSON file.
    pub config: Option<PathBuf>,
    /// Inline servers, by name, in the `mcpServers` entry shape.
    #[serde(default)]
    pub servers: BTreeMap<String, serde_json::Value>,
    /// `json` or `native`; parsed when the settings are resolved (see `mcp`).
    pub tool_protocol: Option<String>,
    pub tool_timeout_secs: Option<f64>,
    pub start_timeout_secs: Option<f64>,
    pub max_tool_rounds: Option<u32>,
    pub max_concurrent_per_server: Option<usize>,
    /// The largest message a server may send, e.g. `"16MiB"` or a number of bytes.
    pub max_output_bytes: Option<bytesize::ByteSize>,
}

impl ConfigFile {
    pub fn parse(text: &str, path: Option<&Path>) -> Result<ConfigFile, SettingsError> {
        let mut f: ConfigFile = toml::from_str(text).map_err(|e| SettingsError::Parse {
            path: path
                .map(Path::to_path_buf)
                .unwrap_or_else(|| "<config>".into()),
            message: e.to_string(),
        })?;
        f.path = path.map(Path::to_path_buf);
        Ok(f)
    }

    pub fn read(path: &Path) -> Result<ConfigFile, SettingsError> {
        let text = std::fs::read_to_string(path).map_err(|e| SettingsError::Read {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        ConfigFile::parse(&text, Some(path))
    }

    /// A path from the file, made relative to the file's directory.
    pub fn relative(&self, p: &Path) -> PathBuf {
        match self.path.as_deref().and_then(Path::parent) {
            Some(dir) if p.is_relative() => dir.join(p),
            _ => p.to_path_buf(),
        }
    }
}
