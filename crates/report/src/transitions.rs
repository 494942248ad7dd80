//! The transitions the integrator writes between sections (it is asked to add the
//! transitional sentences the report needs) moved from the summary to where they belong: each sentence just before the second section of its pair.
//! Pure: the summary text in, the summary without them and the sentences per task out.

use planwave_plan::ValidatedPlan;

/// Headings the prompts ask for (`### Transitions`, `### 章节衔接`) and close variants.
const HEADINGS: &[&str] = &["transitions", "transition", "章节衔接", "过渡", "过渡语"];

/// The summary with its transitions taken out, and the sentences to put before each task's
/// section (index = plan order; empty, not one empty list per task, when the summary has no
/// transitions list: a list per task of a 100,000-task plan is megabytes for nothing).
#[derive(Debug, Default, PartialEq)]
pub struct Placed {
    pub summary: String,
    pub before: Vec<Vec<String>>,
}

/// Takes the transitions list out of `summary`. A line whose second section cannot be found
/// stays in the summary under its heading, so no sentence of the model's is lost; when every
/// line is placed, the heading goes too.
pub fn place_transitions(summary: &str, plan: &ValidatedPlan) -> Placed {
    let lines: Vec<&str> = summary.lines().collect();
    let Some(start) = lines.iter().position(|l| is_transitions_heading(l)) else {
        return Placed {
            summary: summary.to_owned(),
            before: Vec::new(),
        };
    };
    let mut before = vec![Vec::new(); plan.len()];
    let end = lines[start + 1..]
        .iter()
        .position(|l| l.trim_start().starts_with('#'))
        .map_or(lines.len(), |p| start + 1 + p);
    let mut kept: Vec<&str> = Vec::new();
    for line in &lines[start + 1..end] {
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(line, plan) {
            Some((target, text)) => before[target].push(text),
            None => kept.push(line),
        }
    }
    let mut out: Vec<&str> = lines[..start].to_vec();
    if !kept.is_empty() {
        out.push(lines[start]);
        out.extend(kept);
        out.push("");
    }
    out.extend(&lines[end..]);
    let summary = out.join("\n").trim_end().to_owned();
    Placed { summary, before }
}

fn is_transitions_heading(line: &str) -> bool {
    let l = line.trim();
    if !l.starts_with('#') {
        return false;
    }
    let text = l
        .trim_start_matches('#')
        .trim()
        .trim_end_matches([':', '：'])
        .trim()
        .to_lowercase();
    HEADINGS.contains(&text.as_str())
}

/// `- (1 → 2) sentence` (as the prompts ask), or the older `- From "A" to "B": sentence` /
/// `- 从「A」到「B」：sentence` naming titles: the second section's index and the sentence.
fn parse_line(line: &str, plan: &ValidatedPlan) -> Option<(usize, String)> {
    let item = line.trim().trim_start_matches(['-', '*', '+']).trim_start();
    let (target, rest) = by_ids(item, plan).or_else(|| by_titles(item, plan))?;
    let text = rest.trim_start_matches([':', '：', ' ', '\t']).trim();
    (!text.is_empty()).then(|| (target, text.to_owned()))
}

fn by_ids<'a>(item: &'a str, plan: &ValidatedPlan) -> Option<(usize, &'a str)> {
    let (open, close) = [('(', ')'), ('（', '）'), ('[', ']')]
        .into_iter()
        .find(|(o, _)| item.starts_with(*o))?;
    let inner_end = item.find(close)?;
    let inner = &item[open.len_utf8()..inner_end];
    let (_, second) = ["→", "->", "=>"]
        .iter()
        .find_map(|arrow| inner.split_once(arrow))?;
    let second = second.trim().trim_start_matches(['#']);
    let target = plan.index_of_key(second.trim())?;
    Some((target, &item[inner_end + close.len_utf8()..]))
}

fn by_titles<'a>(item: &'a str, plan: &ValidatedPlan) -> Option<(usize, &'a str)> {
    let (second, rest) = if let Some(r) = item.strip_prefix("从「") {
        let (_, after) = r.split_once("」到「")?;
        after.split_once('」')?
    } else {
        let r = item
            .get(..5)
            .filter(|p| p.eq_ignore_ascii_case("from "))
            .map(|_| &item[5..])?;
        let r = r.strip_prefix('"')?;
        let (_, after) = r.split_once("\" to \"")?;
        after.split_once('"')?
    };
    let target = (0..plan.len()).find(|&i| plan.task(i).title() == second.trim())?;
    Some((target, rest))
}

#[cfg(test)]
mod tests {
    use planwave_plan::{PlanSpec, TaskId, TaskSpec};

    use super::*;

    fn plan() -> ValidatedPlan {
        ValidatedPlan::new(PlanSpec {
            tasks: vec![
                TaskSpec::new(1, "Business", vec![]),
                TaskSpec::new(2, "Finances", vec![]),
                TaskSpec::new(3, "Outlook", vec![TaskId::Int(1), TaskId::Int(2)]),
            ],
            ..Default::default()
        })
        .expect("valid")
    }

    #[test]
    fn each_sentence_goes_before_its_second_section_and_the_list_leaves_the_summary() {
        let s = "Summary.\n\n### Consistency check\n- none\n\n### Transitions\n- (1 → 2) Money next.\n- From \"Finances\" to \"Outlook\": Then the view.\n\n### After\nmore";
        let p = place_transitions(s, &plan());
        assert_eq!(
            p.summary,
            "Summary.\n\n### Consistency check\n- none\n\n### After\nmore"
        );
        assert_eq!(
            p.before,
            vec![
                vec![],
                vec!["Money next.".to_owned()],
                vec!["Then the view.".to_owned()]
            ]
        );
    }

    #[test]
    fn a_line_naming_no_known_section_stays_under_its_heading() {
        let s = "S.\n\n### 章节衔接\n- （1 → 3）承接。\n- (1 → 9) lost?";
        let p = place_transitions(s, &plan());
        assert_eq!(p.summary, "S.\n\n### 章节衔接\n- (1 → 9) lost?");
        assert_eq!(p.before[2], vec!["承接。".to_owned()]);
    }

    #[test]
    fn a_summary_without_transitions_is_unchanged() {
        let p = place_transitions("Just a summary.\n", &plan());
        assert_eq!(p.summary, "Just a summary.\n");
        assert!(p.before.is_empty());
    }
}
