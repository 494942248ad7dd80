//! What resolution produces: everything a front end needs to run a command, in the
//! libraries' own config types.

use std::path::PathBuf;
use std::time::Duration;

use planwave_engine::RunConfig;
use planwave_llm::ApiKey;
use planwave_llm::openai::OpenAiConfig;
use planwave_mcp::{McpConfig, RegistryOptions};
use planwave_orchestrator::LoopPolicy;
use planwave_planner::PlannerConfig;

use crate::{EnvSource, SettingsError};

/// Every setting of a command, resolved (flags > environment > file > defaults) and
/// validated. `Debug` never shows the API key.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Which model answers: the simulator, or an OpenAI-compatible server with its client
    /// configuration.
    pub llm: LlmChoice,
    /// The most output tokens of one answer, per role (`max_tokens`): defaults for a real
    /// server, none for the simulator unless set.
    pub output_caps: planwave_llm::OutputCaps,
    /// The planner: attempts, bounds on the number of tasks, and the language of prompts
    /// and plan (`None` follows the goal).
    pub planner: PlannerConfig,
    /// Template overrides (`DIR/zh/subagent.j2`, ...); `None` uses the built-in prompts.
    pub prompts_dir: Option<PathBuf>,
    /// The engine's settings for every run: schedule, concurrency, retries, seed, context
    /// budget, prices, per-task timeout, tool protocol and tool rounds.
    pub run: RunConfig,
    /// The whole command's time limit (a run, a research loop, a batch): when it passes the
    /// work stops like Ctrl-C and can be resumed.
    pub deadline: Option<Duration>,
    /// The reflective loop (`research`): rounds, when a round is good enough, recovery.
    pub policy: LoopPolicy,
    /// MCP servers to start and how; `None` when none are configured or the command uses no
    /// tools.
    pub mcp: Option<McpServers>,
    /// The config file used, if any.
    pub config_path: Option<PathBuf>,
    /// Where plans the planner wrote are kept for reuse (`--plan-cache`); `None`: off.
    pub plan_cache: Option<PlanCacheSettings>,
    /// `--batch-api`: model calls go through the provider's Batch API, batched and polled
    /// as this says; `None`: one request per call.
    pub batch_api: Option<planwave_llm::batch::BatchConfig>,
}

/// The plan cache: a directory of plans by key, at most `max_entries` of them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanCacheSettings {
    pub dir: PathBuf,
    /// The oldest entries (by modification time, refreshed on a hit) go beyond this.
    pub max_entries: usize,
}

impl PlanCacheSettings {
    pub const DEFAULT_MAX_ENTRIES: usize = 1000;
}

/// Which model answers.
#[derive(Clone, Debug)]
pub enum LlmChoice {
    /// The built-in simulator: nothing configured, or `--llm sim`.
    Sim,
    /// An OpenAI-compatible server.
    OpenAi {
        /// The client's configuration, complete (plan schema and seed included).
        config: Box<OpenAiConfig>,
        /// Which source the key came from (an env var name or `config file`), for messages;
        /// `None` without a key.
        api_key_source: Option<String>,
    },
}

/// The MCP servers a command starts, and the registry's limits.
#[derive(Clone, Debug)]
pub struct McpServers {
    /// The servers, in name order: `--mcp-config`, else `[mcp] config` with `[mcp.servers]`
    /// replacing entries of the same name.
    pub config: McpConfig,
    /// Start-up and call timeouts, calls in flight per server.
    pub options: RegistryOptions,
}

impl McpServers {
    /// Only the servers of an `mcpServers` file, with the registry's default limits (for a
    /// command that reads no config file, such as `validate --mcp-config`).
    pub fn load(path: &std::path::Path) -> Result<McpServers, crate::SettingsError> {
        Ok(McpServers {
            config: McpConfig::load(path).map_err(crate::SettingsError::Mcp)?,
            options: RegistryOptions::default(),
        })
    }
}

impl Settings {
    /// Replaces whatever API key resolution found with the one in the variable `var` names,
    /// or none without `var`: a load test sends exactly the key it was told to (`flag`, the
    /// option naming the variable, is where an unset variable is reported). The simulator
    /// takes no key, so it is left as it is.
    pub fn use_only_key_from(
        &mut self,
        flag: &str,
        var: Option<&str>,
        env: &impl EnvSource,
    ) -> Result<(), SettingsError> {
        let LlmChoice::OpenAi {
            config,
            api_key_source,
        } = &mut self.llm
        else {
            return Ok(());
        };
        config.api_key = None;
        *api_key_source = None;
        if let Some(var) = var {
            let key = env.var(var).and_then(ApiKey::new).ok_or_else(|| {
                SettingsError::setting(flag, format!("${var} is not set or empty"))
            })?;
            config.api_key = Some(key);
            *api_key_source = Some(format!("${var}"));
        }
        Ok(())
    }
}
