//! The subagent prompt rendered with its opening split off is the whole template's text,
//! byte for byte: built-in templates in both languages and both answer forms, with and
//! without prerequisites, plans that change under a thread's cached opening, and user
//! templates whose shapes allow a split or forbid one.

use planwave_plan::{Lang, PlanSpec, TaskSpec, ValidatedPlan, parse_plan_str};

use super::opening::split_point_of;
use super::*;
use crate::set::{AnswerForm, PriorSection, TaskText};

fn tesla() -> ValidatedPlan {
    let text = include_str!("../../../../examples/tesla.json");
    ValidatedPlan::new(parse_plan_str(text).expect("parse")).expect("valid")
}

fn small_plan(topic: &str, objectives: &[&str]) -> ValidatedPlan {
    ValidatedPlan::new(PlanSpec {
        topic: topic.into(),
        objectives: objectives.iter().map(|o| (*o).to_owned()).collect(),
        tasks: vec![
            TaskSpec::new("a", "First part", vec![]),
            TaskSpec::new("b", "Second part", vec!["a".into()]),
        ],
        ..PlanSpec::default()
    })
    .expect("valid")
}

/// The whole template rendered as one, the way it was before the split.
fn whole(
    t: &Templates,
    plan: &ValidatedPlan,
    index: usize,
    own: &TaskText<'_>,
    prior: &[PriorSection],
) -> String {
    t.render_raw(
        plan.lang(),
        "subagent",
        subagent::vars(plan, index, own, prior),
    )
    .expect("render")
}

/// Every task of `plan` in both answer forms, each with its prerequisites' sections.
fn assert_same_bytes(t: &Templates, plan: &ValidatedPlan) {
    for form in [AnswerForm::Section, AnswerForm::JsonProtocol] {
        for index in 0..plan.len() {
            let prior: Vec<PriorSection> = plan
                .deps(index)
                .iter()
                .map(|&d| PriorSection {
                    index: d as usize,
                    text: format!("## Section {d}\n\nIts text, with 42 % and <b>tags</b>.\n")
                        .into(),
                })
                .collect();
            let own = TaskText {
                form,
                ..TaskText::of(plan.task(index))
            };
            let split = t
                .render_subagent(plan, index, &own, &prior)
                .expect("render");
            assert_eq!(
                split,
                whole(t, plan, index, &own, &prior),
                "task {index}, {form:?}"
            );
        }
    }
}

#[test]
fn the_built_in_templates_split_and_render_the_same_bytes() {
    let t = Templates::builtin();
    assert!(
        t.subagent_split.iter().all(Option::is_some),
        "both built-in subagent templates open with their plan-wide part"
    );
    let zh = tesla();
    let en = tesla().with_lang(Lang::En);
    assert_same_bytes(&t, &zh);
    assert_same_bytes(&t, &en);
}

#[test]
fn a_thread_s_opening_follows_the_plan_it_renders_for() {
    let t = Templates::builtin();
    // Alternating plans on one thread: each render is its own plan's, never the cached one
    // of the plan before (same topic with other objectives included).
    let plans = [
        small_plan("Batteries", &["Costs"]),
        small_plan("Batteries", &["Costs", "Supply"]),
        small_plan("Solar", &["Costs"]),
        small_plan("Batteries", &["Costs"]),
    ];
    for plan in plans.iter().chain(plans.iter().rev()) {
        assert_same_bytes(&t, plan);
    }
    // Two template sets (an override of the opening's text) on one thread.
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir_all(dir.path().join("en")).expect("mkdir");
    std::fs::write(
        dir.path().join("en/subagent.j2"),
        "Other words about {{ topic }}.\nTask {{ task.id }}",
    )
    .expect("write");
    let other = Templates::load(Some(dir.path())).expect("load");
    let plan = small_plan("Batteries", &["Costs"]).with_lang(Lang::En);
    for _ in 0..2 {
        assert_same_bytes(&t, &plan);
        assert_same_bytes(&other, &plan);
    }
}

/// User templates: those that allow a split render the same bytes with it; those that do not
/// are not split.
#[test]
fn user_templates_split_only_where_the_text_cannot_change() {
    let cases: &[(&str, bool)] = &[
        // The opening ends with a newline, which minijinja would drop at a template's end.
        ("About {{ topic }}:\n{{ task.id }} {{ task.title }}\n", true),
        (
            "{% if json_protocol %}JSON{% else %}text{% endif %}\n\n{{ task.id }}",
            true,
        ),
        // A tag-like string and a comment in the opening.
        (
            "{{ \"{{ task.id }}\" }} {# {{ task.title }} #}{{ topic }} {{ task.id }}",
            true,
        ),
        // The rest trims the whitespace before it: no split there.
        (
            "{{ topic }}   \n{%- if task.id %} {{ task.id }}{% endif %}",
            false,
        ),
        // The opening sets a variable the rest reads.
        ("{% set t = topic %}{{ t }} {{ task.id }}", false),
        // A task variable first: nothing plan-wide to split off.
        ("{{ task.id }} {{ topic }}", false),
        // Raw text whose tags are not tags.
        ("{% raw %}{{ topic }}{% endraw %} {{ task.id }}", false),
    ];
    for (source, splits) in cases {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("en")).expect("mkdir");
        std::fs::write(dir.path().join("en/subagent.j2"), source).expect("write");
        let t = Templates::load(Some(dir.path())).expect("load");
        assert_eq!(t.subagent_split[0].is_some(), *splits, "{source}");
        assert_same_bytes(&t, &small_plan("Batteries", &["Costs"]).with_lang(Lang::En));
    }
    assert_eq!(
        split_point_of("{% extends \"base.j2\" %}{{ topic }}{{ task.id }}"),
        None
    );
    assert_eq!(
        split_point_of("Hello {{ topic }}{% block b %}{{ task.id }}{% endblock %}"),
        None
    );
}
