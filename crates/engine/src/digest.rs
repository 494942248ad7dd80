//! What the integrator's executive-summary prompt sees of the sections: all of them when they
//! fit its budget, else excerpts.
//!
//! Without a bound the summary prompt grows with the plan: 10,000 sections made a 15 MB
//! prompt (no model takes that, HTTP servers refuse the body, and rendering it cost a quarter
//! of a zero-latency run). Within `budget` estimated tokens: when every section can keep at
//! least [`MIN_EXCERPT_TOKENS`], the budget is shared water-filling style as for a
//! subagent's prerequisites (`context::fit`); when there are more sections than that allows,
//! the first ones in report order (dependency order, so the foundations) get excerpts and the
//! rest are left out, with a note at the end saying how many. The report itself always has
//! every section in full: this only bounds what the model is asked to summarize.

use std::sync::Arc;

use planwave_plan::{Lang, TaskId};

use crate::context;

/// The executive summary's prompt budget for sections, in estimated tokens, by default.
pub const DEFAULT_SUMMARY_BUDGET_TOKENS: u64 = 32_000;

/// Below this an excerpt says too little to be worth its place; fewer sections are shown.
pub const MIN_EXCERPT_TOKENS: u64 = 160;

/// A section as the summary prompt gets it: task index, and its text (`None`: not completed).
pub type Shown = (usize, Option<Arc<str>>);

/// Sections for the summary prompt: `(task index, text or None)` in the given order, and
/// how many were left out (from the end of `order`).
pub fn digest(
    order: &[usize],
    text: impl Fn(usize) -> Option<Arc<str>>,
    ids: impl Fn(usize) -> TaskId,
    budget: Option<u64>,
    lang: Lang,
) -> (Vec<Shown>, usize) {
    let all = || order.iter().map(|&i| (i, text(i))).collect::<Vec<_>>();
    let Some(budget) = budget else {
        return (all(), 0);
    };
    // Stops counting once over budget: estimating 10,000 sections just to learn that was
    // a visible share of a zero-latency run.
    let mut total = 0u64;
    let fits = order.iter().all(|&i| {
        total += text(i).map_or(0, |t| planwave_llm::estimate_tokens(&t));
        total <= budget
    });
    if fits {
        return (all(), 0);
    }
    let keep = ((budget / MIN_EXCERPT_TOKENS).max(1) as usize).min(order.len());
    let omitted = order.len() - keep;
    let shown: Vec<Shown> = order[..keep].iter().map(|&i| (i, text(i))).collect();
    let with_text: Vec<(usize, Arc<str>)> = shown
        .iter()
        .filter_map(|(i, t)| t.clone().map(|t| (*i, t)))
        .collect();
    let (fitted, _cuts) = context::fit(&with_text, ids, Some(budget), lang);
    let mut fitted = fitted.into_iter();
    let mut out: Vec<Shown> = shown
        .into_iter()
        .map(|(i, t)| (i, t.and_then(|_| fitted.next().map(|(_, f)| f))))
        .collect();
    if omitted > 0
        && let Some((_, Some(last))) = out.iter_mut().rev().find(|(_, t)| t.is_some())
    {
        let note = match lang {
            Lang::Zh => format!(
                "[另有 {omitted} 个章节未在此列出：执行摘要的提示词限于约 {budget} 个 token]"
            ),
            Lang::En => format!(
                "[{omitted} more sections are not shown here: the executive summary's prompt is limited to about {budget} tokens]"
            ),
        };
        *last = Arc::from(format!("{last}\n\n{note}").as_str());
    }
    (out, omitted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use planwave_llm::estimate_tokens;

    fn id(i: usize) -> TaskId {
        TaskId::Int(i as i64 + 1)
    }

    #[test]
    fn small_reports_pass_whole() {
        let texts: Vec<Arc<str>> = vec![Arc::from("## A\n\nfine."), Arc::from("## B\n\nok.")];
        let (out, omitted) = digest(
            &[1, 0],
            |i| Some(texts[i].clone()),
            id,
            Some(1000),
            Lang::En,
        );
        assert_eq!(omitted, 0);
        assert_eq!(
            out,
            vec![(1, Some(texts[1].clone())), (0, Some(texts[0].clone()))]
        );
    }

    #[test]
    fn many_sections_are_bounded_and_the_rest_counted() {
        let section: Arc<str> = Arc::from(format!("## T\n\n{}", "word ".repeat(400)).as_str());
        let order: Vec<usize> = (0..10_000).collect();
        let budget = 4_000;
        let (out, omitted) = digest(
            &order,
            |_| Some(section.clone()),
            id,
            Some(budget),
            Lang::En,
        );
        let shown = (budget / MIN_EXCERPT_TOKENS) as usize;
        assert_eq!((out.len(), omitted), (shown, 10_000 - shown));
        assert_eq!(out[0].0, 0, "report order is kept");
        let total: u64 = out
            .iter()
            .map(|(_, t)| estimate_tokens(t.as_deref().unwrap_or("")))
            .sum();
        // The budget, plus the one note saying what was left out.
        assert!(total <= budget + 60, "{total}");
        let last = out.last().and_then(|(_, t)| t.clone()).expect("text");
        assert!(last.ends_with("about 4000 tokens]"), "{last}");
        assert!(last.contains(&format!("[{} more sections", 10_000 - shown)));
    }

    #[test]
    fn missing_sections_stay_missing_and_none_means_whole() {
        let t: Arc<str> = Arc::from("## A\n\nx");
        let (out, omitted) = digest(
            &[0, 1],
            |i| (i == 0).then(|| t.clone()),
            id,
            Some(10),
            Lang::Zh,
        );
        assert_eq!(omitted, 0);
        assert_eq!(out[1], (1, None));
        let (whole, _) = digest(&[0], |_| Some(t.clone()), id, None, Lang::En);
        assert_eq!(whole, vec![(0, Some(t))]);
    }
}
