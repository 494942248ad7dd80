//! Settings of the OpenAI-compatible client. Built by `planwave-config` from the config file,
//! the environment and flags; this crate only consumes them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::gate::AttemptGate;
use super::limiter::LimitConfig;
use super::retry::{RetryConfig, Sleeper, TokioSleeper};
use crate::AgentRole;
use crate::secret::ApiKey;

/// How the planner asks for JSON. Providers differ: OpenAI, vLLM, llama.cpp and recent Ollama
/// take `json_schema`; DeepSeek and Qwen take `json_object`; anything takes `none` (the
/// tolerant parser copes with prose and fences either way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseFormatMode {
    JsonSchema,
    #[default]
    JsonObject,
    None,
}

impl ResponseFormatMode {
    /// The mode a provider takes unless told otherwise (`[llm] response_format`,
    /// `--response-format`): `json_object` for DeepSeek, Qwen and Ollama, `json_schema` for
    /// the rest (OpenAI, vLLM, llama.cpp and unknown servers, which fall back by themselves
    /// when they answer 400 naming `response_format`). `provider` is [`provider_label`]'s.
    pub fn for_provider(provider: &str) -> ResponseFormatMode {
        match provider {
            "deepseek" | "qwen" | "ollama" => ResponseFormatMode::JsonObject,
            _ => ResponseFormatMode::JsonSchema,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ResponseFormatMode::JsonSchema => "json_schema",
            ResponseFormatMode::JsonObject => "json_object",
            ResponseFormatMode::None => "none",
        }
    }
}

impl std::str::FromStr for ResponseFormatMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "json_schema" => Ok(Self::JsonSchema),
            "json_object" => Ok(Self::JsonObject),
            "none" => Ok(Self::None),
            o => Err(format!(
                "unknown response_format {o:?} (expected json_schema, json_object or none)"
            )),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Timeouts {
    /// TCP + TLS connect.
    pub connect: Duration,
    /// The whole exchange, headers to last byte, of one HTTP attempt.
    pub request: Duration,
    /// Longest silence while streaming (headers included); a stalled stream is cut and retried.
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: Duration::from_secs(10),
            request: Duration::from_secs(600),
            idle: Duration::from_secs(60),
        }
    }
}

/// Which model answers each role; roles without an entry use `default`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleModels {
    pub default: String,
    #[serde(default)]
    pub per_role: HashMap<AgentRole, String>,
}

impl RoleModels {
    pub fn single(model: impl Into<String>) -> Self {
        RoleModels {
            default: model.into(),
            per_role: HashMap::new(),
        }
    }
    pub fn for_role(&self, role: AgentRole) -> &str {
        self.per_role
            .get(&role)
            .map(String::as_str)
            .unwrap_or(&self.default)
    }
}

#[derive(Clone)]
pub struct OpenAiConfig {
    /// A label for messages and records (`openai`, `deepseek`, `ollama`, ...).
    pub provider: String,
    /// Up to and including `/v1`; `/chat/completions` is appended.
    pub base_url: String,
    pub api_key: Option<ApiKey>,
    pub models: RoleModels,
    /// Stream with SSE (default) or ask for one JSON body.
    pub stream: bool,
    /// How answers that must be JSON ask for it (see [`ResponseFormatMode::for_provider`]).
    pub response_format: ResponseFormatMode,
    /// The plan's JSON Schema, sent with `json_schema` mode for a planner request that names
    /// no schema of its own (`RequestContext::answer_schema`).
    pub plan_schema: Option<serde_json::Value>,
    /// Send `x-planwave-role/attempt/context` headers (see `context_header`).
    pub context_headers: bool,
    pub temperature: Option<f32>,
    pub max_tokens: Option<u32>,
    /// Headers sent with every request besides the client's own (a load test's `-H`); they
    /// replace a header of the same name. Values that hold credentials are marked sensitive
    /// by whoever sets them, so no `Debug` print shows them.
    pub extra_headers: reqwest::header::HeaderMap,
    pub timeouts: Timeouts,
    pub retry: RetryConfig,
    pub limits: LimitConfig,
    /// Seeds the retry jitter.
    pub seed: u64,
    /// How the client waits between retries; tests substitute a recording sleeper.
    pub sleeper: Arc<dyn Sleeper>,
    /// Admits every HTTP attempt after the client's own limiter: limits shared with other
    /// processes (a queue's workers). `None`: this process's limiter alone.
    pub gate: Option<Arc<dyn AttemptGate>>,
}

impl std::fmt::Debug for OpenAiConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiConfig")
            .field("provider", &self.provider)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key)
            .field("models", &self.models)
            .field("stream", &self.stream)
            .field("response_format", &self.response_format)
            .field("extra_headers", &self.extra_headers)
            .field("timeouts", &self.timeouts)
            .field("retry", &self.retry)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl OpenAiConfig {
    /// Defaults for `base_url` and `model`; everything else as documented in the README.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        let base_url = base_url.into();
        let provider = provider_label(&base_url);
        OpenAiConfig {
            response_format: ResponseFormatMode::for_provider(&provider),
            provider,
            base_url,
            api_key: None,
            models: RoleModels::single(model),
            stream: true,
            plan_schema: None,
            context_headers: true,
            temperature: None,
            max_tokens: None,
            extra_headers: reqwest::header::HeaderMap::new(),
            timeouts: Timeouts::default(),
            retry: RetryConfig::default(),
            limits: LimitConfig::default(),
            seed: 0,
            sleeper: Arc::new(TokioSleeper),
            gate: None,
        }
    }
}

/// A readable provider name from a base URL, for messages: `deepseek` for api.deepseek.com,
/// `ollama` for port 11434, and so on; `openai-compatible` when nothing matches.
pub fn provider_label(base_url: &str) -> String {
    let u = base_url.to_ascii_lowercase();
    let known = [
        ("api.openai.com", "openai"),
        ("deepseek", "deepseek"),
        ("dashscope", "qwen"),
        (":11434", "ollama"),
        (":8080", "llama.cpp"),
        (":8000", "vllm"),
    ];
    known
        .iter()
        .find(|(needle, _)| u.contains(needle))
        .map(|(_, name)| (*name).to_owned())
        .unwrap_or_else(|| "openai-compatible".into())
}
