//! The subagent's tool loop (the JSON tool protocol and native tool calls), in two protocols on one executor.
//!
//! **JSON:** the model answers `{"content": "...", "next": [{"mcp": "NAME", "args": {...}}]}`,
//! read as tolerantly as a plan (`tool_answer.rs`: prose around the JSON, fences). An answer
//! that is still unusable (broken or cut-off JSON, another shape) goes back to the model with
//! its problems, at most twice (`tool_answer::MAX_REPAIRS`); then the task fails with those
//! problems. Prose (no JSON, or a Markdown section merely quoting some) is the section.
//! **Native:** OpenAI function calling, `tools` in the request and `tool_calls` back.
//!
//! Either way the requested calls run in order, and each call's output is chained into the
//! next call (the rule below); every output, and any tool error, goes back to the model,
//! and the loop ends when the model asks for nothing more: its content is the section. After
//! `max_tool_rounds` rounds the model gets one last turn without tools.
//!
//! **Chaining rule:** a chain's input starts as the task's title (its name, else the first
//! line of its description), so the first call gets the task's context; after each call it is
//! that call's output text. The input is passed as the argument `input` when the tool's input
//! schema declares an `input` property (and the model did not set it); for tools without
//! `input`, the model writes `{{input}}` inside any string argument and it is replaced by the
//! input. Tools taking neither do not receive it. A call that fails, or whose tool reports an
//! error (`isError`), ends the chain: later calls would get the error as input. The error goes
//! back to the model as that call's result (marked as an error, and `tool_error` in the call
//! record), and the model decides: other arguments, another tool, or the section, within
//! `max_tool_rounds`.

use futures::future::Either;
use planwave_llm::{
    ChatMessage, ChatRequest, ChatResponse, LlmError, ToolRef, ToolResultRef, ToolSpec,
};
use planwave_mcp::ToolInfo;
use planwave_prompts::ToolListing;
use planwave_record::{CutPart, SectionCut};
use serde_json::{Value, json};

use crate::calls::TaskCalls;
use crate::config::ToolProtocol;
use crate::tool_answer::{Step, decide};

/// Tool output given back to the model per call (longer outputs are cut).
const OUTPUT_CHARS: usize = 8000;

/// The model's answer to the task, with tool rounds when the run has tools. `suggested` are
/// the task's suggested tools (validation has dropped unknown ones).
///
/// Not an `async fn`, and the tool rounds boxed: an async fn keeps its arguments for its
/// whole life, so the request would keep a slot here (beside the one in the model call)
/// while the call is in flight, and plain tasks (no tools, the common case) would carry the
/// tool rounds' future size. Without tools this is the model call's own future.
pub(crate) fn converse<'c>(
    calls: &'c mut TaskCalls<'_>,
    request: ChatRequest,
    suggested: &'c [String],
) -> impl Future<Output = Result<ChatResponse, LlmError>> + 'c {
    let tools: Vec<ToolInfo> = calls
        .shared
        .mcp
        .as_ref()
        .map(|m| m.tools().to_vec())
        .unwrap_or_default();
    if tools.is_empty() {
        return Either::Left(calls.model(request));
    }
    Either::Right(Box::pin(tool_rounds(calls, request, suggested, tools)))
}

/// [`converse`] with tools: rounds of model answers and the tool calls they ask for.
async fn tool_rounds(
    calls: &mut TaskCalls<'_>,
    mut request: ChatRequest,
    suggested: &[String],
    tools: Vec<ToolInfo>,
) -> Result<ChatResponse, LlmError> {
    let protocol = calls.shared.config.tool_protocol;
    let lang = calls.shared.plan.lang();
    let max_rounds = calls.shared.config.max_tool_rounds;
    request.context.tools = suggested
        .iter()
        .filter_map(|s| tools.iter().find(|t| t.name == *s))
        .map(|t| ToolRef {
            name: t.name.clone(),
            schema: t.input_schema.clone(),
        })
        .collect();
    match protocol {
        ToolProtocol::Json => {
            request.messages.push(ChatMessage::user(
                calls.shared.prompts.tool_protocol(lang, &listings(&tools)),
            ));
            request.context.answer_schema = Some(crate::tool_schema::tool_turn(&tools));
        }
        ToolProtocol::Native => request.tools = tools.iter().map(spec).collect(),
    }
    let mut round = 0;
    loop {
        round += 1;
        let last_turn = round > max_rounds;
        if last_turn {
            // One more turn without tools, so the task still gets its section.
            request.tools.clear();
            request.context.tools.clear();
            // The section, in whatever form: prose is accepted on the last turn.
            request.context.answer_schema = None;
            request.messages.push(ChatMessage::user(
                calls.shared.prompts.tools_exhausted(lang),
            ));
        }
        let mut answer = calls.model(request.clone()).await?;
        let next: Vec<(String, Value)> = match protocol {
            ToolProtocol::Native => answer
                .tool_calls
                .iter()
                .map(|c| {
                    let args =
                        serde_json::from_str(&c.function.arguments).unwrap_or_else(|_| json!({}));
                    (c.function.name.clone(), args)
                })
                .collect(),
            ToolProtocol::Json => {
                // Boxed like the chain below: plain tasks do not carry the repair's future.
                let (read, next) =
                    Box::pin(read_or_repair(calls, &mut request, answer, last_turn)).await?;
                answer = read;
                next
            }
        };
        if next.is_empty() || last_turn {
            return Ok(answer);
        }
        // Boxed so plain tasks (no tool calls) do not carry this future's size.
        let results = Box::pin(run_chain(calls, &tools, &next, &request.context.task_title)).await;
        match protocol {
            ToolProtocol::Native => {
                request.messages.push(ChatMessage::assistant_calls(
                    answer.content.clone(),
                    answer.tool_calls.clone(),
                ));
                for (i, call) in answer.tool_calls.iter().enumerate() {
                    let text = match results.get(i) {
                        Some(r) => tool_text(r),
                        None => "not run: an earlier call in the chain failed".into(),
                    };
                    request
                        .messages
                        .push(ChatMessage::tool(call.id.clone(), text));
                }
            }
            ToolProtocol::Json => {
                request
                    .messages
                    .push(ChatMessage::assistant(answer.content.clone()));
                request.messages.push(ChatMessage::user(
                    calls.shared.prompts.tool_results(lang, &results),
                ));
            }
        }
        request.context.tool_results.extend(results);
    }
}

/// A JSON-protocol answer read (module docs), repaired by the model while it is unusable.
/// Returns the answer, its content replaced by the section when the loop ends with it, and
/// the calls it asks for; when repairs are used up, the error the task fails with.
async fn read_or_repair(
    calls: &mut TaskCalls<'_>,
    request: &mut ChatRequest,
    mut answer: ChatResponse,
    last_turn: bool,
) -> Result<(ChatResponse, Vec<(String, Value)>), LlmError> {
    let lang = calls.shared.plan.lang();
    let mut repairs = 0;
    loop {
        match decide(&answer.content, last_turn, repairs) {
            Step::Use { content, next } => {
                if next.is_empty() || last_turn {
                    answer.content = content;
                }
                return Ok((answer, next));
            }
            // Not retryable: the model was already asked to fix the format MAX_REPAIRS times.
            Step::GiveUp(message) => {
                return Err(LlmError::Fatal {
                    provider: calls.shared.provider.info().provider,
                    model: answer.model,
                    message,
                });
            }
            Step::Repair(problems) => {
                repairs += 1;
                let prompt = calls
                    .shared
                    .prompts
                    .tool_answer_repair(lang, repairs + 1, &problems);
                request
                    .messages
                    .push(ChatMessage::assistant(answer.content.clone()));
                request.messages.push(ChatMessage::user(prompt));
                answer = calls.model(request.clone()).await?;
            }
        }
    }
}

/// Runs the calls in order with the chaining rule, the chain's input starting as `context`
/// (the task's title: one bounded line, fit to be an argument, where the description may be
/// pages); stops at the first call without a result.
async fn run_chain(
    calls: &mut TaskCalls<'_>,
    tools: &[ToolInfo],
    next: &[(String, Value)],
    context: &str,
) -> Vec<ToolResultRef> {
    let mut results = Vec::with_capacity(next.len());
    let mut input = Some(context.to_owned()).filter(|c| !c.trim().is_empty());
    for (name, args) in next {
        let info = tools
            .iter()
            .find(|t| t.name == *name)
            .or_else(|| calls.shared.mcp.as_ref().and_then(|m| m.tool(name)));
        let args = chain_args(info, args.clone(), input.as_deref());
        match calls.tool(name, args).await {
            Ok(out) => {
                results.push(ToolResultRef {
                    tool: name.clone(),
                    output: for_model(calls, name, &out.text),
                    is_error: out.is_error,
                });
                // A tool's own error is its result for the model, never the next call's
                // input: the chain stops and the model decides what to do about it.
                if out.is_error {
                    break;
                }
                input = Some(out.text);
            }
            Err(e) => {
                results.push(ToolResultRef {
                    tool: name.clone(),
                    output: for_model(calls, name, &e.to_string()),
                    is_error: true,
                });
                break;
            }
        }
    }
    results
}

/// Applies the chaining rule (module docs) to one call's arguments.
pub(crate) fn chain_args(info: Option<&ToolInfo>, args: Value, input: Option<&str>) -> Value {
    let Some(input) = input else { return args };
    let mut args = replace_input(args, input);
    if let Value::Object(map) = &mut args
        && info.is_some_and(ToolInfo::takes_input)
        && !map.contains_key("input")
    {
        map.insert("input".into(), Value::String(input.to_owned()));
    }
    args
}

fn replace_input(v: Value, input: &str) -> Value {
    match v {
        Value::String(s) if s.contains("{{input}}") => Value::String(s.replace("{{input}}", input)),
        Value::Array(a) => Value::Array(a.into_iter().map(|v| replace_input(v, input)).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| (k, replace_input(v, input)))
                .collect(),
        ),
        other => other,
    }
}

fn spec(t: &ToolInfo) -> ToolSpec {
    ToolSpec {
        name: t.name.clone(),
        description: t.description.clone(),
        parameters: t.input_schema.clone(),
    }
}

/// The tools as the JSON tool protocol's prompt lists them.
fn listings(tools: &[ToolInfo]) -> Vec<ToolListing<'_>> {
    tools
        .iter()
        .map(|t| ToolListing {
            name: &t.name,
            description: t.description.trim(),
            schema: t.input_schema.to_string(),
        })
        .collect()
}

fn tool_text(r: &ToolResultRef) -> String {
    if r.is_error {
        format!("error: {}", r.output)
    } else {
        r.output.clone()
    }
}

/// A tool's output as the model gets it: cleaned as untrusted text, and held to a quarter of
/// the context budget (at most [`OUTPUT_CHARS`] without one); a cut is recorded on the task.
fn for_model(calls: &mut TaskCalls<'_>, tool: &str, text: &str) -> String {
    let clean = planwave_prompts::data::clean(text);
    let lang = calls.shared.plan.lang();
    let tokens = match calls.shared.config.context_budget_tokens {
        Some(budget) => (budget / 4).max(1),
        None => OUTPUT_CHARS as u64,
    };
    let over_chars = clean.chars().nth(OUTPUT_CHARS).is_some();
    if !over_chars && planwave_llm::estimate_tokens(&clean) <= tokens {
        return clean.into_owned();
    }
    let head: String = clean.chars().take(OUTPUT_CHARS).collect();
    let kept = planwave_prompts::data::cut(&head, tokens, lang);
    calls.cuts.push(SectionCut {
        from: calls.task.clone(),
        part: CutPart::ToolOutput,
        tool: Some(tool.to_owned()),
        original_tokens: planwave_llm::estimate_tokens(&clean),
        kept_tokens: planwave_llm::estimate_tokens(&kept),
        original_chars: clean.chars().count(),
        kept_chars: kept.chars().count(),
    });
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(schema: Value) -> ToolInfo {
        ToolInfo {
            name: "t".into(),
            server: "s".into(),
            tool: "t".into(),
            description: String::new(),
            input_schema: schema,
        }
    }

    #[test]
    fn chaining_rule() {
        let with_input = info(json!({"properties": {"input": {"type": "string"}, "n": {}}}));
        let without = info(json!({"properties": {"message": {"type": "string"}}}));
        assert_eq!(
            chain_args(Some(&with_input), json!({"n": 1}), Some("out")),
            json!({"n": 1, "input": "out"})
        );
        assert_eq!(
            chain_args(
                Some(&without),
                json!({"message": "got: {{input}}"}),
                Some("out")
            ),
            json!({"message": "got: out"})
        );
        assert_eq!(
            chain_args(Some(&without), json!({"message": "x"}), Some("out")),
            json!({"message": "x"})
        );
        assert_eq!(chain_args(Some(&with_input), json!({}), None), json!({}));
    }
}
