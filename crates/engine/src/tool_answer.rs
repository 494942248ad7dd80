//! Reading one answer of the JSON tool protocol (`{"content": "...", "next": [...]}`) as
//! tolerantly as the planner reads plans, and deciding what to do with it.
//!
//! The JSON is found by the plan crate's extractor ([`planwave_plan::extract_json`]: prose
//! before and after, ```json fences, the largest value wins), so the two never disagree
//! about what counts as JSON in model output. What the extractor finds is then judged:
//!
//! - a protocol object whose `content` is Markdown (or whose `next` asks for calls) is used;
//! - text with no JSON attempt at all is prose, and prose is accepted as the section (models
//!   often drop the format for their final answer, and the text is what we asked for); so is
//!   a Markdown section (its first line a heading) that quotes data, say a tool's JSON
//!   output, as long as it holds none of the protocol's keys;
//! - everything else (broken or cut-off JSON, JSON of another shape, a key besides
//!   `content` and `next`, a `content` that is itself JSON, nothing to write and nothing to
//!   call) is [`ToolAnswer::Broken`], with
//!   problems worded for a repair prompt. Raw JSON never becomes a section.

use planwave_plan::{ParseError, extract_json};
use serde_json::{Map, Value, json};

/// What the tool loop does with one model answer.
#[derive(Debug, PartialEq)]
pub(crate) enum ToolAnswer {
    /// The protocol object: the section so far (may be empty while calls are asked for) and
    /// the calls, in order.
    Protocol {
        content: String,
        next: Vec<(String, Value)>,
    },
    /// No JSON in the answer: the text is the section.
    Prose(String),
    /// Unusable as it stands; each problem names what to fix.
    Broken(Vec<String>),
}

/// Repair turns one answer gets before the task fails: a model that cannot produce the
/// format in three tries rarely does in more, and each try is a paid call.
pub(crate) const MAX_REPAIRS: u32 = 2;

/// The tool loop's next step for one answer.
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    /// Use it: the section (or, while calls are asked for, the text so far) and the calls.
    Use {
        content: String,
        next: Vec<(String, Value)>,
    },
    /// Send it back with these problems.
    Repair(Vec<String>),
    /// Repairs are used up: the task fails with this message.
    GiveUp(String),
}

/// What to do with `text` after `repairs` repair turns of the same answer.
pub(crate) fn decide(text: &str, last_turn: bool, repairs: u32) -> Step {
    match read_answer(text, last_turn) {
        ToolAnswer::Protocol { content, next } => Step::Use { content, next },
        ToolAnswer::Prose(text) => Step::Use {
            content: text,
            next: Vec::new(),
        },
        ToolAnswer::Broken(problems) if repairs < MAX_REPAIRS => Step::Repair(problems),
        ToolAnswer::Broken(problems) => Step::GiveUp(format!(
            "the tool-protocol answer is still unusable after {MAX_REPAIRS} repairs: {}",
            problems.join("; ")
        )),
    }
}

/// The answer as the protocol reads it. `last_turn`: no more calls are possible, so an
/// answer must carry its section in `content`.
pub(crate) fn read_answer(text: &str, last_turn: bool) -> ToolAnswer {
    let value = match extract_json(text) {
        Ok(v) => v,
        Err(ParseError::NoJson) => return ToolAnswer::Prose(text.to_owned()),
        // The extractor reports a stray `{` in prose as a syntax error: prose braces such as
        // "{revenue}" are not an attempt at the protocol, so the text is still prose.
        Err(ParseError::Syntax { .. }) if !attempts_json(text) => {
            return ToolAnswer::Prose(text.to_owned());
        }
        Err(_) if quoting_section(text) => return ToolAnswer::Prose(text.to_owned()),
        Err(e) => return ToolAnswer::Broken(vec![e.to_string()]),
    };
    let obj = match value {
        Value::Object(obj) if obj.contains_key("content") || obj.contains_key("next") => obj,
        _ if quoting_section(text) => return ToolAnswer::Prose(text.to_owned()),
        _ => return ToolAnswer::Broken(vec![shape_problem()]),
    };
    let mut problems = Vec::new();
    // Seed 000's protocol has these two keys only: a third one (a model's `reasoning`,
    // `confidence`...) is an answer in another format, repaired rather than half-read.
    let extra: Vec<String> = obj
        .keys()
        .filter(|k| *k != "content" && *k != "next")
        .map(|k| format!("{k:?}"))
        .collect();
    if !extra.is_empty() {
        problems.push(format!(
            "the answer has a key besides \"content\" and \"next\": {}; give only those two",
            extra.join(", ")
        ));
    }
    let content = content_of(&obj, &mut problems);
    let next = next_of(&obj, &mut problems);
    if problems.is_empty() && content.trim().is_empty() {
        if last_turn {
            problems.push(
                "no more tool calls are possible: write the section in \"content\"".to_owned(),
            );
        } else if next.is_empty() {
            problems.push(
                "\"content\" is empty and \"next\" asks for no call: write the section in \"content\", or list tool calls in \"next\"".to_owned(),
            );
        }
    }
    if problems.is_empty() {
        ToolAnswer::Protocol { content, next }
    } else {
        ToolAnswer::Broken(problems)
    }
}

fn shape_problem() -> String {
    "the answer must be one JSON object with only the keys \"content\" (the section's text) and \"next\" (a list of {\"mcp\": \"<tool name>\", \"args\": {...}})".to_owned()
}

/// Whether the text tries to be JSON: an object opening with a key (`{"`), as the
/// extractor's own test for a candidate worth reporting, or a ```json fence.
fn attempts_json(text: &str) -> bool {
    text.contains("```json")
        || text
            .match_indices('{')
            .any(|(i, _)| text[i + 1..].trim_start().starts_with('"'))
}

/// Whether the text is a Markdown section that merely quotes JSON (a tool's output, an
/// example): it opens with a heading, as sections do and protocol answers never do, and
/// names neither of the protocol's keys, so it is no protocol answer gone wrong.
fn quoting_section(text: &str) -> bool {
    let opens_with_heading = text
        .trim_start_matches('\u{FEFF}')
        .lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| l.trim_start().starts_with('#'));
    opens_with_heading && !text.contains("\"content\"") && !text.contains("\"next\"")
}

fn content_of(obj: &Map<String, Value>, problems: &mut Vec<String>) -> String {
    let content = match obj.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(_) => {
            problems.push("\"content\" must be a string: the section's text".to_owned());
            return String::new();
        }
    };
    // A section that is itself JSON (the protocol object encoded twice, or data instead of
    // prose) would land in the report as raw JSON.
    if serde_json::from_str::<Value>(content.trim()).is_ok_and(|v| v.is_object() || v.is_array()) {
        problems
            .push("\"content\" holds JSON: write the section itself there, in Markdown".to_owned());
    }
    content
}

fn next_of(obj: &Map<String, Value>, problems: &mut Vec<String>) -> Vec<(String, Value)> {
    let calls = match obj.get("next") {
        Some(Value::Array(calls)) => calls,
        Some(Value::Null) | None => return Vec::new(),
        Some(_) => {
            problems.push("\"next\" must be a list of calls".to_owned());
            return Vec::new();
        }
    };
    let mut out = Vec::with_capacity(calls.len());
    for (i, call) in calls.iter().enumerate() {
        // `tool` is accepted for `mcp`, as plans accept `tool_name` for `tool`.
        let name = call
            .get("mcp")
            .or_else(|| call.get("tool"))
            .and_then(Value::as_str);
        let args = match call.get("args") {
            None | Some(Value::Null) => Some(json!({})),
            Some(a @ Value::Object(_)) => Some(a.clone()),
            Some(_) => None,
        };
        match (name, args) {
            (Some(name), Some(args)) if !name.trim().is_empty() => {
                out.push((name.trim().to_owned(), args));
            }
            _ => problems.push(format!(
                "next[{i}] must be {{\"mcp\": \"<tool name>\", \"args\": {{...}}}}"
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protocol(content: &str, next: Vec<(&str, Value)>) -> ToolAnswer {
        ToolAnswer::Protocol {
            content: content.to_owned(),
            next: next.into_iter().map(|(n, a)| (n.to_owned(), a)).collect(),
        }
    }

    #[test]
    fn clean_and_fenced_answers() {
        assert_eq!(
            read_answer(
                "```json\n{\"content\": \"\", \"next\": [{\"mcp\": \"get-sum\", \"args\": {\"a\": 1}}]}\n```",
                false
            ),
            protocol("", vec![("get-sum", json!({"a": 1}))])
        );
        assert_eq!(
            read_answer("{\"content\": \"## S\"}", false),
            protocol("## S", vec![])
        );
        assert_eq!(
            read_answer("{\"content\": \"## S\", \"next\": null}", false),
            protocol("## S", vec![])
        );
    }

    #[test]
    fn json_after_prose_is_found() {
        let text = "Sure! I will add the numbers first.\n{\"content\": \"\", \"next\": [{\"tool\": \"echo\"}]}\nThanks.";
        assert_eq!(
            read_answer(text, false),
            protocol("", vec![("echo", json!({}))])
        );
    }

    #[test]
    fn prose_without_json_is_the_section() {
        for text in [
            "## Plain section\n\nRevenue grew.",
            "## Costs\n\nThe {revenue} placeholder and [1] citations are prose.",
            "",
        ] {
            assert_eq!(read_answer(text, false), ToolAnswer::Prose(text.to_owned()));
        }
    }

    #[test]
    fn a_section_quoting_json_is_prose() {
        for text in [
            "## Time\n\n- `get_current_time`: {\"timezone\": \"UTC\", \"datetime\": \"2024-01-01\"}",
            // Tool outputs are quoted cut short, so the quoted JSON may be truncated.
            "## Time\n\n- `get_current_time`: {\"timezone\": \"UTC\", \"date",
            "\n# Data\n\n```json\n[{\"a\": 1}]\n```\n",
        ] {
            assert_eq!(
                read_answer(text, false),
                ToolAnswer::Prose(text.to_owned()),
                "{text}"
            );
        }
        // A heading does not excuse the protocol's own JSON, broken or misshapen.
        for text in [
            "## Sales\n{\"content\": \"## Sales\\n\\nRevenue gr",
            "## Sales\n{\"next\": \"echo\"}",
        ] {
            assert!(
                matches!(read_answer(text, false), ToolAnswer::Broken(_)),
                "{text}"
            );
        }
    }

    #[test]
    fn truncated_and_broken_json_go_to_repair() {
        let ToolAnswer::Broken(p) = read_answer("{\"content\": \"## Sales\\n\\nRevenue gr", false)
        else {
            panic!("truncated")
        };
        assert!(p[0].starts_with("JSON is truncated at line 1"), "{p:?}");
        let ToolAnswer::Broken(p) = read_answer("Here: {\"content\": \"x\" \"next\": []}", false)
        else {
            panic!("missing comma")
        };
        assert!(p[0].starts_with("invalid JSON at line 1"), "{p:?}");
        let ToolAnswer::Broken(p) = read_answer("```json\n{\"content\": \"## S\",\n", false) else {
            panic!("unclosed fence")
        };
        assert!(p[0].starts_with("JSON is truncated"), "{p:?}");
    }

    #[test]
    fn other_shapes_go_to_repair_never_into_a_section() {
        for text in [
            "{\"other\": 1}",
            "[{\"mcp\": \"echo\"}]",
            "{\"section\": \"## S\", \"calls\": []}",
        ] {
            assert_eq!(
                read_answer(text, false),
                ToolAnswer::Broken(vec![shape_problem()]),
                "{text}"
            );
        }
        let broken = |text: &str, last: bool| match read_answer(text, last) {
            ToolAnswer::Broken(p) => p,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(
            broken("{\"content\": {\"summary\": \"x\"}}", false),
            vec!["\"content\" must be a string: the section's text"]
        );
        assert_eq!(
            broken("{\"content\": \"{\\\"content\\\": \\\"## S\\\"}\"}", false),
            vec!["\"content\" holds JSON: write the section itself there, in Markdown"]
        );
        assert_eq!(
            broken("{\"content\": \"\", \"next\": []}", false),
            vec![
                "\"content\" is empty and \"next\" asks for no call: write the section in \"content\", or list tool calls in \"next\""
            ]
        );
        assert_eq!(
            broken(
                "{\"content\": \"\", \"next\": [{\"mcp\": \"echo\"}, {\"args\": {}}, {\"mcp\": \"x\", \"args\": 3}]}",
                false
            ),
            vec![
                "next[1] must be {\"mcp\": \"<tool name>\", \"args\": {...}}",
                "next[2] must be {\"mcp\": \"<tool name>\", \"args\": {...}}"
            ]
        );
        assert_eq!(
            broken("{\"content\": \"## S\", \"next\": \"echo\"}", false),
            vec!["\"next\" must be a list of calls"]
        );
    }

    #[test]
    fn a_broken_answer_is_repaired_twice_then_the_task_gives_up() {
        let cut = "{\"content\": \"## Sales\\n\\nRevenue gr";
        for repairs in 0..MAX_REPAIRS {
            let Step::Repair(p) = decide(cut, false, repairs) else {
                panic!("repair {repairs}")
            };
            assert!(p[0].starts_with("JSON is truncated"), "{p:?}");
        }
        let Step::GiveUp(msg) = decide(cut, false, MAX_REPAIRS) else {
            panic!("no third repair")
        };
        assert!(
            msg.starts_with(
                "the tool-protocol answer is still unusable after 2 repairs: JSON is truncated at line 1"
            ),
            "{msg}"
        );
        // A repaired answer is used whatever the count; so is prose.
        assert_eq!(
            decide("{\"content\": \"## Sales\"}", false, MAX_REPAIRS),
            Step::Use {
                content: "## Sales".into(),
                next: vec![]
            }
        );
        assert_eq!(
            decide("## Sales\n\nUp 3%.", false, MAX_REPAIRS),
            Step::Use {
                content: "## Sales\n\nUp 3%.".into(),
                next: vec![]
            }
        );
    }

    #[test]
    fn a_key_besides_content_and_next_goes_to_repair() {
        assert_eq!(
            read_answer(
                "{\"content\": \"## S\", \"next\": [], \"confidence\": 0.9, \"why\": \"x\"}",
                false
            ),
            ToolAnswer::Broken(vec![
                "the answer has a key besides \"content\" and \"next\": \"confidence\", \"why\"; give only those two".to_owned()
            ])
        );
    }

    #[test]
    fn the_last_turn_needs_a_section() {
        let text = "{\"content\": \"\", \"next\": [{\"mcp\": \"echo\", \"args\": {}}]}";
        assert!(matches!(
            read_answer(text, false),
            ToolAnswer::Protocol { .. }
        ));
        assert_eq!(
            read_answer(text, true),
            ToolAnswer::Broken(vec![
                "no more tool calls are possible: write the section in \"content\"".to_owned()
            ])
        );
        // With a section, the calls it still asks for are simply not run.
        assert_eq!(
            read_answer(
                "{\"content\": \"## S\", \"next\": [{\"mcp\": \"echo\", \"args\": {}}]}",
                true
            ),
            protocol("## S", vec![("echo", json!({}))])
        );
    }
}
