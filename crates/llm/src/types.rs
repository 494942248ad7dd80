//! Request and response types shared by every provider.

use planwave_plan::Lang;
use planwave_record::{RoundTag, Usage};
use serde::{Deserialize, Serialize};

/// Which part of planwave is asking; providers may pick a model per role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentRole {
    Planner,
    Subagent,
    Integrator,
    Evaluator,
    Reflector,
}

impl AgentRole {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentRole::Planner => "planner",
            AgentRole::Subagent => "subagent",
            AgentRole::Integrator => "integrator",
            AgentRole::Evaluator => "evaluator",
            AgentRole::Reflector => "reflector",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageRole {
    System,
    User,
    Assistant,
    /// A tool's result in the native tool-calling protocol.
    Tool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: MessageRole,
    pub content: String,
    /// Native protocol: the calls an assistant message asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Native protocol: which call a `tool` message answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage {
            role: MessageRole::System,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage {
            role: MessageRole::User,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage {
            role: MessageRole::Assistant,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
    /// The assistant's turn that asked for tool calls (native protocol).
    pub fn assistant_calls(content: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        ChatMessage {
            tool_calls: calls,
            ..ChatMessage::assistant(content)
        }
    }
    /// One tool result (native protocol).
    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage {
            role: MessageRole::Tool,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: Some(call_id.into()),
        }
    }
}

/// A tool the model may call, in the shape of the OpenAI `tools[].function` object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
}

/// One call the model asked for, in the OpenAI wire shape (`arguments` is JSON text).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    pub function: FunctionCall,
}

fn function_type() -> String {
    "function".into()
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    #[serde(default)]
    pub arguments: String,
}

impl ToolCall {
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: &serde_json::Value,
    ) -> Self {
        ToolCall {
            id: id.into(),
            kind: function_type(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.to_string(),
            },
        }
    }
}

/// A tool a task may use, with its argument schema: what the simulator needs to write calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolRef {
    pub name: String,
    #[serde(default)]
    pub schema: serde_json::Value,
}

/// What one tool call returned so far in a task (the text cut short for headers).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolResultRef {
    pub tool: String,
    pub output: String,
    #[serde(default)]
    pub is_error: bool,
}

/// A prerequisite section as given to a subagent (or a section given to the integrator).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionRef {
    pub id: String,
    pub title: String,
    /// `completed`, `failed` or `blocked` for the integrator; always `completed` for subagents.
    #[serde(default)]
    pub status: String,
}

/// What a request is about, as structured data beside the prompt text.
///
/// Real providers ignore it except for tracing (task id); the simulator writes its answer from
/// it, the way a model would from the prompt. Keeping it structured means the simulator never
/// has to scrape prompts that users may override.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RequestContext {
    pub lang: Lang,
    pub topic: String,
    #[serde(default)]
    pub objectives: Vec<String>,
    /// Subagent requests: the task being written.
    #[serde(default)]
    pub task_id: Option<String>,
    #[serde(default)]
    pub task_title: String,
    #[serde(default)]
    pub key_questions: Vec<String>,
    #[serde(default)]
    pub data_needs: Vec<String>,
    /// Subagents: prerequisite sections given. Integrator and evaluator: every section with
    /// its status. Partial replanning: the kept (`completed`) and replaced tasks.
    #[serde(default)]
    pub sections: Vec<SectionRef>,
    /// Subagents: the task's suggested tools that exist, with their schemas.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolRef>,
    /// Subagents: what the task's tool calls returned so far, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_results: Vec<ToolResultRef>,
    /// The reflective loop's round and execution pass this request belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<RoundTag>,
    /// Planner requests: the plan format asked for, when not the research plan.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_format: Option<planwave_plan::PlanFormat>,
    /// Reflector requests: a step-level reflection on failed tasks (`sections` holds them,
    /// `failed:<kind>` in `status`), not a round's reflection.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub step_reflection: bool,
    /// Subagent requests: an `llm_call` step's direct model call (its own output cap).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub llm_call: bool,
    /// The JSON the answer must be, when it must be JSON: sent as `response_format` (a
    /// grammar on llama.cpp, vLLM and OpenAI) where the server takes it. Not part of what the
    /// request is about: never serialized.
    #[serde(skip)]
    pub answer_schema: Option<std::sync::Arc<AnswerSchema>>,
}

/// A JSON Schema an answer must follow, with the name `response_format` gives it. Bounds
/// (`maxItems`, `maxLength`) in it let a server's grammar stop runaway output itself.
#[derive(Clone, Debug, PartialEq)]
pub struct AnswerSchema {
    /// Letters, digits, `_` and `-` (OpenAI's rule for `json_schema.name`).
    pub name: &'static str,
    pub schema: serde_json::Value,
}

impl AnswerSchema {
    pub fn new(name: &'static str, schema: serde_json::Value) -> std::sync::Arc<AnswerSchema> {
        std::sync::Arc::new(AnswerSchema { name, schema })
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub role: AgentRole,
    pub messages: Vec<ChatMessage>,
    /// 1 for the first try of this request; retries count up.
    pub attempt: u32,
    pub context: RequestContext,
    /// W3C `traceparent` of the caller's span; HTTP providers send it as a header so a
    /// model gateway's spans join the run's trace. Filled by the engine when tracing is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
    /// Native tool calling: the tools offered (sent as the OpenAI `tools`). Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<ToolSpec>,
    /// The most output tokens this call may have (sent as `max_tokens`); `None`: the
    /// client's configured bound, if any. A load test bounds each request on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// Where the answer's text goes as it arrives (streamed planning, serving metrics). Not
    /// part of what is asked: never serialized, equal whatever it holds.
    #[serde(skip)]
    pub on_delta: Option<crate::DeltaSink>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatResponse {
    pub content: String,
    pub usage: Usage,
    pub model: String,
    #[serde(default)]
    pub finish_reason: Option<String>,
    /// Native tool calling: the calls the model asked for.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// Client-side timing of the call, from providers that measure it (the HTTP client, the
    /// simulator). Not recorded in run files.
    #[serde(skip)]
    pub timing: Option<crate::CallTiming>,
}
