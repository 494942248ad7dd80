//! The evaluator's and the reflector's answers (the loop's JSON answers), as validated values.

use serde::{Deserialize, Serialize};

/// Scores of one round, each 0-100.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Dimensions {
    pub completeness: f64,
    pub correctness: f64,
    pub efficiency: f64,
    pub reliability: f64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    pub overall_score: f64,
    pub is_successful: bool,
    pub dimensions: Dimensions,
    pub successes: Vec<String>,
    pub failures: Vec<String>,
    pub improvement_suggestions: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Suggestion {
    pub aspect: String,
    pub current_issue: String,
    pub proposed_solution: String,
    pub expected_improvement: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Reflection {
    pub root_causes: Vec<String>,
    pub incorrect_assumptions: Vec<String>,
    pub alternative_approaches: Vec<String>,
    pub optimization_suggestions: Vec<Suggestion>,
    pub lessons_learned: Vec<String>,
    pub should_replan: bool,
}

impl Reflection {
    /// What the next round's planner is told (the reflection summary): causes,
    /// wrong assumptions, suggestions and lessons, one per line.
    pub fn summary(&self, evaluation: Option<&Evaluation>, zh: bool) -> String {
        let mut out = String::new();
        let mut section = |title: &str, items: &mut dyn Iterator<Item = String>| {
            let items: Vec<String> = items.collect();
            if !items.is_empty() {
                out.push_str(title);
                out.push('\n');
                for i in items {
                    out.push_str("- ");
                    out.push_str(i.trim());
                    out.push('\n');
                }
            }
        };
        let l = |zh_: &'static str, en: &'static str| if zh { zh_ } else { en };
        if let Some(e) = evaluation {
            section(
                l("上一轮评估：", "Previous evaluation:"),
                &mut std::iter::once(format!(
                    "overall {:.0}, correctness {:.0}, completeness {:.0}",
                    e.overall_score, e.dimensions.correctness, e.dimensions.completeness
                ))
                .chain(e.failures.iter().cloned()),
            );
        }
        section(
            l("根本原因：", "Root causes:"),
            &mut self.root_causes.iter().cloned(),
        );
        section(
            l("错误假设：", "Incorrect assumptions:"),
            &mut self.incorrect_assumptions.iter().cloned(),
        );
        section(
            l("优化建议：", "Suggestions:"),
            &mut self.optimization_suggestions.iter().map(|s| {
                format!(
                    "{}: {} -> {}",
                    s.aspect, s.current_issue, s.proposed_solution
                )
            }),
        );
        section(
            l("替代方法：", "Alternative approaches:"),
            &mut self.alternative_approaches.iter().cloned(),
        );
        section(
            l("经验教训：", "Lessons learned:"),
            &mut self.lessons_learned.iter().cloned(),
        );
        out.trim_end().to_owned()
    }
}
