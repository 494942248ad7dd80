//! Data-quality warnings of a completed section: the task stays completed, and
//! the report, `show` and the integrator's prompt name them.

use std::fmt;

use planwave_plan::Lang;
use serde::{Deserialize, Serialize};

/// Something worth knowing about a completed section; the task stays completed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SectionWarning {
    /// The body is under `min_chars` characters (headings and indentation left out).
    Short { chars: usize, min_chars: usize },
    /// No quantitative data (not one digit in the body); the integrator is told, so the summary
    /// says which sections lack numbers.
    NoFigures,
    /// Cut by the output cap after `tokens` output tokens (`finish_reason: length`): the
    /// task's status is `truncated`.
    Truncated { tokens: u64 },
}

impl SectionWarning {
    pub fn is_no_figures(&self) -> bool {
        matches!(self, SectionWarning::NoFigures)
    }

    pub fn is_truncated(&self) -> bool {
        matches!(self, SectionWarning::Truncated { .. })
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
            (SectionWarning::Truncated { tokens }, Lang::Zh) => {
                format!("在输出上限（{tokens} 个 token）处被截断，内容不完整")
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
            SectionWarning::Truncated { tokens } => write!(
                f,
                "cut by the output limit ({tokens} tokens): the section ends mid-way (raise it with --max-output subagent=N)"
            ),
        }
    }
}
