//! The Chat Completions wire format, only as much of it as planwave sends and reads.

use planwave_record::Usage;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ChatMessage;

#[derive(Debug, Serialize)]
pub struct ChatBody<'a> {
    pub model: &'a str,
    pub messages: &'a [ChatMessage],
    pub stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_format: Option<Value>,
    /// Native tool calling: `[{"type": "function", "function": {...}}]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<Value>>,
}

/// The OpenAI `tools` array for `specs`; `None` when there are none.
pub fn tools(specs: &[crate::ToolSpec]) -> Option<Vec<Value>> {
    (!specs.is_empty()).then(|| {
        specs
            .iter()
            .map(|t| serde_json::json!({"type": "function", "function": t}))
            .collect()
    })
}

/// `usage` as servers send it. Reasoning tokens are inside `completion_tokens` for OpenAI and
/// DeepSeek; planwave's [`Usage`] keeps them apart so totals add up without double counting.
///
/// The cached part of the prompt comes in three shapes: OpenAI's
/// `prompt_tokens_details.cached_tokens`, DeepSeek's `prompt_cache_hit_tokens` /
/// `prompt_cache_miss_tokens`, and Anthropic's `cache_read_input_tokens` /
/// `cache_creation_input_tokens` (which proxies pass on, sometimes with Anthropic's
/// `input_tokens` that leaves the cached part out).
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
pub struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// Anthropic's and the Responses API's name for the prompt.
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens_details: Option<Value>,
    /// Some servers put it at the top level.
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
    /// OpenAI: `{"cached_tokens": n}` (proxies add `cache_write_tokens` or
    /// `cache_creation_tokens`).
    #[serde(default)]
    pub prompt_tokens_details: Option<Value>,
    /// The Responses API's `{"cached_tokens": n}`.
    #[serde(default)]
    pub input_tokens_details: Option<Value>,
    /// DeepSeek.
    #[serde(default)]
    pub prompt_cache_hit_tokens: Option<u64>,
    #[serde(default)]
    pub prompt_cache_miss_tokens: Option<u64>,
    /// Anthropic (through OpenAI-compatible proxies).
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
}

/// `details[key]` as a count, when it is one.
fn detail(details: &Option<Value>, key: &str) -> Option<u64> {
    details.as_ref()?.get(key)?.as_u64()
}

impl WireUsage {
    pub fn reasoning_tokens(&self) -> u64 {
        self.reasoning_tokens
            .or_else(|| detail(&self.completion_tokens_details, "reasoning_tokens"))
            .unwrap_or(0)
    }

    /// Prompt tokens read from the cache, whichever shape reported them.
    pub fn cached_tokens(&self) -> u64 {
        detail(&self.prompt_tokens_details, "cached_tokens")
            .or(self.prompt_cache_hit_tokens)
            .or(self.cache_read_input_tokens)
            .or_else(|| detail(&self.input_tokens_details, "cached_tokens"))
            .unwrap_or(0)
    }

    /// Prompt tokens written to the cache (Anthropic's cache creation).
    pub fn cache_write_tokens(&self) -> u64 {
        self.cache_creation_input_tokens
            .or_else(|| detail(&self.prompt_tokens_details, "cache_write_tokens"))
            .or_else(|| detail(&self.prompt_tokens_details, "cache_creation_tokens"))
            .unwrap_or(0)
    }

    /// The whole prompt, cached part included. Anthropic's `input_tokens` leaves out what
    /// was read from or written to the cache; a count smaller than those parts is taken to
    /// be that shape and the parts are added back.
    pub fn prompt_tokens(&self) -> u64 {
        let (read, write) = (self.cached_tokens(), self.cache_write_tokens());
        let anthropic_parts = self
            .cache_read_input_tokens
            .unwrap_or(0)
            .saturating_add(self.cache_creation_input_tokens.unwrap_or(0));
        match (self.prompt_tokens, self.input_tokens) {
            (Some(p), _) if p >= read.saturating_add(write) => p,
            (Some(p), _) => p.saturating_add(anthropic_parts).max(read),
            (None, Some(i)) if self.prompt_tokens_details.is_none() => {
                i.saturating_add(anthropic_parts)
            }
            (None, Some(i)) => i.max(read),
            (None, None) => self
                .prompt_cache_hit_tokens
                .unwrap_or(0)
                .saturating_add(self.prompt_cache_miss_tokens.unwrap_or(0))
                .max(read.saturating_add(write)),
        }
    }

    pub fn to_usage(&self) -> Usage {
        let reasoning = self.reasoning_tokens();
        let prompt = self.prompt_tokens();
        let completion = self.completion_tokens.or(self.output_tokens).unwrap_or(0);
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion.saturating_sub(reasoning),
            reasoning_tokens: reasoning,
            cached_tokens: self.cached_tokens().min(prompt),
            cache_write_tokens: self.cache_write_tokens().min(prompt),
        }
    }
}

#[cfg(test)]
#[path = "wire_tests.rs"]
mod tests;

/// A non-streamed completion.
#[derive(Debug, Deserialize)]
pub struct Completion {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub choices: Vec<Choice>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
    /// llama.cpp's per-request `timings` (a malformed one counts as absent).
    #[serde(default, deserialize_with = "lenient")]
    pub timings: Option<crate::ServerTimings>,
}

/// `T` when the value reads as one, `None` otherwise: a side figure never fails an answer.
fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let v = serde_json::Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

#[derive(Debug, Deserialize)]
pub struct Choice {
    #[serde(default)]
    pub message: Option<Message>,
    #[serde(default)]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct Message {
    #[serde(default)]
    pub content: Option<String>,
    #[serde(default)]
    pub reasoning_content: Option<String>,
    #[serde(default)]
    pub reasoning: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<crate::ToolCall>,
}

/// `{"error": {"message": ..., "type": ...}}` or `{"error": "text"}` as one line of text.
pub fn error_message(err: &Value) -> String {
    match err {
        Value::String(s) => s.clone(),
        Value::Object(o) => {
            let msg = o
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("error without message");
            match o.get("type").or_else(|| o.get("code")).and_then(|t| {
                t.as_str()
                    .map(str::to_owned)
                    .or_else(|| t.as_i64().map(|n| n.to_string()))
            }) {
                Some(t) => format!("{msg} ({t})"),
                None => msg.to_owned(),
            }
        }
        other => other.to_string(),
    }
}

/// The most useful line of an error body: its `error.message` when JSON, else the text.
pub fn body_message(body: &str) -> String {
    if let Ok(v) = serde_json::from_str::<Value>(body) {
        if let Some(e) = v.get("error") {
            return error_message(e);
        }
        if let Some(m) = v.get("message").and_then(Value::as_str) {
            return m.to_owned();
        }
    }
    let t: String = body.trim().chars().take(300).collect();
    if t.is_empty() {
        "(empty body)".into()
    } else {
        t
    }
}
