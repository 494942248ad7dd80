//! Finding the JSON in model output and reading both seed formats.

use planwave_plan::{
    Lang, ParseError, PlanFormat, TaskId, ValidatedPlan, extract_json, parse_plan, parse_plan_str,
};
use serde_json::json;

use crate::wave_ids;

const TESLA: &str = include_str!("../data/tesla_plan.json");

const SMALL: &str =
    r#"{"topic": "t", "tasks": [{"id": 1, "description": "a", "dependencies": []}]}"#;

fn topic_of(text: &str) -> String {
    match parse_plan_str(text) {
        Ok(spec) => spec.topic,
        Err(e) => panic!("expected a plan, got {e:?}"),
    }
}

#[test]
fn tesla_example_parses_and_validates() {
    let spec = parse_plan(TESLA.as_bytes()).unwrap();
    assert_eq!(spec.research_type.as_deref(), Some("company"));
    assert_eq!(spec.topic, "特斯拉公司深度分析");
    assert_eq!(spec.objectives.len(), 3);
    assert_eq!(spec.format, PlanFormat::Research);
    assert_eq!(spec.tasks.len(), 4);
    let t4 = &spec.tasks[3];
    assert_eq!(t4.id, TaskId::Int(4));
    assert_eq!(t4.description, "综合评估与投资建议");
    assert_eq!(t4.name, None);
    assert_eq!(
        t4.dependencies,
        vec![TaskId::Int(1), TaskId::Int(2), TaskId::Int(3)]
    );
    assert_eq!(
        spec.tasks[1].hints.data_needs,
        ["近3年营收利润", "ROE", "毛利率", "现金流"]
    );
    assert_eq!(
        spec.tasks[1].hints.suggested_tools,
        ["info_search_stock_db", "info_search_finance_db"]
    );
    assert_eq!(
        spec.tasks[0].hints.key_questions,
        ["核心产品线是什么", "收入结构如何"]
    );

    let plan = ValidatedPlan::new(spec).unwrap();
    assert_eq!(wave_ids(&plan), [vec!["1", "2", "3"], vec!["4"]]);
    assert_eq!(plan.lang(), Lang::Zh);
    assert!(plan.warnings().is_empty());
}

#[test]
fn bom_is_skipped() {
    let mut bytes = "\u{FEFF}".as_bytes().to_vec();
    bytes.extend_from_slice(TESLA.as_bytes());
    assert_eq!(parse_plan(&bytes).unwrap().tasks.len(), 4);
}

#[test]
fn prose_before_and_after() {
    let text = format!("Here is the plan:\n{SMALL}\nHope it helps!");
    assert_eq!(topic_of(&text), "t");
}

#[test]
fn json_fence_with_prose_around() {
    let text =
        format!("Sure! The plan:\n\n```json\n{SMALL}\n```\n\nLet me know {{if}} you need more.");
    assert_eq!(topic_of(&text), "t");
    let untagged = format!("```\n{SMALL}\n```");
    assert_eq!(topic_of(&untagged), "t");
}

#[test]
fn fence_is_preferred_over_a_larger_object_elsewhere() {
    let other = r#"{"topic": "not this one, it is longer than the plan", "tasks": [], "x": [1, 2, 3, 4, 5]}"#;
    let text = format!("```json\n{SMALL}\n```\nfor comparison: {other}");
    assert_eq!(topic_of(&text), "t");
}

#[test]
fn fence_closed_early_by_backticks_inside_a_string() {
    let text = "```json\n{\"topic\": \"t\", \"tasks\": [{\"id\": 1, \"description\": \"print ```code```\"}]}\n```";
    assert_eq!(topic_of(text), "t");
}

#[test]
fn prose_with_braces_before_the_json() {
    let text = format!(
        "I use {{tasks}} and {{{{x.result}}}} placeholders, set {{a, b}} and [see below].\n{SMALL}"
    );
    assert_eq!(topic_of(&text), "t");
}

#[test]
fn small_example_object_does_not_shadow_the_plan() {
    let text =
        format!("A task looks like {{\"id\": 1}}. The plan:\n{SMALL}\nDone {{\"ok\": true}}");
    assert_eq!(topic_of(&text), "t");
}

#[test]
fn nested_object_after_a_syntax_error_is_not_taken_for_the_plan() {
    let text = "{\"a\": 1,, \"b\": {\"c\": 2}}";
    assert_eq!(
        extract_json(text),
        Err(ParseError::Syntax {
            line: 1,
            column: 9,
            msg: "key must be a string".into()
        })
    );
}

#[test]
fn truncated_json_reports_position_in_original_text() {
    let text = "Here is the plan:\n{\"tasks\": [\n  {\"id\": 1,";
    let err = parse_plan_str(text).unwrap_err();
    assert_eq!(
        err,
        ParseError::Truncated {
            line: 3,
            column: 11,
            msg: "EOF while parsing a value".into()
        }
    );
    assert_eq!(
        err.to_string(),
        "JSON is truncated at line 3 column 11: EOF while parsing a value"
    );
}

#[test]
fn truncated_inside_an_unclosed_fence() {
    let text = "Plan:\n```json\n{\"topic\": \"t\",\n \"tasks\": [";
    assert_eq!(
        parse_plan_str(text),
        Err(ParseError::Truncated {
            line: 4,
            column: 11,
            msg: "EOF while parsing a list".into()
        })
    );
}

#[test]
fn truncated_inside_a_closed_fence() {
    // The closing fence must not be read as JSON: the value ends at the fence, which is on
    // line 3 (serde places an EOF just after the last newline it consumed).
    let text = "```json\n{\"topic\": \"t\",\n```\nsorry, I ran out of room";
    assert_eq!(
        parse_plan_str(text),
        Err(ParseError::Truncated {
            line: 3,
            column: 0,
            msg: "EOF while parsing a value".into()
        })
    );
}

#[test]
fn truncated_plan_after_a_small_example() {
    let text = "Like {\"id\": 1}. Plan:\n{\"topic\": \"t\", \"tasks\": [{\"id\": 1, \"desc";
    assert!(matches!(
        parse_plan_str(text),
        Err(ParseError::Truncated { line: 2, .. })
    ));
}

#[test]
fn truncated_after_a_bom_counts_columns_without_it() {
    assert_eq!(
        parse_plan("\u{FEFF}{\"tasks\": [".as_bytes()),
        Err(ParseError::Truncated {
            line: 1,
            column: 11,
            msg: "EOF while parsing a list".into()
        })
    );
}

#[test]
fn syntax_error_columns_count_characters() {
    // 特斯拉 are three characters (nine bytes); the trailing comma is seen at ']', column 18.
    assert_eq!(
        parse_plan_str("特斯拉 {\"tasks\": [1,]}"),
        Err(ParseError::Syntax {
            line: 1,
            column: 18,
            msg: "trailing comma".into()
        })
    );
}

#[test]
fn syntax_error_on_a_later_line() {
    let text = "The plan:\n{\n  \"topic\": \"t\"\n  \"tasks\": []\n}";
    assert_eq!(
        parse_plan_str(text),
        Err(ParseError::Syntax {
            line: 4,
            column: 3,
            msg: "expected `,` or `}`".into()
        })
    );
}

#[test]
fn only_prose_braces_report_the_first_one() {
    assert_eq!(
        parse_plan_str("Use {braces} like {this}."),
        Err(ParseError::Syntax {
            line: 1,
            column: 6,
            msg: "key must be a string".into()
        })
    );
}

#[test]
fn non_utf8_bytes() {
    let bytes = b"{\"topic\": \"\xff\"}";
    assert_eq!(parse_plan(bytes), Err(ParseError::NotUtf8 { offset: 11 }));
    assert_eq!(
        ParseError::NotUtf8 { offset: 11 }.to_string(),
        "input is not valid UTF-8 (invalid byte at offset 11)"
    );
}

#[test]
fn text_without_json() {
    assert_eq!(
        parse_plan_str("I cannot make a plan for that."),
        Err(ParseError::NoJson)
    );
    assert_eq!(parse_plan_str(""), Err(ParseError::NoJson));
    assert_eq!(parse_plan(b"\xEF\xBB\xBF"), Err(ParseError::NoJson));
    // Citations are arrays of scalars, not plans.
    assert_eq!(
        parse_plan_str("As shown in [1] and [2, 3]."),
        Err(ParseError::NoJson)
    );
}

#[test]
fn absurd_nesting_is_too_deep_not_a_stack_overflow() {
    let arrays = "[".repeat(100_000);
    assert_eq!(
        parse_plan_str(&arrays),
        Err(ParseError::TooDeep {
            line: 1,
            column: 128
        })
    );
    let objects = "{\"a\":".repeat(100_000);
    assert!(matches!(
        parse_plan_str(&objects),
        Err(ParseError::TooDeep { line: 1, .. })
    ));
    let closed = format!("x\n{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(matches!(
        parse_plan_str(&closed),
        Err(ParseError::TooDeep { line: 2, .. })
    ));
}

#[test]
fn huge_garbage_with_many_braces_fails_quickly() {
    let garbage = "{x} ".repeat(200_000);
    assert!(matches!(
        parse_plan_str(&garbage),
        Err(ParseError::Syntax { .. })
    ));
}

#[test]
fn extract_json_returns_any_object() {
    let v = extract_json("Verdict:\n```json\n{\"score\": 4, \"reason\": \"ok\"}\n```").unwrap();
    assert_eq!(v, json!({"score": 4, "reason": "ok"}));
}

/// The step plan format, MANDAS TaskPlanner style: `step_id`, `name`, `tool_name`, `tool_parameters`.
#[test]
fn step_plan_of_seed_003() {
    let text = r#"{
      "plan_id": "p-1", "task_id": "t-9", "status": "CREATED",
      "steps": [
        {"step_id": 1, "name": "Search", "description": "Search the web",
         "tool_name": "web_search", "tool_parameters": {"query": "tesla 2025"},
         "dependencies": [], "status": "QUEUED"},
        {"step_id": 2, "name": "Summarize", "description": "Summarize the results",
         "tool_name": "llm_call",
         "tool_parameters": {"input_text": "@{{steps.1.result}}"},
         "dependencies": [1]}
      ]
    }"#;
    let spec = parse_plan_str(text).unwrap();
    assert_eq!(spec.format, PlanFormat::Steps);
    assert_eq!(spec.topic, "");
    let s2 = &spec.tasks[1];
    assert_eq!(s2.id, TaskId::Int(2));
    assert_eq!(s2.name.as_deref(), Some("Summarize"));
    assert_eq!(s2.title(), "Summarize");
    assert_eq!(s2.description, "Summarize the results");
    assert_eq!(s2.tool.as_deref(), Some("llm_call"));
    assert_eq!(
        s2.params,
        Some(json!({"input_text": "@{{steps.1.result}}"}))
    );
    assert_eq!(s2.dependencies, vec![TaskId::Int(1)]);
    let plan = ValidatedPlan::new(spec).unwrap();
    assert_eq!(wave_ids(&plan), [vec!["1"], vec!["2"]]);
}

/// The step plan format, PromptFlow v2 style: string ids, `tool`, `params` with `{{id.field}}` references.
#[test]
fn step_plan_of_seed_004() {
    let text = r##"AI 生成的计划：
```json
{
  "goal": "分析销售数据文件，提供趋势、产品和建议分析",
  "steps": [
    {"id": "data_upload", "description": "获取用户上传的数据文件", "tool": "file_tool",
     "params": {"action": "get_uploaded_file"}, "dependencies": [],
     "expected_output": "文件路径和基本信息"},
    {"id": "data_exploration", "description": "探索数据结构和质量", "tool": "code_interpreter",
     "params": {"code": "import pandas as pd\ndf = pd.read_csv('{{data_upload.file_path}}')"},
     "dependencies": ["data_upload"], "expected_output": "数据概览信息"},
    {"id": "sales_trend_analysis", "description": "分析销售趋势", "tool": "code_interpreter",
     "params": {"code": "# 分析代码..."}, "dependencies": ["data_exploration"]},
    {"id": "product_analysis", "description": "分析产品性能", "tool": "code_interpreter",
     "params": {"code": "# 分析代码..."}, "dependencies": ["data_exploration"]},
    {"id": "generate_report", "description": "生成综合分析报告", "tool": "llm_call",
     "params": {"prompt": "趋势：{{sales_trend_analysis.result}}\n产品：{{product_analysis.result}}"},
     "dependencies": ["sales_trend_analysis", "product_analysis"],
     "expected_output": "最终分析报告", "retryCount": 2, "optional": false}
  ]
}
```"##;
    let spec = parse_plan_str(text).unwrap();
    assert_eq!(spec.format, PlanFormat::Steps);
    assert_eq!(spec.topic, "分析销售数据文件，提供趋势、产品和建议分析");
    let explore = &spec.tasks[1];
    assert_eq!(explore.id, TaskId::Str("data_exploration".into()));
    assert_eq!(explore.tool.as_deref(), Some("code_interpreter"));
    assert_eq!(explore.expected_output.as_deref(), Some("数据概览信息"));
    let code = explore
        .params
        .as_ref()
        .and_then(|p| p["code"].as_str())
        .unwrap();
    assert!(code.contains("{{data_upload.file_path}}"));
    let plan = ValidatedPlan::new(spec).unwrap();
    assert_eq!(
        wave_ids(&plan),
        [
            vec!["data_upload"],
            vec!["data_exploration"],
            vec!["sales_trend_analysis", "product_analysis"],
            vec!["generate_report"],
        ]
    );
    assert_eq!(plan.lang(), Lang::Zh);
}

#[test]
fn unknown_fields_are_ignored() {
    let v = json!({
        "topic": "t", "version": 3, "metadata": {"createdBy": "x"},
        "tasks": [{"id": 1, "description": "a", "status": "QUEUED", "weight": [1, 2], "hints": {"extra": 1}}]
    });
    let spec = planwave_plan::plan_from_value(v).unwrap();
    assert_eq!(spec.tasks.len(), 1);
    assert!(spec.tasks[0].hints.is_empty());
}

#[test]
fn plan_wrapped_in_a_plan_field() {
    let v = json!({"plan": {"topic": "t", "tasks": [{"id": 1, "description": "a"}]}});
    assert_eq!(planwave_plan::plan_from_value(v).unwrap().topic, "t");
}

#[test]
fn serialized_plan_round_trips() {
    let spec = parse_plan(TESLA.as_bytes()).unwrap();
    let text = serde_json::to_string(&spec).unwrap();
    assert_eq!(parse_plan_str(&text).unwrap(), spec);
}
