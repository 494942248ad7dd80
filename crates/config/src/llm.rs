//! `[llm]`, `PLANWAVE_LLM_*`/`OPENAI_*` and the model flags: which model answers, and the
//! OpenAI-compatible client's configuration.

use std::time::Duration;

use planwave_llm::openai::{
    LimitConfig, OpenAiConfig, ResponseFormatMode, RetryConfig, RoleModels, Timeouts,
};
use planwave_llm::{AgentRole, ApiKey};

use crate::SettingsError;
use crate::env::*;
use crate::file::{ConfigFile, LlmSection};
use crate::flags::{Flags, LlmKind};
use crate::settings::LlmChoice;

pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The model for every role: `--model`, `$PLANWAVE_LLM_MODEL`, `[llm] model`.
fn model(file: &ConfigFile, env: &dyn EnvSource, flags: &Flags) -> Option<String> {
    flags
        .model
        .clone()
        .or_else(|| env.var(ENV_MODEL))
        .or_else(|| file.llm.model.clone())
}

fn per_role(l: &LlmSection) -> [(AgentRole, &Option<String>); 4] {
    [
        (AgentRole::Planner, &l.models.planner),
        (AgentRole::Subagent, &l.models.subagent),
        (AgentRole::Integrator, &l.models.integrator),
        (AgentRole::Evaluator, &l.models.evaluator),
    ]
}

/// `--llm`, else `[llm] provider`, else the simulator unless some model is configured.
pub(crate) fn kind(
    file: &ConfigFile,
    env: &dyn EnvSource,
    flags: &Flags,
) -> Result<LlmKind, SettingsError> {
    let l = &file.llm;
    let file_kind = match l.provider.as_deref() {
        None => None,
        Some("sim") => Some(LlmKind::Sim),
        Some("openai") | Some("openai-compatible") => Some(LlmKind::OpenAi),
        Some(o) => {
            return Err(SettingsError::Invalid(format!(
                "[llm] provider = {o:?}: expected \"openai\" (any OpenAI-compatible server) or \"sim\""
            )));
        }
    };
    let any_model =
        model(file, env, flags).is_some() || per_role(l).iter().any(|(_, m)| m.is_some());
    Ok(flags.llm.or(file_kind).unwrap_or(if any_model {
        LlmKind::OpenAi
    } else {
        LlmKind::Sim
    }))
}

/// The model choice; for a server, its client configuration with the planner's plan schema
/// and `seed` (the retry jitter's).
pub(crate) fn resolve(
    kind: LlmKind,
    file: &ConfigFile,
    env: &dyn EnvSource,
    flags: &Flags,
    seed: u64,
) -> Result<LlmChoice, SettingsError> {
    if kind == LlmKind::Sim {
        return Ok(LlmChoice::Sim);
    }
    let l = &file.llm;
    let models = role_models(file, env, flags)?;
    let (base_url, openai_key_ok) = base_url(file, env, flags)?;
    let (api_key, api_key_source) = api_key(file, env, openai_key_ok)?;
    let response_format = match (flags.response_format, &l.response_format) {
        (Some(m), _) => Some(m),
        (None, None) => None,
        (None, Some(s)) => Some(
            s.parse::<ResponseFormatMode>()
                .map_err(|e: String| SettingsError::Invalid(format!("[llm] {e}")))?,
        ),
    };
    // `new` names the provider after the URL (`deepseek`, `ollama`, ...) unless `[llm] name`
    // says otherwise.
    let mut c = OpenAiConfig::new(base_url, models.default.clone());
    if let Some(name) = &l.name {
        c.provider = name.clone();
    }
    c.api_key = api_key;
    c.models = models;
    c.stream = flags.stream.or(l.stream).unwrap_or(c.stream);
    // Unset: the provider's own (see `ResponseFormatMode::for_provider`), as `new` chose.
    c.response_format = response_format.unwrap_or(c.response_format);
    c.plan_schema = Some(planwave_planner::plan_schema_for(crate::planner::format(
        file, flags,
    )?));
    c.context_headers = l.context_headers.unwrap_or(c.context_headers);
    c.temperature = l.temperature;
    // Per role, `Settings::output_caps` fills each request's own bound first; this one stays
    // for clients used without them (a load test's).
    c.max_tokens = l.max_tokens;
    c.timeouts = timeouts(l)?;
    c.retry = retry(l)?;
    c.limits = LimitConfig {
        max_in_flight: l.limits.max_in_flight,
        requests_per_minute: l.limits.requests_per_minute,
        tokens_per_minute: l.limits.tokens_per_minute,
        window: crate::secs::file_secs("[llm.limits] window_secs", l.limits.window_secs)?,
    };
    c.seed = seed;
    Ok(LlmChoice::OpenAi {
        config: Box::new(c),
        api_key_source,
    })
}

/// The default model (which a server needs) and the per-role ones of `[llm.models]`.
fn role_models(
    file: &ConfigFile,
    env: &dyn EnvSource,
    flags: &Flags,
) -> Result<RoleModels, SettingsError> {
    let l = &file.llm;
    let default_model = model(file, env, flags)
        .or_else(|| l.models.subagent.clone())
        .ok_or_else(|| {
            SettingsError::Invalid(format!(
                "no model configured: pass --model, set {ENV_MODEL}, or set [llm] model in planwave.toml"
            ))
        })?;
    let mut models = RoleModels::single(default_model);
    for (role, m) in per_role(l) {
        if let Some(m) = m {
            models.per_role.insert(role, m.clone());
        }
    }
    Ok(models)
}

/// `--llm-base-url`, `$PLANWAVE_LLM_BASE_URL`, `[llm] base_url`, `$OPENAI_BASE_URL`, OpenAI's;
/// and whether `OPENAI_API_KEY` may be sent there.
fn base_url(
    file: &ConfigFile,
    env: &dyn EnvSource,
    flags: &Flags,
) -> Result<(String, bool), SettingsError> {
    let explicit = flags
        .base_url
        .clone()
        .or_else(|| env.var(ENV_BASE_URL))
        .or_else(|| file.llm.base_url.clone());
    // OPENAI_API_KEY is meant for OpenAI: it is not sent to a server chosen by planwave's own
    // settings unless that server is OpenAI's.
    let openai_key_ok = explicit
        .as_deref()
        .is_none_or(|u| u.contains("api.openai.com"));
    let base_url = explicit
        .or_else(|| env.var(ENV_OPENAI_BASE_URL))
        .unwrap_or_else(|| DEFAULT_BASE_URL.into());
    let base_url = base_url.trim().trim_end_matches('/').to_owned();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(SettingsError::Invalid(format!(
            "base URL {base_url:?} must start with http:// or https://"
        )));
    }
    Ok((base_url, openai_key_ok))
}

/// A positive number of seconds from the file, or the client's default.
fn secs(field: &str, v: Option<f64>, default: Duration) -> Result<Duration, SettingsError> {
    Ok(crate::secs::file_secs(field, v)?.unwrap_or(default))
}

fn timeouts(l: &LlmSection) -> Result<Timeouts, SettingsError> {
    let t = &l.timeouts;
    let d = Timeouts::default();
    Ok(Timeouts {
        connect: secs("[llm.timeouts] connect_secs", t.connect_secs, d.connect)?,
        request: secs("[llm.timeouts] request_secs", t.request_secs, d.request)?,
        idle: secs("[llm.timeouts] idle_secs", t.idle_secs, d.idle)?,
    })
}

fn retry(l: &LlmSection) -> Result<RetryConfig, SettingsError> {
    let r = &l.retry;
    let d = RetryConfig::default();
    Ok(RetryConfig {
        max_retries: r.max_retries.unwrap_or(d.max_retries),
        base: r.base_ms.map(Duration::from_millis).unwrap_or(d.base),
        max: r.max_ms.map(Duration::from_millis).unwrap_or(d.max),
        max_retry_after: secs(
            "[llm.retry] max_retry_after_secs",
            r.max_retry_after_secs,
            d.max_retry_after,
        )?,
    })
}

/// `PLANWAVE_LLM_API_KEY`, then the variable named by `[llm] api_key_env`, then
/// `[llm] api_key`, then `OPENAI_API_KEY` (only when `openai_key_ok`: the base URL is
/// OpenAI's or came from `OPENAI_BASE_URL`). None is fine: local servers need no key.
fn api_key(
    file: &ConfigFile,
    env: &dyn EnvSource,
    openai_key_ok: bool,
) -> Result<(Option<ApiKey>, Option<String>), SettingsError> {
    if let Some(k) = env.var(ENV_API_KEY).and_then(ApiKey::new) {
        return Ok((Some(k), Some(ENV_API_KEY.into())));
    }
    if let Some(var) = &file.llm.api_key_env {
        return match env.var(var).and_then(ApiKey::new) {
            Some(k) => Ok((Some(k), Some(var.clone()))),
            None => Err(SettingsError::Invalid(format!(
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
