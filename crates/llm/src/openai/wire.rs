//! The Chat Completions wire format, only as much of it as planwave sends and reads.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{ChatMessage, Usage};

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
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
pub struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub completion_tokens_details: Option<Value>,
    /// Some servers put it at the top level.
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
}

impl WireUsage {
    pub fn reasoning_tokens(&self) -> u64 {
        self.reasoning_tokens
            .or_else(|| {
                self.completion_tokens_details
                    .as_ref()
                    .and_then(|d| d.get("reasoning_tokens"))
                    .and_then(Value::as_u64)
            })
            .unwrap_or(0)
    }

    pub fn to_usage(&self) -> Usage {
        let reasoning = self.reasoning_tokens();
        Usage {
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens.saturating_sub(reasoning),
            reasoning_tokens: reasoning,
        }
    }
}

/// A non-streamed completion.
#[derive(Debug, Deserialize)]
pub struct Completion {
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub choices: Vec<Choice>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
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
