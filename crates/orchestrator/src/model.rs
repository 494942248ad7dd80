//! The evaluator's and the reflector's answers (the loop's JSON answers), as validated values.

use planwave_plan::Lang;
use planwave_prompts::{PromptError, ReflectionSummaryVars, Templates};
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
    /// The model's id for this evaluation (such as `eval_xxx`), else `eval_r<round>`.
    #[serde(default)]
    pub evaluation_id: String,
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
    /// The model's id for this reflection (such as `refl_xxx`), else `refl_r<round>`.
    #[serde(default)]
    pub reflection_id: String,
    pub root_causes: Vec<String>,
    pub incorrect_assumptions: Vec<String>,
    pub alternative_approaches: Vec<String>,
    pub optimization_suggestions: Vec<Suggestion>,
    pub lessons_learned: Vec<String>,
    pub should_replan: bool,
}

impl Reflection {
    /// What the next round's planner is told (the reflection summary): causes,
    /// wrong assumptions, suggestions and lessons, one per line, under titles the
    /// `reflection_summary` template gives.
    pub fn summary(
        &self,
        evaluation: Option<&Evaluation>,
        lang: Lang,
        templates: &Templates,
    ) -> Result<String, PromptError> {
        let vars = ReflectionSummaryVars {
            evaluation: evaluation
                .map(|e| {
                    std::iter::once(format!(
                        "overall {:.0}, correctness {:.0}, completeness {:.0}",
                        e.overall_score, e.dimensions.correctness, e.dimensions.completeness
                    ))
                    .chain(e.failures.iter().cloned())
                    .collect()
                })
                .unwrap_or_default(),
            root_causes: self.root_causes.clone(),
            incorrect_assumptions: self.incorrect_assumptions.clone(),
            suggestions: self
                .optimization_suggestions
                .iter()
                .map(|s| {
                    format!(
                        "{}: {} -> {}",
                        s.aspect, s.current_issue, s.proposed_solution
                    )
                })
                .collect(),
            alternative_approaches: self.alternative_approaches.clone(),
            lessons_learned: self.lessons_learned.clone(),
        };
        templates.reflection_summary(lang, &vars)
    }
}

/// A step-level reflection: why the failed tasks failed, and the recovery the reflector
/// recommends.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepReflection {
    pub analysis: String,
    pub strategy: crate::policy::Strategy,
    #[serde(default)]
    pub reason: String,
}
