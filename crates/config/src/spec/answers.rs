//! `--answers FILE` (a job line's or a request's `answers`): the user's answers to the
//! planner's clarifying questions, read and bounded where they enter, the same for a file,
//! a job line and a request body.

use std::path::Path;

use planwave_planner::Clarification;
use planwave_planner::questions::answer_problems;
use serde::{Deserialize, Serialize};

/// The largest `--answers` file read.
pub const MAX_ANSWERS_FILE_BYTES: u64 = 64 * 1024;

/// The answers, checked: at most ten, none empty, none too long.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Answers(pub Vec<Clarification>);

impl Answers {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The answers, or every problem with them joined in one line.
    pub fn checked(list: Vec<Clarification>) -> Result<Answers, String> {
        let problems = answer_problems(&list);
        if problems.is_empty() {
            Ok(Answers(list))
        } else {
            Err(problems.join("; "))
        }
    }
}

impl<'de> Deserialize<'de> for Answers {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let list = Vec::<Clarification>::deserialize(d)?;
        Answers::checked(list).map_err(serde::de::Error::custom)
    }
}

/// `--answers FILE`: a JSON list (answers as strings, or `{"question", "answer"}` objects),
/// or plain text with one answer per non-empty line, in the order of the questions.
pub fn read_answers_file(path: &str) -> Result<Answers, String> {
    let p = Path::new(path);
    let len = std::fs::metadata(p)
        .map_err(|e| format!("cannot read {path}: {e}"))?
        .len();
    if len > MAX_ANSWERS_FILE_BYTES {
        return Err(format!(
            "{path} has {len} bytes; an answers file has at most {MAX_ANSWERS_FILE_BYTES}"
        ));
    }
    let text = std::fs::read_to_string(p).map_err(|e| format!("cannot read {path}: {e}"))?;
    let list: Vec<Clarification> = if text.trim_start().starts_with('[') {
        serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?
    } else {
        text.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(|l| Clarification {
                question: None,
                answer: l.to_owned(),
            })
            .collect()
    };
    if list.is_empty() {
        return Err(format!("{path}: no answers"));
    }
    Answers::checked(list).map_err(|e| format!("{path}: {e}"))
}
