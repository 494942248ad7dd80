//! The variables built directly render every template exactly as the serde-serialized vars
//! struct they replaced did (kept here as the reference), the built-in ones and a user's
//! template that looks at each variable every way a template can.

use std::sync::Arc;

use minijinja::value::{Serde, Value};
use planwave_llm::MessageRole;
use planwave_plan::{Hints, Lang, TaskId, ValidatedPlan, parse_plan_str};
use serde::Serialize;

use crate::render::messages;
use crate::set::{AnswerForm, PriorSection, PromptSet, TaskText};
use crate::templates::Templates;

/// The variables as they were serialized before (`render.rs` up to 4249e10).
#[derive(Serialize)]
struct SubagentVars<'a> {
    task: TaskVars<'a>,
    research_type: Option<&'a str>,
    topic: &'a str,
    objectives: &'a [String],
    prior: Vec<PriorVars<'a>>,
    json_protocol: bool,
}

#[derive(Serialize)]
struct TaskVars<'a> {
    id: String,
    title: &'a str,
    description: &'a str,
    hints: &'a Hints,
}

#[derive(Serialize)]
struct PriorVars<'a> {
    id: String,
    title: &'a str,
    /// Data: cleaned as the prompt places it.
    text: std::borrow::Cow<'a, str>,
}

fn reference_vars<'a>(
    plan: &'a ValidatedPlan,
    index: usize,
    own: &TaskText<'a>,
    prior: &'a [PriorSection],
) -> SubagentVars<'a> {
    let spec = plan.spec();
    let task = plan.task(index);
    SubagentVars {
        task: TaskVars {
            id: task.id.to_string(),
            title: task.title(),
            description: own.description,
            hints: own.hints,
        },
        research_type: spec.research_type.as_deref(),
        topic: &spec.topic,
        objectives: &spec.objectives,
        prior: prior
            .iter()
            .map(|p| PriorVars {
                id: plan.id(p.index).to_string(),
                title: plan.task(p.index).title(),
                text: crate::data::clean(&p.text),
            })
            .collect(),
        json_protocol: own.form == AnswerForm::JsonProtocol,
    }
}

/// The old way: serialize the vars struct, render, split.
fn reference(
    t: &Templates,
    plan: &ValidatedPlan,
    index: usize,
    own: &TaskText<'_>,
    prior: &[PriorSection],
) -> Vec<(MessageRole, String)> {
    let vars = reference_vars(plan, index, own, prior);
    let text = t
        .render_raw(plan.lang(), "subagent", Value::from(Serde(&vars)))
        .expect("reference render");
    messages(&text)
        .into_iter()
        .map(|m| (m.role, m.content))
        .collect()
}

/// A user's subagent template reading every variable: printed whole, looped over, indexed,
/// filtered, tested, and the context itself through `debug()`.
const EVERYTHING: &str = r#"=== system ===
{{ task }}|{{ task.hints }}|{{ prior }}|{{ objectives }}|{{ research_type }}|{{ topic }}
{% for k in task %}[{{ loop.index }}:{{ k }}={{ task[k] }}]{% endfor %}
{% for k, v in task.hints | items %}{{ k }}({{ v | length }}): {{ v | join(" & ") }};{% endfor %}
{{ json_protocol }} {{ task | dictsort }} {{ task | length }} {{ "hints" in task }} {{ task.nope }}|{{ task.nope.deeper }}
{{ task.id ~ "!" }} {{ task.id is string }} {{ task.id is number }} {{ task.id == "1" }}
{{ task["title"] | upper }} {{ task.description | split | list | length }} {{ task.description | trim | length }}
=== user ===
{{ research_type is none }} {{ research_type or "-" }} {{ research_type | default("none") }}
{{ objectives | reverse | join("/") }} {{ objectives | first }} {{ objectives | last }} {{ objectives | length }}
{{ task.hints.data_needs[0] }} {{ task.hints.key_questions | sort | join }} {{ task.hints.suggested_tools | list }}
{% for s in prior %}{{ loop.index0 }}/{{ loop.length }} {{ s.id }} {{ s.title | title }} {{ s.text | length }}
{{ s.text }}
{{ s | items | list }} {{ s | list }}{% if not loop.last %}---{% endif %}
{% else %}no prior{% endfor %}
{{ prior | map(attribute="id") | join(",") }} {{ prior | selectattr("title") | list | length }}
{{ prior[0].text[:12] if prior }} {{ prior | last }}
{% set t = task %}{{ t.hints is mapping }} {{ objectives is sequence }} {{ prior is iterable }}
{{ debug() }}
"#;

fn plan(json: &str, lang: Lang) -> ValidatedPlan {
    ValidatedPlan::new(parse_plan_str(json).expect("parse"))
        .expect("valid")
        .with_lang(lang)
}

/// Plans covering: research type or none, objectives or none, hints full, partial or
/// absent, string and integer ids, names, special characters and non-ASCII text.
pub(crate) fn plans() -> Vec<ValidatedPlan> {
    let tesla = include_str!("../../../../../examples/tesla.json");
    let odd = r#"{
        "topic": "Quotes \" and {{ braces }}, <data>, & {% raw %}, back\\slash, 🚀 emoji",
        "objectives": [],
        "tasks": [
            {"id": "a-1", "name": "Named: first", "description": "Line one\nline two\twith tab",
             "hints": {"data_needs": ["x, y", ""], "key_questions": [], "suggested_tools": ["web_search"]}},
            {"id": 7, "description": "   leading spaces and a very long description that goes on and on past any small-string size ",
             "dependencies": ["a-1"]},
            {"id": "z", "description": "三个前序", "dependencies": ["a-1", 7],
             "hints": {"key_questions": ["为什么？", "How \"much\"?"]}}
        ]
    }"#;
    let bare = r#"{"research_type": "", "topic": "", "objectives": ["only one"],
        "tasks": [{"id": 1, "description": "d"}]}"#;
    let mut out = Vec::new();
    for lang in [Lang::Zh, Lang::En] {
        for json in [tesla, odd, bare] {
            out.push(plan(json, lang));
        }
    }
    out
}

/// Sections of a task's prerequisites: empty, short (a small minijinja string), long,
/// with markup, marks and a closing `</data>` a template might print.
pub(crate) fn sections(plan: &ValidatedPlan, index: usize) -> Vec<PriorSection> {
    let texts = [
        "",
        "short",
        "## Section\n\nBody with \"quotes\", {{ not a tag }}, </data> and === user === inside.\n",
        "## 长的章节\n\n正文，包含数字 12.5% 与 ¥300 亿。\n",
    ];
    plan.deps(index)
        .iter()
        .enumerate()
        .map(|(k, &dep)| PriorSection {
            index: dep as usize,
            text: Arc::from(texts[k % texts.len()].repeat(1 + k * 40)),
        })
        .collect()
}

fn assert_same(t: &Templates, plan: &ValidatedPlan, index: usize, own: &TaskText<'_>) {
    let mut priors = vec![sections(plan, index), Vec::new()];
    // Any task may be given any sections; several, including duplicates, exercise the loop.
    if plan.len() > 1 {
        priors.push(
            (0..plan.len())
                .chain(0..plan.len())
                .enumerate()
                .map(|(k, i)| PriorSection {
                    index: i,
                    text: Arc::from(format!("section {k} of task {i}\n").repeat(k + 1)),
                })
                .collect(),
        );
    }
    for prior in &priors {
        let got: Vec<_> = t
            .subagent(plan, index, own, prior)
            .into_iter()
            .map(|m| (m.role, m.content))
            .collect();
        assert_eq!(
            got,
            reference(t, plan, index, own, prior),
            "task {index} with {} sections",
            prior.len()
        );
        assert!(!got.is_empty());
    }
}

fn assert_all_same(t: &Templates) {
    let fitted = Hints {
        data_needs: vec!["cut".into()],
        ..Hints::default()
    };
    for plan in plans() {
        for index in 0..plan.len() {
            assert_same(t, &plan, index, &TaskText::of(plan.task(index)));
            // A description and hints shortened to the context budget.
            let own = TaskText {
                description: "shortened …",
                hints: &fitted,
                form: AnswerForm::Section,
            };
            assert_same(t, &plan, index, &own);
            // The section asked for inside the JSON tool protocol's content.
            let json = TaskText {
                form: AnswerForm::JsonProtocol,
                ..TaskText::of(plan.task(index))
            };
            assert_same(t, &plan, index, &json);
        }
    }
}

#[test]
fn built_in_subagent_prompts_are_byte_identical_to_the_serialized_vars() {
    assert_all_same(&Templates::builtin());
}

#[test]
fn a_template_using_every_variable_renders_byte_identically_to_the_serialized_vars() {
    let dir = tempfile::tempdir().expect("tempdir");
    for lang in ["zh", "en"] {
        std::fs::create_dir_all(dir.path().join(lang)).expect("mkdir");
        std::fs::write(dir.path().join(lang).join("subagent.j2"), EVERYTHING).expect("write");
    }
    let t = Templates::load(Some(dir.path())).expect("load");
    assert_all_same(&t);
    // The template did read what it was given (not, say, an empty context both ways).
    let plan = &plans()[0];
    let prior = sections(plan, 3);
    let m = t.subagent(plan, 3, &TaskText::of(plan.task(3)), &prior);
    assert_eq!(m.len(), 2);
    for needle in [
        "[1:id=4]",
        "综合评估与投资建议",
        "data_needs(",
        "company",
        "debug",
    ] {
        assert!(
            m[0].content.contains(needle) || m[1].content.contains(needle),
            "{needle}: {m:?}"
        );
    }
}

#[test]
fn integer_ids_read_as_display_writes_them() {
    for n in [
        0,
        1,
        9,
        10,
        99,
        100,
        12345,
        -1,
        -10,
        i64::MAX,
        i64::MIN,
        i64::MIN + 1,
    ] {
        let shown = super::id(&TaskId::Int(n));
        assert_eq!(shown.as_str(), Some(n.to_string().as_str()));
    }
}

#[test]
fn plan_values_follow_the_plan_they_are_rendered_for() {
    // The plan-level values are kept per thread between renders; a second plan (or the same
    // plan's text changed) must never see the first one's.
    let t = Templates::builtin();
    let all = plans();
    for (a, b) in all.iter().zip(all.iter().skip(1)) {
        for plan in [a, b, a] {
            let own = TaskText::of(plan.task(0));
            let got: Vec<_> = t
                .subagent(plan, 0, &own, &[])
                .into_iter()
                .map(|m| (m.role, m.content))
                .collect();
            assert_eq!(got, reference(&t, plan, 0, &own, &[]));
        }
    }
    let mut spec = all[0].spec().clone();
    let before = ValidatedPlan::new(spec.clone()).expect("valid");
    spec.objectives[0].push('!');
    let after = ValidatedPlan::new(spec).expect("valid");
    for plan in [&before, &after] {
        let own = TaskText::of(plan.task(0));
        let got = t.subagent(plan, 0, &own, &[]);
        assert_eq!(got[0].content, reference(&t, plan, 0, &own, &[])[0].1);
    }
}

#[test]
fn each_field_is_found_where_it_is_listed() {
    fn check<const N: usize>(fields: &super::Fields<N>) {
        for (at, name) in fields.names.iter().enumerate() {
            assert_eq!((fields.find)(name), Some(at), "{name}");
        }
        assert_eq!((fields.find)("nope"), None);
    }
    check(&super::ROOT);
    check(&super::TASK);
    check(&super::HINTS);
    check(&super::PRIOR);
}
