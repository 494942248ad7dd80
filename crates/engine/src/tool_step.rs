//! Tool steps (the step plan format): a task with `tool` and `params` runs that tool directly,
//! without a model; `llm_call` with a `prompt` is a direct model call. Parameters may
//! reference earlier results (`planwave_plan::refs`).

use std::cell::RefCell;

use planwave_llm::{AgentRole, ChatMessage, ChatRequest};
use planwave_plan::{LLM_CALL, refs};
use serde_json::Value;

use crate::calls::TaskCalls;
use crate::messages::TaskFailure;
use planwave_prompts::{TaskText, subagent_context};

/// What one attempt of a tool step produced.
pub(crate) struct StepDone {
    pub section: String,
    pub json: Value,
    /// References that resolved to an empty string because their optional step failed.
    pub empty_refs: Vec<String>,
}

/// Why one attempt of a tool step failed, and whether another attempt may help.
pub(crate) struct StepFailed {
    pub failure: TaskFailure,
    /// Worth another attempt: a timeout, a broken connection, a retryable model error, or
    /// (when the step asks for retries itself) an error the tool reported.
    pub retry: bool,
}

/// One tool step as its subagent runs it.
pub(crate) struct Step<'a> {
    pub index: usize,
    pub tool: &'a str,
    /// The plan gave the step its own `retry_count`: the author expects the tool itself to
    /// fail now and then, so a tool-reported error is worth retrying too.
    pub explicit_retries: bool,
    /// The results its references name, by task index (from the supervisor).
    pub results: &'a [(usize, Value)],
}

impl Step<'_> {
    fn result(&self, index: usize) -> Option<&Value> {
        self.results
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, v)| v)
    }
}

/// Runs one attempt of a tool step.
pub(crate) async fn run(
    calls: &mut TaskCalls<'_>,
    step: &Step<'_>,
    attempt: u32,
) -> Result<StepDone, StepFailed> {
    run_inner(calls, step, attempt).await.map_err(|e| {
        let (failure, retry) = match e {
            Failure::Tool(e) if e.is_retryable() => (TaskFailure::Transient(e.to_string()), true),
            Failure::Model(e) if e.is_retryable() => (TaskFailure::Transient(e.to_string()), true),
            Failure::Model(e @ planwave_llm::LlmError::Budget { .. }) => {
                (TaskFailure::Budget(e.to_string()), false)
            }
            Failure::Tool(e) => (TaskFailure::Fatal(e.to_string()), false),
            Failure::Model(e) => (TaskFailure::Fatal(e.to_string()), false),
            Failure::Reported(e) => (TaskFailure::Fatal(e), step.explicit_retries),
            Failure::Other(e) => (TaskFailure::Fatal(e), false),
        };
        StepFailed { failure, retry }
    })
}

enum Failure {
    Tool(planwave_mcp::ToolError),
    Model(planwave_llm::LlmError),
    /// The tool ran and answered with an error.
    Reported(String),
    Other(String),
}

/// The parameters with every reference resolved: earlier results, `{{vars.NAME}}`,
/// `{{meta.KEY}}`, and an empty string for a failed optional step (returned, to record).
fn resolve_params(calls: &TaskCalls<'_>, step: &Step<'_>) -> Result<(Value, Vec<String>), String> {
    let shared = calls.shared;
    let index = step.index;
    let plan = &shared.plan;
    let params = plan.task(index).params.clone().unwrap_or(Value::Null);
    let empty = RefCell::new(Vec::new());
    let resolved = refs::substitute(&params, &|id: &str| match plan.index_of_key(id) {
        // Dependents of a failed optional step run; a completed step always has its result.
        Some(i) => step.result(i).cloned().or_else(|| {
            plan.task(i).optional.then(|| {
                empty.borrow_mut().push(id.to_owned());
                Value::String(String::new())
            })
        }),
        None => refs::namespace(&plan.spec().about, id),
    })
    .map_err(|e| format!("parameters: {e}"))?;
    let mut empty = empty.into_inner();
    empty.sort();
    empty.dedup();
    Ok((resolved, empty))
}

async fn run_inner(
    calls: &mut TaskCalls<'_>,
    step: &Step<'_>,
    attempt: u32,
) -> Result<StepDone, Failure> {
    let shared = calls.shared;
    let plan = &shared.plan;
    let (index, tool) = (step.index, step.tool);
    let (params, empty_refs) = resolve_params(calls, step).map_err(Failure::Other)?;
    if tool == LLM_CALL {
        let prompt = match params.get("prompt") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => other.to_string(),
            None => {
                return Err(Failure::Other(
                    "llm_call needs a \"prompt\" parameter".into(),
                ));
            }
        };
        // The step's expected output, when it has one, guides the model's answer.
        let prompt = match plan.task(index).expected_output.as_deref().map(str::trim) {
            Some(e) if !e.is_empty() => format!("{prompt}\n\n{}: {e}", expected_label(plan.lang())),
            _ => prompt,
        };
        let mut context = subagent_context(plan, index, &TaskText::of(plan.task(index)), &[]);
        context.tool_results = referenced_results(calls, step);
        // Its own output cap (`--max-output llm_call=N`).
        context.llm_call = true;
        let request = ChatRequest {
            role: AgentRole::Subagent,
            messages: vec![ChatMessage::user(prompt)],
            attempt,
            context,
            traceparent: None,
            tools: Vec::new(),
            on_delta: None,
            max_tokens: None,
        };
        let answer = calls.model(request).await.map_err(Failure::Model)?;
        return Ok(StepDone {
            section: answer.content.clone(),
            json: Value::String(answer.content),
            empty_refs,
        });
    }
    let params = if params.is_null() {
        Value::Object(Default::default())
    } else {
        params
    };
    // One call per attempt: the step's retries are the tool's retries.
    match calls.tool_attempt(tool, params, attempt).await {
        Ok(out) if out.is_error => Err(Failure::Reported(format!(
            "tool {tool} returned an error: {}",
            out.text
        ))),
        Ok(out) => {
            let json = out.json();
            Ok(StepDone {
                section: out.text,
                json,
                empty_refs,
            })
        }
        Err(e) => Err(Failure::Tool(e)),
    }
}

/// The earlier results an `llm_call`'s prompt references, for its request context: what
/// the prompt holds, so a server answering from the context (the simulator) answers from
/// them as a model reads them in the prompt.
fn referenced_results(calls: &TaskCalls<'_>, step: &Step<'_>) -> Vec<planwave_llm::ToolResultRef> {
    let plan = &calls.shared.plan;
    let Some(params) = plan.task(step.index).params.as_ref() else {
        return Vec::new();
    };
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for r in refs::references(params) {
        let Some(i) = plan.index_of_key(&r.task) else {
            continue; // `vars.`, `meta.`: not a result
        };
        let Some(result) = step.result(i).filter(|_| !seen.contains(&i)) else {
            continue;
        };
        seen.push(i);
        out.push(planwave_llm::ToolResultRef {
            tool: plan.task(i).tool.clone().unwrap_or_else(|| r.task.clone()),
            output: match result {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            },
            is_error: false,
        });
    }
    out
}

fn expected_label(lang: planwave_plan::Lang) -> &'static str {
    match lang {
        planwave_plan::Lang::Zh => "预期输出",
        planwave_plan::Lang::En => "Expected output",
    }
}
