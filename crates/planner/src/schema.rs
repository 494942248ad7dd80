//! The research plan as the planner asks for it (the research plan format), with its JSON Schema
//! generated from these types so the prompt, `response_format` and the parser agree.
//!
//! These types only describe the output; parsing goes through the tolerant
//! `planwave_plan::parse_plan`, which also accepts what models write instead.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A research plan: a flat list of chapter-level tasks with their direct dependencies.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "ResearchPlan")]
pub struct ResearchPlan {
    /// The kind of research.
    pub research_type: ResearchType,
    /// What the research is about, as a report title.
    pub topic: String,
    /// What the report must answer (2-4 items).
    pub objectives: Vec<String>,
    /// Chapter-level tasks; ids are consecutive from 1.
    pub tasks: Vec<PlanTask>,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResearchType {
    Company,
    Industry,
    Strategy,
    Macro,
    Quantitative,
}

/// One chapter of the report.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PlanTask {
    /// Positive integer, unique, consecutive from 1.
    #[schemars(range(min = 1))]
    pub id: u32,
    /// A chapter-level analysis, not a single lookup.
    pub description: String,
    /// Ids of the tasks whose findings this one directly needs (direct dependencies only).
    pub dependencies: Vec<u32>,
    pub hints: PlanHints,
}

/// Guidance for the subagent, not instructions.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PlanHints {
    /// Kinds of data needed.
    pub data_needs: Vec<String>,
    /// Questions the section must answer.
    pub key_questions: Vec<String>,
    /// Names of available tools that may help (empty when none are available).
    pub suggested_tools: Vec<String>,
}

/// The plan's JSON Schema as a JSON value.
pub fn plan_schema() -> serde_json::Value {
    serde_json::to_value(schemars::schema_for!(ResearchPlan)).unwrap_or_default()
}

/// The schema pretty-printed, for prompts.
pub fn plan_schema_text() -> String {
    serde_json::to_string_pretty(&plan_schema()).unwrap_or_default()
}
