//! Tool steps (the step plan format): a task with `tool` and `params` runs that tool directly,
//! without a model; `llm_call` with a `prompt` is a direct model call. Parameters may
//! reference earlier results (`planwave_plan::refs`).

use std::cell::RefCell;

use planwave_llm::{AgentRole, ChatMessage, ChatRequest};
use planwave_plan::refs::Reference;
use planwave_plan::{LLM_CALL, ValidatedPlan, refs};
use planwave_record::{CutPart, SectionCut};
use serde_json::Value;

use crate::calls::TaskCalls;
use crate::messages::TaskFailure;
use planwave_prompts::{StepPrompt, StepValue, TaskText, step_prompt, subagent_context};

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

/// What the reference to task `id` reads: an earlier result, `{{vars.NAME}}`,
/// `{{meta.KEY}}`, or an empty string for a failed optional step (noted in `empty`, to
/// record).
fn lookup(
    step: &Step<'_>,
    plan: &ValidatedPlan,
    id: &str,
    empty: &RefCell<Vec<String>>,
) -> Option<Value> {
    match plan.index_of_key(id) {
        // Dependents of a failed optional step run; a completed step always has its result.
        Some(i) => step.result(i).cloned().or_else(|| {
            plan.task(i).optional.then(|| {
                empty.borrow_mut().push(id.to_owned());
                Value::String(String::new())
            })
        }),
        None => refs::namespace(&plan.spec().about, id),
    }
}

/// The references that read a failed optional step's empty result, each once.
fn sorted(empty: RefCell<Vec<String>>) -> Vec<String> {
    let mut empty = empty.into_inner();
    empty.sort();
    empty.dedup();
    empty
}

/// The parameters with every reference resolved ([`lookup`]).
fn resolve_params(calls: &TaskCalls<'_>, step: &Step<'_>) -> Result<(Value, Vec<String>), String> {
    let plan = &calls.shared.plan;
    let params = plan.task(step.index).params.clone().unwrap_or(Value::Null);
    let empty = RefCell::new(Vec::new());
    let resolved = refs::substitute(&params, &|id: &str| lookup(step, plan, id, &empty))
        .map_err(|e| format!("parameters: {e}"))?;
    Ok((resolved, sorted(empty)))
}

/// An `llm_call`'s prompt: the plan's text with each referenced result in a data block, the
/// results fit to the context budget (`planwave_prompts::step_prompt`), then the step's
/// expected output and the rule about data blocks; the references to a failed optional
/// step; and what was cut, to record.
fn llm_prompt(
    calls: &TaskCalls<'_>,
    step: &Step<'_>,
) -> Result<(StepPrompt, Vec<String>, Vec<SectionCut>), String> {
    let shared = calls.shared;
    let plan = &shared.plan;
    // The step's expected output, when it has one, guides the model's answer; blocks of data
    // come with the rule that what they hold is not an order. Both count against the budget.
    let expected = match plan
        .task(step.index)
        .expected_output
        .as_deref()
        .map(str::trim)
    {
        Some(e) if !e.is_empty() => format!("\n\n{}: {e}", expected_label(plan.lang())),
        _ => String::new(),
    };
    let rule = format!("\n\n{}", shared.prompts.data_rule(plan.lang()));
    let reserved = planwave_llm::estimate_tokens(&expected) + planwave_llm::estimate_tokens(&rule);
    let text = match plan
        .task(step.index)
        .params
        .as_ref()
        .and_then(|p| p.get("prompt"))
    {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => return Err("llm_call needs a \"prompt\" parameter".into()),
    };
    let empty = RefCell::new(Vec::new());
    let resolve = |r: &Reference| {
        let whole = lookup(step, plan, &r.task, &empty)
            .ok_or_else(|| format!("parameters: no result for task {}", r.task))?;
        let value = refs::lookup(&whole, &r.path).ok_or_else(|| {
            let path = r.path.join(".");
            format!(
                "parameters: the result of task {} has no field {path}",
                r.task
            )
        })?;
        let result = plan
            .index_of_key(&r.task)
            .is_some_and(|i| step.result(i).is_some());
        Ok(if result {
            StepValue::Result {
                step: r.task.clone(),
                value,
            }
        } else {
            StepValue::Inline(value)
        })
    };
    let budget = shared.config.context_budget_tokens;
    let budget = budget.map(|b| b.saturating_sub(reserved).max(1));
    let mut prompt = step_prompt(&text, resolve, budget, plan.lang())?;
    prompt.text.push_str(&expected);
    if !prompt.data.is_empty() {
        prompt.text.push_str(&rule);
    }
    let cuts = prompt
        .data
        .iter()
        .filter(|d| d.was_cut())
        .filter_map(|d| {
            Some(SectionCut {
                from: plan.id(plan.index_of_key(&d.step)?).clone(),
                part: CutPart::Section,
                tool: None,
                original_tokens: d.original_tokens,
                kept_tokens: d.kept_tokens,
                original_chars: d.original_chars,
                kept_chars: d.kept_chars,
            })
        })
        .collect();
    Ok((prompt, sorted(empty), cuts))
}

async fn run_inner(
    calls: &mut TaskCalls<'_>,
    step: &Step<'_>,
    attempt: u32,
) -> Result<StepDone, Failure> {
    let shared = calls.shared;
    let plan = &shared.plan;
    let (index, tool) = (step.index, step.tool);
    if tool == LLM_CALL {
        let (prompt, empty_refs, cuts) = llm_prompt(calls, step).map_err(Failure::Other)?;
        let text = prompt.text;
        let mut context = subagent_context(plan, index, &TaskText::of(plan.task(index)), &[]);
        // What the prompt holds, so a server answering from the context (the simulator)
        // answers from the results as a model reads them in the prompt.
        context.tool_results = referenced_results(plan, prompt.data);
        if attempt == 1 {
            calls.cuts.extend(cuts);
        }
        // Its own output cap (`--max-output llm_call=N`).
        context.llm_call = true;
        let request = ChatRequest {
            role: AgentRole::Subagent,
            messages: vec![ChatMessage::user(text)],
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
    let (params, empty_refs) = resolve_params(calls, step).map_err(Failure::Other)?;
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

/// The earlier results an `llm_call`'s prompt holds, each once, for its request context.
fn referenced_results(
    plan: &ValidatedPlan,
    data: Vec<planwave_prompts::StepData>,
) -> Vec<planwave_llm::ToolResultRef> {
    let mut out: Vec<planwave_llm::ToolResultRef> = Vec::new();
    let mut seen = Vec::new();
    for d in data {
        if seen.contains(&d.step) {
            continue;
        }
        let tool = plan
            .index_of_key(&d.step)
            .and_then(|i| plan.task(i).tool.clone())
            .unwrap_or_else(|| d.step.clone());
        out.push(planwave_llm::ToolResultRef {
            tool,
            output: d.text,
            is_error: false,
        });
        seen.push(d.step);
    }
    out
}

fn expected_label(lang: planwave_plan::Lang) -> &'static str {
    match lang {
        planwave_plan::Lang::Zh => "预期输出",
        planwave_plan::Lang::En => "Expected output",
    }
}
