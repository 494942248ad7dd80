//! The compiled subagent template renders minijinja's text byte for byte, and every form it
//! does not know is left to minijinja.

use std::sync::Arc;

use planwave_plan::{Hints, Lang, ValidatedPlan};

use super::Compiled;
use crate::render::subagent::{
    self,
    tests::{plans, sections},
};
use crate::set::{PriorSection, TaskText};
use crate::templates::Templates;

const EN: &str = include_str!("../../../../../prompts/en/subagent.j2");
const ZH: &str = include_str!("../../../../../prompts/zh/subagent.j2");

/// Templates in the compiled forms other than the built-in ones: prose reworded or moved,
/// the forms used on other fields, the loop outside `if`, `if` inside the loop, braces that
/// are text, no trailing newline, a CRLF one, two of them.
const VARIANTS: &[&str] = &[
    "Task {{task.id}} — {{ task.title or \"untitled\" }} / {{ topic or 'no topic' }}\n\
     {% for sec in prior %}[{{ sec.id }}|{{ sec.title or \"?\" }}|{{ sec.text or \"(empty)\" }}]\
     {% if prior %}+{% endif %}{% endfor %}\n{{ research_type or \"\" }}.",
    "{ not a tag } {a} }} %} {{ objectives|join('; ') if objectives else 'none' }}{",
    "{% if prior %}{% if prior %}twice{% endif %}{% endif %}{{ task.description }}\r\n",
    "=== system ===\nYou write {{ task.title }}.\n=== user ===\n{{ task.description }}\n\n",
    "{{ task.hints.key_questions | join(\"\") if task.hints.key_questions else \"\" }}|\
     {{ task.hints.data_needs | join(\" | \") if task.hints.data_needs else \"-\" }}",
];

/// Forms the compiled template does not know (each must stay minijinja's).
const OTHERS: &[&str] = &[
    "{{ research_type }}",
    "{{ task.hints }}",
    "{{ prior }}",
    "{{ objectives | join(', ') }}",
    "{{ objectives | join(', ') if task.hints.data_needs else 'x' }}",
    "{{ task.title | upper }}",
    "{{ task.id ~ '!' }}",
    "{{ \"a\\nb\" }}",
    "{{ task.nope }}",
    "{{- task.id }}",
    "{{ task.id -}}",
    "{%- if prior %}{% endif %}",
    "{% if prior -%}{% endif %}",
    "{%+ if prior %}{% endif %}",
    "{# a comment #}",
    "{% if prior %}x",
    "x{% endif %}",
    "{% for s in prior %}x",
    "{% for s in prior %}{{ loop.index }}{% endfor %}",
    "{% for s in prior %}{% for t in prior %}{% endfor %}{% endfor %}",
    "{% for task in prior %}{{ task.id }}{% endfor %}",
    "{% for s in prior %}{{ s.body }}{% endfor %}",
    "{{ s.text }}",
    "{% if prior %}a{% else %}b{% endif %}",
    "{% if not prior %}{% endif %}",
    "{% raw %}{{ x }}{% endraw %}",
    "{% set x = 1 %}",
    "{{ task.id",
    "{{ 'unterminated }}",
];

/// Renders through minijinja, with the variables the engine gives it.
fn minijinja(
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
    .expect("minijinja renders")
}

/// `source` as both languages' subagent template.
fn loaded(source: &str) -> (tempfile::TempDir, Templates) {
    let dir = tempfile::tempdir().expect("tempdir");
    for lang in ["zh", "en"] {
        std::fs::create_dir_all(dir.path().join(lang)).expect("mkdir");
        std::fs::write(dir.path().join(lang).join("subagent.j2"), source).expect("write");
    }
    let t = Templates::load(Some(dir.path())).expect("load");
    (dir, t)
}

/// For every plan, task and set of sections: the compiled text is minijinja's.
fn assert_same_as_minijinja(t: &Templates, what: &str) {
    let cut = Hints {
        key_questions: vec!["why?".into(), "".into()],
        ..Hints::default()
    };
    let mut checked = 0;
    for plan in plans() {
        let compiled = t.subagent[usize::from(plan.lang() == Lang::Zh)]
            .as_ref()
            .unwrap_or_else(|| panic!("{what}: not compiled"));
        for index in 0..plan.len() {
            let many: Vec<PriorSection> = (0..plan.len())
                .map(|i| PriorSection {
                    index: i,
                    text: Arc::from(format!("text of {i}\n").repeat(i + 1)),
                })
                .collect();
            for prior in [sections(&plan, index), Vec::new(), many] {
                for own in [
                    TaskText::of(plan.task(index)),
                    TaskText {
                        description: "",
                        hints: &cut,
                    },
                ] {
                    let want = minijinja(t, &plan, index, &own, &prior);
                    let got = compiled.render(&plan, index, &own, &prior);
                    assert_eq!(got, want, "{what}: task {index}, {} sections", prior.len());
                    // Sized exactly: the message takes this buffer for the whole call.
                    assert_eq!(got.capacity(), got.len(), "{what}: task {index}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 50, "{checked}");
}

#[test]
fn the_built_in_subagent_templates_are_compiled_and_render_minijinja_s_text() {
    let t = Templates::builtin();
    assert!(t.subagent.iter().all(Option::is_some));
    assert_same_as_minijinja(&t, "built-in");
    // The text is the template's: a section and the task's own words are in it.
    let plan = &plans()[3];
    let prior = sections(plan, 3);
    let text =
        t.subagent[0]
            .as_ref()
            .expect("en")
            .render(plan, 3, &TaskText::of(plan.task(3)), &prior);
    assert!(text.starts_with("You are executing task "), "{text}");
    assert!(text.contains(plan.task(3).description.as_str()));
    assert!(text.contains("<data source=\"task "));
}

#[test]
fn reworded_and_rearranged_templates_in_the_same_forms_render_minijinja_s_text() {
    for source in VARIANTS.iter().chain([&EN, &ZH]) {
        let (_dir, t) = loaded(source);
        assert_same_as_minijinja(&t, source);
    }
}

#[test]
fn any_other_form_is_left_to_minijinja() {
    for source in OTHERS {
        assert!(Compiled::of(source).is_none(), "{source}");
        // With one of them in it, the built-in template is not compiled either.
        let spliced = EN.replacen("## Your task", &format!("## Your task {source}"), 1);
        assert!(Compiled::of(&spliced).is_none(), "{spliced}");
    }
    // And a template minijinja loads is still rendered by it.
    let (_dir, t) = loaded("{{ task.title | upper }}\n{{ research_type }}");
    assert!(t.subagent.iter().all(Option::is_none));
    let plan = &plans()[4];
    let own = TaskText::of(plan.task(0));
    let m = crate::set::PromptSet::subagent(&t, plan, 0, &own, &[]);
    assert_eq!(m[0].content, minijinja(&t, plan, 0, &own, &[]).trim());
    assert!(
        m[0].content
            .starts_with(&plan.task(0).title().to_uppercase())
    );
}
