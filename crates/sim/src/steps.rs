//! The simulator's planner for tool-step plans (`--plan-format steps`): up to two tool steps
//! with parameters filled from the tools' input schemas, then an `llm_call` that answers the
//! goal from their results, so a step plan runs end to end offline. Tools named in the goal
//! are used, in the order named; otherwise the first two offered. A replan avoids the tools
//! that failed (the request context's erroneous tool results) when the catalogue offers
//! another whose required inputs it can fill, as a model told the error would.

use planwave_plan::Lang;
use serde_json::{Map, Value, json};

use super::plan::{PlannerFault, pretty, subject};
use planwave_llm::ToolRef;

/// The planner's answer for a step plan, with `fault` applied as for research plans.
/// `failed`: the tools whose steps failed in the plan this one replaces (none at first).
pub fn answer(
    goal: &str,
    lang: Lang,
    fault: Option<PlannerFault>,
    (tools, failed): (&[ToolRef], &[&str]),
) -> String {
    let mut p = plan(goal, lang, tools, failed);
    let last = p["steps"].as_array().map_or(0, Vec::len).saturating_sub(1);
    match fault {
        None => {}
        Some(PlannerFault::Truncated) => {
            let full = pretty(&p);
            let cut = full
                .char_indices()
                .nth(full.chars().count() * 3 / 5)
                .map_or(full.len(), |(i, _)| i);
            return full[..cut].to_owned();
        }
        Some(PlannerFault::Cycle) => p["steps"][0]["dependencies"] = json!(["answer"]),
        Some(PlannerFault::UnknownDependency) => {
            p["steps"][last]["dependencies"] = json!(["missing_step"])
        }
        Some(PlannerFault::NoTasks) => p["steps"] = json!([]),
        Some(PlannerFault::Prose) => {
            return match lang {
                Lang::Zh => "好的，我会先调用工具收集数据，再写出结论。".into(),
                Lang::En => "Sure: first I will call the tools, then write the answer.".into(),
            };
        }
    }
    pretty(&p)
}

/// The tools a step plan calls: those named in the goal, in the order named, else the first
/// two offered; without the `failed` ones when any other can be called instead.
fn choose<'t>(goal: &str, tools: &'t [ToolRef], failed: &[&str]) -> Vec<&'t ToolRef> {
    let lower = goal.to_lowercase();
    let pick = |avoid: &[&str]| -> Vec<&'t ToolRef> {
        let open = |t: &&ToolRef| !avoid.contains(&t.name.as_str());
        let mut named: Vec<(usize, &ToolRef)> = tools
            .iter()
            .filter(open)
            .filter_map(|t| lower.find(&t.name.to_lowercase()).map(|at| (at, t)))
            .collect();
        named.sort_by_key(|(at, _)| *at);
        if !named.is_empty() {
            return named.into_iter().map(|(_, t)| t).take(2).collect();
        }
        // Another tool instead of a failed one only if its inputs can be filled in.
        tools
            .iter()
            .filter(open)
            .filter(|t| avoid.is_empty() || fillable(&t.schema))
            .take(2)
            .collect()
    };
    match pick(failed) {
        // Nothing else to call: the failed tools again, as a model with no other would.
        chosen if chosen.is_empty() => pick(&[]),
        chosen => chosen,
    }
}

/// Whether [`params`] can fill every required input: each one is declared, so its type is
/// known (an undeclared one would be a guess).
fn fillable(schema: &Value) -> bool {
    let props = schema.get("properties").and_then(Value::as_object);
    schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .all(|name| {
            name.as_str()
                .is_some_and(|n| props.is_some_and(|p| p.contains_key(n)))
        })
}

fn plan(goal: &str, lang: Lang, tools: &[ToolRef], failed: &[&str]) -> Value {
    let subject = subject(goal);
    let chosen = choose(goal, tools, failed);
    let mut steps = Vec::new();
    let mut refs = Vec::new();
    for (k, t) in chosen.iter().enumerate() {
        let id = format!("step_{}", k + 1);
        let (description, expected) = match lang {
            Lang::Zh => (
                format!("调用 {} 收集数据", t.name),
                format!("{} 的结果", t.name),
            ),
            Lang::En => (
                format!("Collect data with {}", t.name),
                format!("what {} returns", t.name),
            ),
        };
        steps.push(json!({
            "id": id, "description": description, "tool": t.name,
            "params": params(&t.schema, &subject, k), "dependencies": [],
            "expected_output": expected,
        }));
        refs.push(id);
    }
    if refs.is_empty() {
        let (description, prompt, expected) = match lang {
            Lang::Zh => (
                "列出关键问题".to_owned(),
                format!("列出回答“{goal}”需要的关键问题。"),
                "关键问题清单".to_owned(),
            ),
            Lang::En => (
                "List the key questions".to_owned(),
                format!("List the key questions to answer: {goal}"),
                "a list of key questions".to_owned(),
            ),
        };
        steps.push(json!({
            "id": "outline", "description": description, "tool": "llm_call",
            "params": {"prompt": prompt}, "dependencies": [], "expected_output": expected,
        }));
        refs.push("outline".to_owned());
    }
    let findings: String = refs
        .iter()
        .map(|r| format!("\n- {{{{{r}.result}}}}"))
        .collect();
    let (description, prompt, expected) = match lang {
        Lang::Zh => (
            "根据结果写出回答".to_owned(),
            format!("根据以下结果回答“{goal}”：{findings}"),
            format!("关于{subject}的结论"),
        ),
        Lang::En => (
            "Write the answer from the results".to_owned(),
            format!("Answer \"{goal}\" from these results:{findings}"),
            format!("the conclusion on {subject}"),
        ),
    };
    steps.push(json!({
        "id": "answer", "description": description, "tool": "llm_call",
        "params": {"prompt": prompt}, "dependencies": refs, "expected_output": expected,
    }));
    json!({"goal": goal, "steps": steps, "estimated_duration_secs": 10 * steps.len()})
}

/// The planner's answer to a step plan's partial replan. `ctx.sections` holds the kept
/// (`completed`) and replaced steps, `ctx.tool_results` what each kept step's tool gave and
/// each failed step's error, `ctx.tools` the catalogue. Each failed step becomes a step with
/// another tool (one a kept step used successfully first, else the first offered that did
/// not fail); the blocked steps become one `llm_call` answering from every result.
pub fn replacement(ctx: &planwave_llm::RequestContext) -> String {
    let failed: Vec<&str> = ctx
        .tool_results
        .iter()
        .filter(|r| r.is_error)
        .map(|r| r.tool.as_str())
        .collect();
    let worked = ctx
        .tool_results
        .iter()
        .filter(|r| !r.is_error)
        .filter_map(|r| ctx.tools.iter().find(|t| t.name == r.tool));
    let usable = ctx
        .tools
        .iter()
        .filter(|t| t.name != "llm_call" && fillable(&t.schema));
    let tool = worked
        .chain(usable)
        .find(|t| !failed.contains(&t.name.as_str()));
    let subject = subject(&ctx.topic);
    let mut refs: Vec<String> = ctx
        .sections
        .iter()
        .filter(|s| s.status == "completed")
        .map(|s| s.id.clone())
        .collect();
    let mut steps = Vec::new();
    for (k, s) in ctx
        .sections
        .iter()
        .filter(|s| s.status == "failed")
        .enumerate()
    {
        let id = format!("{}_alt", s.id);
        let step = match tool {
            Some(t) => {
                json!({"step_id": id, "description": format!("{} (with {})", s.title, t.name),
                "tool": t.name, "params": params(&t.schema, &subject, k)})
            }
            None => json!({"step_id": id, "description": s.title, "tool": "llm_call",
                "params": {"prompt": format!("{}: {}", s.title, ctx.topic)}}),
        };
        steps.push(step);
        refs.push(id);
    }
    let answer_id = ctx
        .sections
        .iter()
        .rfind(|s| s.status == "blocked")
        .map_or_else(|| "answer_alt".to_owned(), |s| s.id.clone());
    let findings: String = refs
        .iter()
        .map(|r| format!("\n- {{{{{r}.result}}}}"))
        .collect();
    let prompt = match ctx.lang {
        Lang::Zh => format!("根据以下结果回答“{}”：{findings}", ctx.topic),
        Lang::En => format!("Answer \"{}\" from these results:{findings}", ctx.topic),
    };
    steps.push(
        json!({"step_id": answer_id, "description": "Write the answer from the results",
        "tool": "llm_call", "params": {"prompt": prompt}, "dependencies": refs}),
    );
    pretty(&json!({ "steps": steps }))
}

/// A value for every required property the schema declares, by type.
fn params(schema: &Value, subject: &str, k: usize) -> Value {
    let mut out = Map::new();
    let props = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array);
    for name in required.into_iter().flatten().filter_map(Value::as_str) {
        let prop = props.and_then(|p| p.get(name)).unwrap_or(&Value::Null);
        let value = if let Some(first) = prop.get("enum").and_then(|e| e.get(0)) {
            first.clone()
        } else {
            match prop.get("type").and_then(Value::as_str) {
                Some("integer") | Some("number") => json!(20 + 2 * k),
                Some("boolean") => json!(false),
                Some("array") => json!([]),
                Some("object") => json!({}),
                _ => json!(subject),
            }
        };
        out.insert(name.to_owned(), value);
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, schema: Value) -> ToolRef {
        ToolRef {
            name: name.into(),
            schema,
        }
    }

    #[test]
    fn named_tools_come_first_and_params_follow_their_schemas() {
        let tools = [
            tool(
                "echo",
                json!({"properties": {"message": {"type": "string"}}, "required": ["message"]}),
            ),
            tool("other", json!({})),
            tool(
                "get-sum",
                json!({"properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}),
            ),
        ];
        let v: Value = serde_json::from_str(&answer(
            "Add with get-sum, then echo it",
            Lang::En,
            None,
            (&tools, &[]),
        ))
        .expect("json");
        let steps = v["steps"].as_array().expect("steps");
        assert_eq!(steps[0]["tool"], "get-sum");
        assert_eq!(steps[0]["params"], json!({"a": 20, "b": 20}));
        assert_eq!(steps[1]["tool"], "echo");
        assert_eq!(steps[2]["tool"], "llm_call");
        assert_eq!(steps[2]["dependencies"], json!(["step_1", "step_2"]));
        let prompt = steps[2]["params"]["prompt"].as_str().expect("prompt");
        assert!(prompt.contains("{{step_1.result}}") && prompt.contains("{{step_2.result}}"));
    }

    #[test]
    fn a_replan_avoids_a_failed_tool_when_another_can_be_filled_in() {
        let message =
            json!({"properties": {"message": {"type": "string"}}, "required": ["message"]});
        let tools = [
            tool("mystery", json!({"required": ["secret"]})),
            tool("broken", message.clone()),
            tool(
                "hello",
                json!({"properties": {"name": {"type": "string"}}, "required": ["name"]}),
            ),
        ];
        let tools_of = |failed: &[&str], goal: &str| -> Vec<String> {
            let v: Value = serde_json::from_str(&answer(goal, Lang::En, None, (&tools, failed)))
                .expect("json");
            v["steps"]
                .as_array()
                .expect("steps")
                .iter()
                .map(|s| s["tool"].as_str().unwrap_or("").to_owned())
                .collect()
        };
        // At first the goal's tool; after it failed, the one other tool whose input can be
        // filled in (not `mystery`, whose required input is not declared).
        assert_eq!(tools_of(&[], "Fetch with broken"), ["broken", "llm_call"]);
        assert_eq!(
            tools_of(&["broken"], "Fetch with broken"),
            ["hello", "llm_call"]
        );
        // A failed tool the goal named is skipped for the next one it named.
        assert_eq!(
            tools_of(&["broken"], "Fetch with broken, or greet with hello"),
            ["hello", "llm_call"]
        );
        // Nothing else can be called: the failed tool again.
        let only = [tool("broken", message)];
        let v: Value = serde_json::from_str(&answer(
            "Fetch with broken",
            Lang::En,
            None,
            (&only, &["broken"]),
        ))
        .expect("json");
        assert_eq!(v["steps"][0]["tool"], "broken");
    }

    #[test]
    fn without_tools_two_model_calls_answer_the_goal() {
        let v: Value =
            serde_json::from_str(&answer("研究比亚迪", Lang::Zh, None, (&[], &[]))).expect("json");
        let tools: Vec<&str> = v["steps"]
            .as_array()
            .expect("steps")
            .iter()
            .map(|s| s["tool"].as_str().expect("tool"))
            .collect();
        assert_eq!(tools, ["llm_call", "llm_call"]);
    }
}
