//! Tolerant parsing of model output into a [`PlanSpec`].
//!
//! Two steps, each in its own module: [`extract`] finds the one JSON value in messy text
//! (BOM, prose, ```json fences), and [`normalize`] maps either plan format's shape onto
//! [`PlanSpec`]. Neither checks the graph: that is validation's job.

mod extract;
mod keys;
mod normalize;
pub mod stream;
mod top;

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
    if let Some(top) = top::read_plain(text) {
        let dups = keys::duplicate_keys(text);
        if !dups.is_empty() {
            return Err(duplicates(&dups));
        }
        return normalize::plan_from_top(top);
    }
    let value = extract_json(text)?;
    let dups = keys::duplicate_keys(text);
    if !dups.is_empty() {
        return Err(duplicates(&dups));
    }
    plan_from_value(value)
}

fn duplicates(dups: &[keys::Duplicate]) -> ParseError {
    ParseError::Shape(
        dups.iter()
            .map(|d| match d.place.as_str() {
                "" => format!("the plan has \"{}\" more than once; give it once", d.key),
                place => format!(
                    "the plan has \"{}\" more than once in {place}; give it once",
                    d.key
                ),
            })
            .collect(),
    )
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The `Value` path alone, as `parse_plan_str` was before plain plan files were read
    /// directly: the two must agree on every text.
    fn through_value(text: &str) -> Result<PlanSpec, ParseError> {
        let value = extract_json(text)?;
        let dups = keys::duplicate_keys(text);
        if !dups.is_empty() {
            return Err(duplicates(&dups));
        }
        plan_from_value(value)
    }

    #[test]
    fn direct_reading_agrees_with_the_value_path() {
        let texts = [
            r#"{"topic":"t","tasks":[{"id":1,"description":"a"},{"id":2,"description":"b","dependencies":[1]}]}"#,
            "\u{FEFF}  \n{\"tasks\":[{\"id\":\"x\",\"description\":\"d\",\"extra\":{\"deep\":[1]}}]}\n",
            r#"{"tasks":[{"id":1,"description":"a","id":null}]}"#,
            r#"{"tasks":[{"id":1,"description":"a","description":"b","deps":[1],"depends_on":2}]}"#,
            r#"{"tasks":[{"\u0069d":1,"description":"escaped key"}]}"#,
            r#"{"tasks":[1,"x",null,[],{"id":2,"description":"d"}]}"#,
            r#"{"tasks":{"id":1}}"#,
            r#"{"tasks":null,"steps":[{"step_id":1,"id":9,"name":"n","tool":"t","params":{"a":"{{1.result}}"}}]}"#,
            r#"{"steps":[{"id":1,"task_id":3,"description":"d","retryCount":2,"optional":true}]}"#,
            r#"{"plan":{"goal":"g","tasks":[{"id":1,"description":"wrapped"}],"tasks":[{"id":2,"description":"last"}]}}"#,
            r#"{"plan":{"topic":"no list"},"topic":"outer"}"#,
            r#"{"plan":[1],"topic":"t"}"#,
            r#"{"tasks":[{"id":1,"description":"a"}],"plan":{"tasks":[]}}"#,
            r#"{"tasks":[],"topic":"t","tasks":[{"id":1,"description":"a"}],"topic":"u"}"#,
            r#"{"tasks":[{"id":1,"description":"a","hints":{"data_needs":"x","key_questions":[1]}}],"metadata":{"k":1},"planId":7}"#,
            r#"{"tasks":[{"id":1.5,"description":"a"},{"id":99999999999999999999,"description":"b"}]}"#,
            r#"{"tasks":[{"id":1,"description":"a"}]} and then {"tasks":[{"id":2,"description":"bigger one"}]}"#,
            r#"{"tasks":[{"id":1,"description":"a"}]} trailing prose"#,
            "{\"tasks\":[{\"id\":1,\"description\":\"a ``` b\"}]}",
            "```json\n{\"tasks\":[{\"id\":1,\"description\":\"fenced\"}]}\n```",
            r#"Plan: {"tasks":[{"id":1,"description":"prose first"}]}"#,
            r#"{"tasks":[{"id":1,"description":"a"}"#,
            r#"{"tasks":[{"id":1,"description":"a"}],}"#,
            r#"{"objectives":"one","research_type":5,"tasks":[]}"#,
        ];
        for text in texts {
            assert_eq!(parse_plan_str(text), through_value(text), "{text}");
        }
    }

    #[test]
    fn plain_files_are_read_directly_and_others_are_not() {
        assert!(top::read_plain(r#" {"tasks":[]} "#).is_some());
        assert!(top::read_plain(r#"{"tasks":[]} {"#).is_none());
        assert!(top::read_plain(r#"x {"tasks":[]}"#).is_none());
        assert!(top::read_plain("{\"tasks\":[]}\n```").is_none());
        assert!(top::read_plain(r#"{"tasks":[}"#).is_none());
    }
}
