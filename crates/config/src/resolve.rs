//! Flags > environment > config file > defaults, into typed [`Settings`].

use std::path::{Path, PathBuf};
use std::time::Duration;

use planwave_llm::openai::{
    LimitConfig, OpenAiConfig, ResponseFormatMode, RetryConfig, RoleModels, Timeouts,
    provider_label,
};
use planwave_llm::{AgentRole, ApiKey, PriceTable};
use planwave_plan::Lang;

use crate::ConfigError;
use crate::env::*;
use crate::file::ConfigFile;

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// Which model backend the user asked for on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LlmKind {
    Sim,
    OpenAi,
}

/// What the command line says (all optional: unset flags defer to env and file).
#[derive(Clone, Debug, Default)]
pub struct Flags {
    pub llm: Option<LlmKind>,
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub stream: Option<bool>,
    pub prompts_dir: Option<PathBuf>,
    pub lang: Option<Lang>,
    pub planner_attempts: Option<u32>,
    pub context_budget_tokens: Option<u64>,
}

#[derive(Clone, Debug)]
pub enum LlmChoice {
    /// The built-in simulator: nothing configured, or `--llm sim`.
    Sim,
    OpenAi(Box<OpenAiSettings>),
}

/// The OpenAI-compatible client's settings. `Debug` redacts the key.
#[derive(Clone, Debug)]
pub struct OpenAiSettings {
    pub provider: String,
    pub base_url: String,
    pub api_key: Option<ApiKey>,
    /// Which source the key came from (an env var name or `config file`), for messages.
    pub api_key_source: Option<String>,
    pub models: RoleModels,
    pub stream: bool,
    pub response_format: ResponseFormatMode,
    pub context_headers: bool,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    pub timeouts: Timeouts,
    pub retry: RetryConfig,
    pub limits: LimitConfig,
}

impl OpenAiSettings {
    /// The client configuration (the plan schema and seed are the caller's).
    pub fn client_config(&self, seed: u64, plan_schema: Option<serde_json::Value>) -> OpenAiConfig {
        let mut c = OpenAiConfig::new(self.base_url.clone(), self.models.default.clone());
        c.provider = self.provider.clone();
        c.api_key = self.api_key.clone();
        c.models = self.models.clone();
        c.stream = self.stream;
        c.response_format = self.response_format;
        c.plan_schema = plan_schema;
        c.context_headers = self.context_headers;
        c.temperature = self.temperature;
        c.max_tokens = self.max_tokens;
        c.timeouts = self.timeouts;
        c.retry = self.retry;
        c.limits = self.limits;
        c.seed = seed;
        c
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannerSettings {
    /// Planning attempts, the first included (repairs are the rest).
    pub attempts: u32,
    pub min_tasks: usize,
    pub max_tasks: usize,
}

impl Default for PlannerSettings {
    fn default() -> Self {
        PlannerSettings {
            attempts: 3,
            min_tasks: 4,
            max_tasks: 7,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PromptSettings {
    pub dir: Option<PathBuf>,
    /// `None`: follow the goal (CJK text -> zh).
    pub lang: Option<Lang>,
    pub context_budget_tokens: u64,
}

pub const DEFAULT_CONTEXT_BUDGET: u64 = 12_000;

#[derive(Clone, Debug)]
pub struct Settings {
    pub llm: LlmChoice,
    pub planner: PlannerSettings,
    pub prompts: PromptSettings,
    pub prices: PriceTable,
    /// The reflective loop (`[orchestrator]`, `[reflection]`).
    pub reflect: crate::reflect::ReflectSettings,
    /// `[run]`: per-task timeout and whole-run deadline (flags override).
    pub run: RunLimits,
    /// MCP servers and tool settings (`[mcp]`).
    pub mcp: crate::mcp::McpSettings,
    /// The config file used, if any.
    pub config_path: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunLimits {
    pub task_timeout: Option<Duration>,
    pub deadline: Option<Duration>,
}

/// Finds the config file: `explicit` (must exist), else `$PLANWAVE_CONFIG` (must exist),
/// else `./planwave.toml` if present, else none.
pub fn load_file(explicit: Option<&Path>, env: &dyn EnvSource) -> Result<ConfigFile, ConfigError> {
    if let Some(p) = explicit {
        return ConfigFile::read(p);
    }
    if let Some(p) = env.var(ENV_CONFIG) {
        return ConfigFile::read(Path::new(&p));
    }
    let local = Path::new("planwave.toml");
    if local.is_file() {
        return ConfigFile::read(local);
    }
    Ok(ConfigFile::default())
}

fn secs(field: &str, v: Option<f64>, default: Duration) -> Result<Duration, ConfigError> {
    match v {
        None => Ok(default),
        Some(s) if s.is_finite() && s > 0.0 => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(ConfigError::Invalid(format!(
            "{field} = {s}: expected a positive number of seconds"
        ))),
    }
}

pub fn resolve(
    file: &ConfigFile,
    env: &dyn EnvSource,
    flags: &Flags,
) -> Result<Settings, ConfigError> {
    let l = &file.llm;
    let model = flags
        .model
        .clone()
        .or_else(|| env.var(ENV_MODEL))
        .or_else(|| l.model.clone());
    let per_role = [
        (AgentRole::Planner, &l.models.planner),
        (AgentRole::Subagent, &l.models.subagent),
        (AgentRole::Integrator, &l.models.integrator),
        (AgentRole::Evaluator, &l.models.evaluator),
    ];
    let file_kind = match l.provider.as_deref() {
        None => None,
        Some("sim") => Some(LlmKind::Sim),
        Some("openai") | Some("openai-compatible") => Some(LlmKind::OpenAi),
        Some(o) => {
            return Err(ConfigError::Invalid(format!(
                "[llm] provider = {o:?}: expected \"openai\" (any OpenAI-compatible server) or \"sim\""
            )));
        }
    };
    let any_model = model.is_some() || per_role.iter().any(|(_, m)| m.is_some());
    let kind = flags.llm.or(file_kind).unwrap_or(if any_model {
        LlmKind::OpenAi
    } else {
        LlmKind::Sim
    });

    let lang = match flags.lang {
        Some(l) => Some(l),
        None => match file.prompts.lang.as_deref() {
            None | Some("auto") => None,
            Some(s) => Some(
                s.parse::<Lang>()
                    .map_err(|e| ConfigError::Invalid(format!("[prompts] lang: {e}")))?,
            ),
        },
    };
    let prompts = PromptSettings {
        dir: flags
            .prompts_dir
            .clone()
            .or_else(|| file.prompts.dir.as_deref().map(|d| file.relative(d))),
        lang,
        context_budget_tokens: flags
            .context_budget_tokens
            .or(file.prompts.context_budget_tokens)
            .unwrap_or(DEFAULT_CONTEXT_BUDGET),
    };
    let defaults = PlannerSettings::default();
    let planner = PlannerSettings {
        attempts: flags
            .planner_attempts
            .or(file.planner.attempts)
            .unwrap_or(defaults.attempts)
            .max(1),
        min_tasks: file.planner.min_tasks.unwrap_or(defaults.min_tasks),
        max_tasks: file.planner.max_tasks.unwrap_or(defaults.max_tasks),
    };
    if planner.min_tasks > planner.max_tasks {
        return Err(ConfigError::Invalid(format!(
            "[planner] min_tasks {} is larger than max_tasks {}",
            planner.min_tasks, planner.max_tasks
        )));
    }
    let prices = PriceTable {
        currency: file.prices.currency.clone(),
        models: file.prices.models.clone(),
    };

    let llm = match kind {
        LlmKind::Sim => LlmChoice::Sim,
        LlmKind::OpenAi => {
            let default_model = model
                .or_else(|| l.models.subagent.clone())
                .ok_or_else(|| {
                    ConfigError::Invalid(format!(
                        "no model configured: pass --model, set {ENV_MODEL}, or set [llm] model in planwave.toml"
                    ))
                })?;
            let mut models = RoleModels::single(default_model);
            for (role, m) in per_role {
                if let Some(m) = m {
                    models.per_role.insert(role, m.clone());
                }
            }
            let explicit = flags
                .base_url
                .clone()
                .or_else(|| env.var(ENV_BASE_URL))
                .or_else(|| l.base_url.clone());
            // OPENAI_API_KEY is meant for OpenAI: it is not sent to a server chosen by
            // planwave's own settings unless that server is OpenAI's.
            let openai_key_ok = explicit
                .as_deref()
                .is_none_or(|u| u.contains("api.openai.com"));
            let base_url = explicit
                .or_else(|| env.var(ENV_OPENAI_BASE_URL))
                .unwrap_or_else(|| DEFAULT_BASE_URL.into());
            let base_url = base_url.trim().trim_end_matches('/').to_owned();
            if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
                return Err(ConfigError::Invalid(format!(
                    "base URL {base_url:?} must start with http:// or https://"
                )));
            }
            let (api_key, api_key_source) = api_key(file, env, openai_key_ok)?;
            let response_format = match &l.response_format {
                None => ResponseFormatMode::default(),
                Some(s) => s
                    .parse()
                    .map_err(|e: String| ConfigError::Invalid(format!("[llm] {e}")))?,
            };
            let t = &l.timeouts;
            let td = Timeouts::default();
            let r = &l.retry;
            let rd = RetryConfig::default();
            LlmChoice::OpenAi(Box::new(OpenAiSettings {
                provider: l.name.clone().unwrap_or_else(|| provider_label(&base_url)),
                base_url,
                api_key,
                api_key_source,
                models,
                stream: flags.stream.or(l.stream).unwrap_or(true),
                response_format,
                context_headers: l.context_headers.unwrap_or(true),
                temperature: l.temperature,
                max_tokens: l.max_tokens,
                timeouts: Timeouts {
                    connect: secs("[llm.timeouts] connect_secs", t.connect_secs, td.connect)?,
                    request: secs("[llm.timeouts] request_secs", t.request_secs, td.request)?,
                    idle: secs("[llm.timeouts] idle_secs", t.idle_secs, td.idle)?,
                },
                retry: RetryConfig {
                    max_retries: r.max_retries.unwrap_or(rd.max_retries),
                    base: r.base_ms.map(Duration::from_millis).unwrap_or(rd.base),
                    max: r.max_ms.map(Duration::from_millis).unwrap_or(rd.max),
                    max_retry_after: secs(
                        "[llm.retry] max_retry_after_secs",
                        r.max_retry_after_secs,
                        rd.max_retry_after,
                    )?,
                },
                limits: LimitConfig {
                    max_in_flight: l.limits.max_in_flight,
                    requests_per_minute: l.limits.requests_per_minute,
                    tokens_per_minute: l.limits.tokens_per_minute,
                },
            }))
        }
    };
    let reflect = crate::reflect::resolve(&file.orchestrator, &file.reflection)?;
    let opt_secs = |field: &str, v: Option<f64>| -> Result<Option<Duration>, ConfigError> {
        v.map(|s| secs(field, Some(s), Duration::ZERO)).transpose()
    };
    let run = RunLimits {
        task_timeout: opt_secs("[run] task_timeout_secs", file.run.task_timeout_secs)?,
        deadline: opt_secs("[run] deadline_secs", file.run.deadline_secs)?,
    };
    Ok(Settings {
        llm,
        planner,
        prompts,
        prices,
        reflect,
        run,
        mcp: crate::mcp::resolve(file),
        config_path: file.path.clone(),
    })
}

/// `PLANWAVE_LLM_API_KEY`, then the variable named by `[llm] api_key_env`, then
/// `[llm] api_key`, then `OPENAI_API_KEY` (only when `openai_key_ok`: the base URL is
/// OpenAI's or came from `OPENAI_BASE_URL`). None is fine: local servers need no key.
fn api_key(
    file: &ConfigFile,
    env: &dyn EnvSource,
    openai_key_ok: bool,
) -> Result<(Option<ApiKey>, Option<String>), ConfigError> {
    if let Some(k) = env.var(ENV_API_KEY).and_then(ApiKey::new) {
        return Ok((Some(k), Some(ENV_API_KEY.into())));
    }
    if let Some(var) = &file.llm.api_key_env {
        return match env.var(var).and_then(ApiKey::new) {
            Some(k) => Ok((Some(k), Some(var.clone()))),
            None => Err(ConfigError::Invalid(format!(
                "[llm] api_key_env names {var}, which is not set"
            ))),
        };
    }
    if let Some(k) = file.llm.api_key.clone().and_then(ApiKey::new) {
        return Ok((Some(k), Some("config file".into())));
    }
    if openai_key_ok && let Some(k) = env.var(ENV_OPENAI_API_KEY).and_then(ApiKey::new) {
        return Ok((Some(k), Some(ENV_OPENAI_API_KEY.into())));
    }
    Ok((None, None))
}
