//! Fitting prerequisite sections into a subagent's context budget.
//!
//! When the sections a task builds on exceed the budget, each is cut deterministically
//! (same input, same cut): the budget is shared out water-filling style, so sections smaller
//! than an equal share stay whole and the rest split what is left equally; a cut section
//! keeps its beginning (the `## title` and opening findings), ends at a line break when one
//! is near, and says it was cut. Every cut is recorded in `run.json`.
//!
//! The task's own description and hints count against the same budget (at most a quarter
//! each): they come from the plan, which may be model output of any size, and a prompt built
//! from them must not bypass the budget its prerequisites are held to.

use std::borrow::Cow;
use std::sync::Arc;

use planwave_llm::estimate_tokens;
// Shared with every prompt's data (`planwave_prompts::data`): one rule for cutting.
use planwave_plan::{Hints, Lang, TaskId, TaskSpec};
use planwave_prompts::data::{cut as cut_text, shares};
use planwave_record::{CutPart, SectionCut};

/// Fits `prior` (task index, prerequisite id, section text) into `budget` tokens.
pub fn fit(
    prior: &[(usize, Arc<str>)],
    ids: impl Fn(usize) -> TaskId,
    budget: Option<u64>,
    lang: Lang,
) -> (Vec<(usize, Arc<str>)>, Vec<SectionCut>) {
    let Some(budget) = budget else {
        return (prior.to_vec(), Vec::new());
    };
    let sizes: Vec<u64> = prior.iter().map(|(_, t)| estimate_tokens(t)).collect();
    let shares = shares(&sizes, budget);
    let mut cuts = Vec::new();
    let out = prior
        .iter()
        .zip(sizes.iter().zip(shares))
        .map(|((i, text), (&size, share))| {
            if share >= size {
                return (*i, text.clone());
            }
            let cut = cut_text(text, share, lang);
            cuts.push(SectionCut {
                from: ids(*i),
                part: CutPart::Section,
                tool: None,
                original_tokens: size,
                kept_tokens: estimate_tokens(&cut),
                original_chars: text.chars().count(),
                kept_chars: cut.chars().count(),
            });
            (*i, Arc::<str>::from(cut))
        })
        .collect();
    (out, cuts)
}

/// A task's own description and hints as its prompt gets them, and what was cut.
pub struct OwnText<'a> {
    pub description: Cow<'a, str>,
    pub hints: Cow<'a, Hints>,
    pub cuts: Vec<SectionCut>,
    /// Tokens the two take, which the prerequisites' sections cannot use.
    pub tokens: u64,
}

/// Fits the task's description into a quarter of `budget` and its hints into another.
pub fn fit_own<'a>(task: &'a TaskSpec, budget: Option<u64>, lang: Lang) -> OwnText<'a> {
    let hint_lists = [
        &task.hints.data_needs,
        &task.hints.key_questions,
        &task.hints.suggested_tools,
    ];
    let hint_tokens = |h: &Hints| -> u64 {
        [&h.data_needs, &h.key_questions, &h.suggested_tools]
            .iter()
            .flat_map(|l| l.iter())
            .map(|s| estimate_tokens(s))
            .sum()
    };
    let mut own = OwnText {
        description: Cow::Borrowed(task.description.as_str()),
        hints: Cow::Borrowed(&task.hints),
        cuts: Vec::new(),
        tokens: 0,
    };
    if let Some(budget) = budget {
        let quarter = (budget / 4).max(1);
        let size = estimate_tokens(&task.description);
        if size > quarter {
            let cut = cut_text(&task.description, quarter, lang);
            own.cuts
                .push(own_cut(task, CutPart::Description, &task.description, &cut));
            own.description = Cow::Owned(cut);
        }
        let items: Vec<&String> = hint_lists.iter().flat_map(|l| l.iter()).collect();
        let sizes: Vec<u64> = items.iter().map(|s| estimate_tokens(s)).collect();
        if sizes.iter().sum::<u64>() > quarter {
            let shares = shares(&sizes, quarter);
            let mut fitted =
                items
                    .iter()
                    .zip(sizes.iter().zip(shares))
                    .map(|(s, (&size, share))| {
                        if share >= size {
                            s.to_string()
                        } else {
                            cut_text(s, share, lang)
                        }
                    });
            let mut take = |l: &Vec<String>| {
                l.iter()
                    .map(|_| fitted.next().unwrap_or_default())
                    .collect()
            };
            let hints = Hints {
                data_needs: take(&task.hints.data_needs),
                key_questions: take(&task.hints.key_questions),
                suggested_tools: take(&task.hints.suggested_tools),
            };
            let before = hint_lists
                .iter()
                .flat_map(|l| l.iter())
                .cloned()
                .collect::<Vec<_>>()
                .join("\n");
            let after = [
                &hints.data_needs,
                &hints.key_questions,
                &hints.suggested_tools,
            ]
            .iter()
            .flat_map(|l| l.iter())
            .cloned()
            .collect::<Vec<_>>()
            .join("\n");
            own.cuts
                .push(own_cut(task, CutPart::Hints, &before, &after));
            own.hints = Cow::Owned(hints);
        }
    }
    own.tokens = estimate_tokens(&own.description) + hint_tokens(&own.hints);
    own
}

fn own_cut(task: &TaskSpec, part: CutPart, before: &str, after: &str) -> SectionCut {
    SectionCut {
        from: task.id.clone(),
        part,
        tool: None,
        original_tokens: estimate_tokens(before),
        kept_tokens: estimate_tokens(after),
        original_chars: before.chars().count(),
        kept_chars: after.chars().count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_is_deterministic_and_records_each_cut() {
        let long: Arc<str> = Arc::from(format!("## 标题\n\n{}", "数据分析。".repeat(400)).as_str());
        let short: Arc<str> = Arc::from("## Short\n\nfine.");
        let prior = vec![(0, long.clone()), (1, short.clone())];
        let (a, cuts) = fit(&prior, |i| TaskId::Int(i as i64 + 1), Some(500), Lang::Zh);
        let (b, _) = fit(&prior, |i| TaskId::Int(i as i64 + 1), Some(500), Lang::Zh);
        assert_eq!(a, b);
        assert_eq!(a[1].1, short, "the small section is untouched");
        assert!(a[0].1.starts_with("## 标题") && a[0].1.ends_with("已截断]"));
        assert_eq!(cuts.len(), 1);
        assert_eq!(cuts[0].from, TaskId::Int(1));
        assert!(
            cuts[0].kept_tokens <= 500 && cuts[0].original_tokens > 2000,
            "{cuts:?}"
        );
        let (c, none) = fit(&prior, |i| TaskId::Int(i as i64), None, Lang::Zh);
        assert_eq!(c, prior);
        assert!(none.is_empty());
    }
}
