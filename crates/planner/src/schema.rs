//! The research plan as the planner asks for it (the research plan format), with its JSON Schema
//! generated from these types so the prompt, `response_format` and the parser agree.
//!
//! These types only describe the output; parsing goes through the tolerant
//! `planwave_plan::parse_plan`, which also accepts what models write instead.

use planwave_plan::PlanFormat;
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

/// A tool-step plan: each step runs one tool, or `llm_call`, directly.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "StepPlan")]
pub struct StepPlan {
    /// What the plan achieves.
    pub goal: String,
    /// Steps in any order; the dependencies decide when each runs.
    pub steps: Vec<PlanStep>,
    /// Values steps may use as `{{vars.NAME}}`.
    #[serde(default)]
    pub global_variables: serde_json::Map<String, serde_json::Value>,
    /// A rough total, in seconds.
    #[serde(default)]
    pub estimated_duration_secs: Option<u32>,
}

/// One tool call.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct PlanStep {
    /// Short, unique: letters, digits and underscores.
    pub id: String,
    pub description: String,
    /// An available tool's name, or `llm_call` (parameter `prompt`) for a direct model call.
    pub tool: String,
    /// The tool's arguments, following its input schema. A string may refer to an earlier
    /// step's result as `{{ID.result}}` (or a field of it, `{{ID.field}}`); that step must be
    /// a (direct or indirect) dependency.
    pub params: serde_json::Map<String, serde_json::Value>,
    /// Ids of the steps whose results this one needs (direct dependencies only).
    pub dependencies: Vec<String>,
    /// What the step should produce.
    pub expected_output: String,
    /// True when the plan can go on without this step's result.
    #[serde(default)]
    pub optional: bool,
    /// Retries after a failed first attempt (0-10).
    #[serde(default)]
    pub retry_count: Option<u32>,
}

/// The JSON Schema of the plan format the planner asks for, as a JSON value.
pub fn plan_schema_for(format: PlanFormat) -> serde_json::Value {
    match format {
        PlanFormat::Research => {
            serde_json::to_value(schemars::schema_for!(ResearchPlan)).unwrap_or_default()
        }
        PlanFormat::Steps => {
            serde_json::to_value(schemars::schema_for!(StepPlan)).unwrap_or_default()
        }
    }
}

/// The research plan's JSON Schema as a JSON value.
pub fn plan_schema() -> serde_json::Value {
    plan_schema_for(PlanFormat::Research)
}

/// The schema of `format` pretty-printed, for prompts.
pub fn plan_schema_text_for(format: PlanFormat) -> String {
    serde_json::to_string_pretty(&plan_schema_for(format)).unwrap_or_default()
}

/// The research plan's schema pretty-printed, for prompts.
pub fn plan_schema_text() -> String {
    plan_schema_text_for(PlanFormat::Research)
}

/// The plan schema sent as `response_format`: at most `max_tasks` tasks (or steps), short
/// texts and lists, so a grammar-enforcing server ends a runaway plan by itself. The prompt
/// keeps the unbounded schema (the bounds are the server's business).
pub fn bounded_plan_schema(format: PlanFormat, max_tasks: usize) -> serde_json::Value {
    let mut schema = plan_schema_for(format);
    let list = match format {
        PlanFormat::Research => "tasks",
        PlanFormat::Steps => "steps",
    };
    if let Some(p) = schema.pointer_mut(&format!("/properties/{list}"))
        && let Some(obj) = p.as_object_mut()
    {
        obj.insert("minItems".into(), 1.into());
        obj.insert("maxItems".into(), (max_tasks.max(1) as u64).into());
    }
    planwave_llm::bound_schema(&mut schema, max_tasks.max(6) as u64, 400);
    schema
}
