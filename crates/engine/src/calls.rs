//! [`TaskCalls`]: every model call and tool call a task makes goes through here, so events,
//! usage, run records (and tracing spans) are added in one place.

use std::time::Instant;

use planwave_llm::{AgentRole, ChatRequest, ChatResponse, LlmError};
use planwave_mcp::{ToolError, ToolOutput};
use planwave_plan::TaskId;
use planwave_record::{CallRecord, EventKind, SectionCut, ToolCallRecord, Usage};
use planwave_telemetry::tool;
use ractor::ActorRef;
use serde_json::Value;
use tracing::Instrument;

use crate::messages::{SubagentReport, SupervisorMsg, TaskFailure};
use crate::shared::RunShared;

/// Output kept per tool call in `run.json`.
const RECORD_OUTPUT_CHARS: usize = 4000;

pub(crate) struct TaskCalls<'a> {
    pub shared: &'a RunShared,
    pub task: TaskId,
    /// Sum over every model call of the task.
    pub usage: Usage,
    pub tool_calls: Vec<ToolCallRecord>,
    /// Model calls made so far. The report carries them to the supervisor; dropped before a
    /// report (the subagent was killed, or its time ran out) they go to it alone.
    records: Vec<CallRecord>,
    supervisor: &'a ActorRef<SupervisorMsg>,
    /// Tool outputs shortened before the model saw them.
    pub cuts: Vec<SectionCut>,
    /// The task's attempt in progress (its model retries), set by the subagent.
    pub attempt: u32,
    /// Successful tool calls by (tool, arguments), with the attempt that made them: a later
    /// attempt asking for the same call gets the same result without calling again. A
    /// B-tree: no hasher state in every subagent's future, and a task makes few calls.
    done: std::collections::BTreeMap<(String, String), (u32, ToolOutput)>,
}

impl<'a> TaskCalls<'a> {
    pub fn new(
        shared: &'a RunShared,
        task: TaskId,
        supervisor: &'a ActorRef<SupervisorMsg>,
    ) -> TaskCalls<'a> {
        TaskCalls {
            shared,
            task,
            usage: Usage::default(),
            tool_calls: Vec::new(),
            records: Vec::new(),
            supervisor,
            cuts: Vec::new(),
            attempt: 1,
            done: std::collections::BTreeMap::new(),
        }
    }

    /// One model call, recorded as an `llm_call` event.
    ///
    /// Not an `async fn`: an async fn keeps its arguments for its whole life, so the request
    /// (moved into the provider's call) would keep a second slot in this future while the
    /// call is in flight. The call is made here and only its boxed future is awaited.
    pub fn model(
        &mut self,
        request: ChatRequest,
    ) -> impl Future<Output = Result<ChatResponse, LlmError>> {
        let shared = self.shared;
        let attempt = request.attempt;
        let t0 = Instant::now();
        let call = shared.provider.chat(request);
        async move {
            let answer = call.await;
            let duration_ms = t0.elapsed().as_secs_f64() * 1000.0;
            let (call_usage, model, error) = match &answer {
                Ok(r) => (r.usage, r.model.clone(), None),
                Err(e) => (
                    Usage::default(),
                    shared.provider.info().model,
                    Some(e.to_string()),
                ),
            };
            self.usage += call_usage;
            let call = ModelCall {
                task: Some(self.task.clone()),
                role: AgentRole::Subagent,
                model,
                attempt,
                duration_ms,
                usage: call_usage,
                error,
            };
            self.records.push(call.record(shared));
            answer
        }
    }

    /// Task `index`'s report: its outcome and what its calls spent.
    pub fn report(
        &mut self,
        index: usize,
        attempts: u32,
        context_cut: Vec<SectionCut>,
        result: Result<std::sync::Arc<str>, TaskFailure>,
    ) -> SubagentReport {
        SubagentReport {
            index,
            attempts,
            finished_at: planwave_record::timefmt::now(),
            usage: self.usage,
            context_cut,
            result,
            tool_calls: std::mem::take(&mut self.tool_calls),
            calls: std::mem::take(&mut self.records),
            written: None,
            empty_refs: Vec::new(),
            warnings: Vec::new(),
            kept_result: None,
        }
    }

    /// One tool call through the run's MCP registry, tried once more after a timeout or a
    /// broken connection (retry once). Each attempt is a `tool_call` event and a record.
    ///
    /// A call an earlier attempt of the task already made successfully, with the same
    /// arguments, is not made again: its result is reused and recorded as `reused`.
    pub async fn tool(&mut self, name: &str, args: Value) -> Result<ToolOutput, ToolError> {
        let key = (name.to_owned(), args.to_string());
        if let Some((made_in, out)) = self.done.get(&key)
            && *made_in < self.attempt
        {
            let out = out.clone();
            self.reused(name, args, &out);
            return Ok(out);
        }
        let result = match self.tool_attempt(name, args.clone(), 1).await {
            Err(e) if e.is_retryable() => self.tool_attempt(name, args, 2).await,
            other => other,
        };
        if let Ok(out) = &result
            && !out.is_error
        {
            self.done.insert(key, (self.attempt, out.clone()));
        }
        result
    }

    /// Records a reused result like a call, with outcome `reused` and no duration.
    fn reused(&mut self, name: &str, args: Value, out: &ToolOutput) {
        let server = self
            .shared
            .mcp
            .as_ref()
            .and_then(|m| m.tool(name).map(|t| t.server.clone()))
            .unwrap_or_default();
        self.shared.emit(EventKind::ToolCall {
            task: self.task.clone(),
            tool: name.to_owned(),
            server: server.clone(),
            attempt: 0,
            duration_ms: 0.0,
            outcome: "reused".into(),
            error: None,
        });
        self.tool_calls.push(ToolCallRecord {
            tool: name.to_owned(),
            server,
            attempt: 0,
            args,
            duration_ms: 0.0,
            outcome: "reused".into(),
            output: Some(cut(&out.text)),
            error: None,
        });
    }

    /// One attempt of a tool call, numbered `attempt` in its event and record. Tool steps
    /// call this directly: their own retry policy decides whether another attempt follows.
    pub async fn tool_attempt(
        &mut self,
        name: &str,
        args: Value,
        attempt: u32,
    ) -> Result<ToolOutput, ToolError> {
        let Some(mcp) = self.shared.mcp.clone() else {
            return Err(ToolError::UnknownTool {
                name: format!("{name} (no MCP servers are configured)"),
            });
        };
        let server = mcp.tool(name).map(|t| t.server.clone()).unwrap_or_default();
        let span = tool::execute_tool_span(name, &server, attempt);
        let t0 = Instant::now();
        // Boxed: the MCP call's future is large, and inlined it would grow every
        // subagent's future (copied whole when ractor boxes the actor's start).
        let result = Box::pin(mcp.call(name, args.clone()).instrument(span.clone())).await;
        let duration_ms = t0.elapsed().as_secs_f64() * 1000.0;
        let (outcome, output, error) = match &result {
            Ok(o) if o.is_error => ("tool_error", Some(cut(&o.text)), Some(cut(&o.text))),
            Ok(o) => ("ok", Some(cut(&o.text)), None),
            Err(e) => ("error", None, Some(e.to_string())),
        };
        tool::record_tool_outcome(&span, outcome, error.as_deref());
        self.shared.emit(EventKind::ToolCall {
            task: self.task.clone(),
            tool: name.to_owned(),
            server: server.clone(),
            attempt,
            duration_ms,
            outcome: outcome.into(),
            error: error.clone(),
        });
        self.tool_calls.push(ToolCallRecord {
            tool: name.to_owned(),
            server,
            attempt,
            args,
            duration_ms,
            outcome: outcome.into(),
            output,
            error,
        });
        result
    }
}

impl Drop for TaskCalls<'_> {
    /// Calls no report carried (the subagent was killed mid-task, or its time ran out): the
    /// supervisor hears of them alone, so the run's records and cost miss none.
    fn drop(&mut self) {
        if !self.records.is_empty() {
            let calls = std::mem::take(&mut self.records);
            let _ = self.supervisor.send_message(SupervisorMsg::Calls(calls));
        }
    }
}

/// One model call as it ended, for the run's call records and (when anything listens) its
/// `llm_call` event.
pub(crate) struct ModelCall {
    pub task: Option<TaskId>,
    pub role: AgentRole,
    pub model: String,
    pub attempt: u32,
    pub duration_ms: f64,
    pub usage: Usage,
    pub error: Option<String>,
}

impl ModelCall {
    /// Its record, the event emitted with the same time when anything listens.
    pub fn record(self, shared: &RunShared) -> CallRecord {
        let ended = planwave_record::timefmt::now();
        let started_at = ended - chrono::Duration::microseconds((self.duration_ms * 1000.0) as i64);
        let record = CallRecord {
            task: self.task,
            ..CallRecord::ended(
                self.role.as_str(),
                self.model,
                self.attempt,
                started_at,
                self.duration_ms,
                &self.usage,
                self.error,
            )
        };
        if shared.wants_events() {
            shared.emit_at(
                ended,
                EventKind::LlmCall {
                    task: record.task.clone(),
                    role: record.role.clone(),
                    model: record.model.clone(),
                    attempt: record.attempt,
                    duration_ms: record.duration_ms,
                    usage: self.usage,
                    error: record.error.clone(),
                },
            );
        }
        record
    }
}

fn cut(text: &str) -> String {
    if text.chars().count() <= RECORD_OUTPUT_CHARS {
        return text.to_owned();
    }
    let mut s: String = text.chars().take(RECORD_OUTPUT_CHARS).collect();
    s.push('…');
    s
}
