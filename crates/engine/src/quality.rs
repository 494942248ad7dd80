//! Data-quality checks of a completed section (seed 002, "数据质量问题"): a section that is
//! too short, or that gives no figure at all, is accepted but flagged on its task. Pure.

use std::fmt::{self, Write};
use std::sync::Arc;

use planwave_plan::{Lang, ValidatedPlan};
use serde::{Deserialize, Serialize};

use crate::outcome::{TaskRecord, TaskStatus};

/// Below this many characters a section is flagged as short ("<300字").
pub const MIN_SECTION_CHARS: usize = 300;

/// Something worth knowing about a completed section; the task stays completed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SectionWarning {
    /// The body is under [`MIN_SECTION_CHARS`] characters (see [`body_chars`]).
    Short { chars: usize, min_chars: usize },
    /// No quantitative data (see [`has_figures`]); the integrator is told, so the summary
    /// says which sections lack numbers.
    NoFigures,
}

impl SectionWarning {
    pub fn is_no_figures(&self) -> bool {
        matches!(self, SectionWarning::NoFigures)
    }
}

impl SectionWarning {
    /// The warning in the report's language.
    pub fn describe(&self, lang: Lang) -> String {
        match (self, lang) {
            (SectionWarning::Short { chars, min_chars }, Lang::Zh) => {
                format!("分析过于简短（{chars} 字，少于 {min_chars} 字），已接受")
            }
            (SectionWarning::NoFigures, Lang::Zh) => {
                "缺少定量数据（没有数字、百分比或金额）".into()
            }
            (w, Lang::En) => w.to_string(),
        }
    }
}

impl fmt::Display for SectionWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SectionWarning::Short { chars, min_chars } => write!(
                f,
                "short section: {chars} characters (under {min_chars}), accepted"
            ),
            SectionWarning::NoFigures => {
                write!(f, "no quantitative data (no number, percentage or amount)")
            }
        }
    }
}

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

/// Sets each completed task's warnings from its section (a resumed run's kept sections
/// included, so `run.json` says the same whichever run wrote them).
pub fn flag_sections(records: &mut [TaskRecord], sections: &[Option<Arc<str>>]) {
    for (rec, text) in records.iter_mut().zip(sections) {
        rec.warnings = match (rec.status, text) {
            (TaskStatus::Completed, Some(text)) => section_warnings(text),
            _ => Vec::new(),
        };
    }
}

/// The warnings of one section's text, in a fixed order (short first).
pub fn section_warnings(text: &str) -> Vec<SectionWarning> {
    let mut out = Vec::new();
    let chars = body_chars(text);
    if chars < MIN_SECTION_CHARS {
        out.push(SectionWarning::Short {
            chars,
            min_chars: MIN_SECTION_CHARS,
        });
    }
    if !has_figures(text) {
        out.push(SectionWarning::NoFigures);
    }
    out
}

/// The analysis itself, line by line: heading lines (`#`...) are left out, since a title is
/// not analysis and the seed's "300字" measures what the section says; each line is trimmed,
/// so indentation and line breaks do not count either.
fn body_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
}

/// Characters (not bytes: "300字" are 300 CJK characters) of the body.
pub fn body_chars(text: &str) -> usize {
    body_lines(text).map(|l| l.chars().count()).sum()
}

/// Whether the body gives any quantitative data, defined simply as a digit (ASCII or
/// full-width) anywhere in the body: that covers numbers, percentages, amounts, years. Not
/// counted: headings (their `### 1.` numbering) and the marker of an ordered list item
/// (`1. `), which number the text rather than measure anything.
pub fn has_figures(text: &str) -> bool {
    body_lines(text).any(|l| {
        let l = strip_list_marker(l);
        l.chars()
            .any(|c| c.is_ascii_digit() || ('０'..='９').contains(&c))
    })
}

/// `1. text` or `12) text` without its number.
fn strip_list_marker(line: &str) -> &str {
    let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let rest = &line[digits..];
    match rest.strip_prefix(['.', ')']) {
        Some(after) if digits > 0 && (after.is_empty() || after.starts_with(' ')) => after,
        _ => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_are_counted_not_bytes_and_headings_do_not_count() {
        let zh = format!("## 标题很长很长\n\n{}\n", "字".repeat(299));
        assert_eq!(body_chars(&zh), 299);
        assert_eq!(
            section_warnings(&zh)[0],
            SectionWarning::Short {
                chars: 299,
                min_chars: 300
            }
        );
        let long = format!("## t\n\n{}1\n", "字".repeat(299));
        assert_eq!(section_warnings(&long), Vec::new());
    }

    #[test]
    fn numbers_percentages_and_amounts_are_figures_list_and_heading_numbers_are_not() {
        for yes in [
            "Revenue grew 12% in 2024.",
            "营收 ３ 亿元",
            "costs $5m",
            "- 2 rivals",
        ] {
            assert!(has_figures(yes), "{yes}");
        }
        for no in [
            "## 1. Outlook\n\nSteady.",
            "1. steady growth\n2) wide moat",
            "No numbers here.",
        ] {
            assert!(!has_figures(no), "{no}");
        }
    }
}
