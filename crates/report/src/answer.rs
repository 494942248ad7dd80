//! A step plan's answer: the output of its steps marked `final`, else of its last step. A
//! step plan answers its goal, so the report shows this first and the step outputs after it
//! as an appendix; a research plan (chapters) has no answer of this kind.

use std::fmt::Write;
use std::sync::Arc;

use planwave_plan::{Lang, PlanFormat, ValidatedPlan};
use planwave_record::TaskRecord;

/// The steps whose output is the answer, in plan order; empty for a research plan.
pub fn answer_steps(plan: &ValidatedPlan) -> Vec<usize> {
    if plan.spec().format != PlanFormat::Steps || plan.is_empty() {
        return Vec::new();
    }
    let marked: Vec<usize> = (0..plan.len()).filter(|&i| plan.task(i).is_final).collect();
    if marked.is_empty() {
        vec![plan.len() - 1]
    } else {
        marked
    }
}

/// The answer as `run.json` keeps it (the outputs as they are), or `None` when the plan is
/// not a step plan or no answer step completed. Several answer steps: each under its title.
pub fn step_answer(
    plan: &ValidatedPlan,
    records: &[TaskRecord],
    sections: &[Option<Arc<str>>],
) -> Option<String> {
    let steps = answer_steps(plan);
    let done: Vec<(usize, &str)> = steps
        .iter()
        .filter(|&&i| records.get(i).is_some_and(|r| r.status.has_section()))
        .filter_map(|&i| Some((i, sections.get(i)?.as_deref()?.trim())))
        .collect();
    match done.as_slice() {
        [] => None,
        [(_, text)] if steps.len() == 1 => Some((*text).to_owned()),
        many => Some(
            many.iter()
                .map(|(i, text)| format!("### {}\n\n{text}", plan.task(*i).title()))
                .collect::<Vec<_>>()
                .join("\n\n"),
        ),
    }
}

/// Output text as Markdown: a JSON object or array (a tool's raw result) as a fenced JSON
/// block, pretty-printed; anything else as it is.
pub fn output_markdown(text: &str) -> String {
    let t = text.trim();
    if (t.starts_with('{') || t.starts_with('['))
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(t)
        && (v.is_object() || v.is_array())
    {
        let pretty = serde_json::to_string_pretty(&v).unwrap_or_else(|_| t.to_owned());
        return format!("```json\n{pretty}\n```");
    }
    t.to_owned()
}

pub(crate) fn answer_label(lang: Lang) -> &'static str {
    match lang {
        Lang::Zh => "答案",
        Lang::En => "Answer",
    }
}

fn steps_label(lang: Lang) -> &'static str {
    match lang {
        Lang::Zh => "附录：步骤输出",
        Lang::En => "Appendix: step outputs",
    }
}

/// The report's answer section for a step plan: the answer steps' outputs (JSON fenced),
/// or the placeholder of an answer step that did not complete.
pub(crate) fn answer_section(
    out: &mut String,
    plan: &ValidatedPlan,
    records: &[TaskRecord],
    sections: &[Option<Arc<str>>],
) {
    let steps = answer_steps(plan);
    let lang = plan.lang();
    let _ = writeln!(out, "## {}\n", answer_label(lang));
    for &i in &steps {
        if steps.len() > 1 {
            let _ = writeln!(out, "### {}\n", plan.task(i).title());
        }
        let _ = writeln!(out, "{}\n", step_text(plan, records, sections, i));
    }
}

/// Every step's output after the report's body, each under its title.
pub(crate) fn steps_appendix(
    out: &mut String,
    plan: &ValidatedPlan,
    records: &[TaskRecord],
    sections: &[Option<Arc<str>>],
    order: &[usize],
) {
    let _ = writeln!(out, "## {}\n", steps_label(plan.lang()));
    for &i in order {
        let _ = writeln!(out, "### {}\n", plan.task(i).title());
        let _ = writeln!(out, "{}\n", step_text(plan, records, sections, i));
        if let Some(tag) = records.get(i).and_then(|r| r.round) {
            let _ = writeln!(out, "{}\n", crate::markdown::round_note(plan.lang(), tag));
        }
    }
}

/// `text` without a first line that only repeats the step's title as a heading (the
/// report already heads the output with it).
fn without_title<'t>(text: &'t str, title: &str) -> &'t str {
    let t = text.trim_start();
    let (first, rest) = t.split_once('\n').unwrap_or((t, ""));
    if first.starts_with('#') && first.trim_start_matches('#').trim() == title.trim() {
        rest
    } else {
        text
    }
}

fn step_text(
    plan: &ValidatedPlan,
    records: &[TaskRecord],
    sections: &[Option<Arc<str>>],
    i: usize,
) -> String {
    match (sections.get(i).cloned().flatten(), records.get(i)) {
        (Some(text), Some(r)) if r.status.has_section() => {
            output_markdown(without_title(&text, plan.task(i).title()))
        }
        (_, Some(r)) => crate::markdown::placeholder(plan.lang(), r),
        (_, None) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_output_is_fenced_and_prose_is_kept() {
        assert_eq!(
            output_markdown(" {\"a\":1} "),
            "```json\n{\n  \"a\": 1\n}\n```"
        );
        assert_eq!(output_markdown("The sum is 40."), "The sum is 40.");
        assert_eq!(output_markdown("[not json"), "[not json");
    }
}
