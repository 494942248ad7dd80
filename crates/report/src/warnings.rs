//! The report appendix naming the completed sections the quality checks flagged.

use std::fmt::Write;

use planwave_plan::{Lang, ValidatedPlan};
use planwave_record::TaskRecord;

/// The report appendix's list of flagged sections, in plan order; empty when none is.
pub fn appendix(plan: &ValidatedPlan, records: &[TaskRecord]) -> String {
    let lang = plan.lang();
    let mut out = String::new();
    for (i, rec) in records.iter().enumerate().take(plan.len()) {
        if rec.warnings.is_empty() {
            continue;
        }
        if out.is_empty() {
            let _ = match lang {
                Lang::Zh => writeln!(out, "\n### 章节质量提示\n"),
                Lang::En => writeln!(out, "\n### Section warnings\n"),
            };
        }
        let what: Vec<String> = rec.warnings.iter().map(|w| w.describe(lang)).collect();
        let title = plan.task(i).title();
        let _ = match lang {
            Lang::Zh => writeln!(out, "- 任务 {}「{title}」：{}", rec.id, what.join("；")),
            Lang::En => writeln!(out, "- Task {} \"{title}\": {}", rec.id, what.join("; ")),
        };
    }
    out
}
