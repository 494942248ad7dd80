//! Tolerant parsing of model output into a [`PlanSpec`].
//!
//! Two steps, each in its own module: [`extract`] finds the one JSON value in messy text
//! (BOM, prose, ```json fences), and [`normalize`] maps either plan format's shape onto
//! [`PlanSpec`]. Neither checks the graph: that is validation's job.

mod extract;
mod keys;
mod normalize;
pub mod stream;

use crate::model::PlanSpec;

/// Why raw text could not become a [`PlanSpec`]. Every variant's message is meant for the user
/// and for a repair prompt sent back to the model.
///
/// Lines are 1-based; columns count characters (not bytes) from the start of the line, so a
/// line of Chinese prose gives the column an editor shows. Both refer to the text as given,
/// except that a leading BOM is not counted (editors do not show it either).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParseError {
    #[error("input is not valid UTF-8 (invalid byte at offset {offset})")]
    NotUtf8 { offset: usize },
    #[error("no JSON object found in the input")]
    NoJson,
    #[error("JSON is truncated at line {line} column {column}: {msg}")]
    Truncated {
        line: usize,
        column: usize,
        msg: String,
    },
    #[error("JSON is nested too deeply at line {line} column {column}")]
    TooDeep { line: usize, column: usize },
    #[error("invalid JSON at line {line} column {column}: {msg}")]
    Syntax {
        line: usize,
        column: usize,
        msg: String,
    },
    /// The JSON parsed but is not a plan; one message per problem.
    #[error("{}", .0.join("\n"))]
    Shape(Vec<String>),
}

/// Parses raw bytes (BOM, prose, ```json fences allowed) into a plan.
pub fn parse_plan(bytes: &[u8]) -> Result<PlanSpec, ParseError> {
    let text = std::str::from_utf8(bytes).map_err(|e| ParseError::NotUtf8 {
        offset: e.valid_up_to(),
    })?;
    parse_plan_str(text)
}

/// [`parse_plan`] for text already known to be UTF-8.
pub fn parse_plan_str(text: &str) -> Result<PlanSpec, ParseError> {
    let value = extract_json(text)?;
    let dups = keys::duplicate_top_level_keys(text);
    if !dups.is_empty() {
        return Err(ParseError::Shape(
            dups.iter()
                .map(|k| format!("the plan has \"{k}\" more than once; give it once"))
                .collect(),
        ));
    }
    plan_from_value(value)
}

/// Finds and parses the JSON object in messy model output.
///
/// A ```json fence wins when it holds JSON; otherwise every `{` (and `[`) is a candidate
/// start, and the largest value found is returned, so a small example object in the prose
/// does not shadow the plan. Text after the value is ignored.
pub fn extract_json(text: &str) -> Result<serde_json::Value, ParseError> {
    extract::extract(text)
}

/// Normalizes an already-parsed JSON value (either seed format) into a plan.
///
/// Unknown fields are ignored and common alternate names are accepted (`goal` for `topic`,
/// `step_id` for `id`, `depends_on` for `dependencies`, `tool_name` for `tool`, ...); every
/// shape problem is collected into [`ParseError::Shape`].
pub fn plan_from_value(value: serde_json::Value) -> Result<PlanSpec, ParseError> {
    normalize::plan_from_value(value)
}
