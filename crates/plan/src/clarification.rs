//! The user's answers to the planner's clarifying questions, as a job carries them (a
//! command's `--answers`, a batch line's or a request's `answers`): plain data, bounded
//! where it enters. The planner (`planwave_planner::questions`) asks the questions.

use serde::{Deserialize, Serialize};

/// The most answers a job may carry.
pub const MAX_ANSWERS: usize = 10;
/// The longest answer (or the question recorded with it), in characters.
pub const MAX_ANSWER_CHARS: usize = 2000;

/// One answer the user gave, with the question it answers when known. In JSON either the
/// answer alone (`"Tesla"`) or `{"question": "...", "answer": "..."}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clarification {
    pub question: Option<String>,
    pub answer: String,
}

/// Written back in the form it was read: the answer alone when no question goes with it.
impl Serialize for Clarification {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Pair<'a> {
            question: &'a str,
            answer: &'a str,
        }
        match &self.question {
            None => s.serialize_str(&self.answer),
            Some(question) => Pair {
                question,
                answer: &self.answer,
            }
            .serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for Clarification {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Form {
            Answer(String),
            Pair {
                #[serde(default)]
                question: Option<String>,
                answer: String,
            },
        }
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Strict {
            #[serde(default)]
            question: Option<String>,
            answer: String,
        }
        // The untagged form tells which shape; the strict one refuses unknown keys.
        let v = serde_json::Value::deserialize(d)?;
        if v.is_object() {
            let s: Strict = serde_json::from_value(v).map_err(serde::de::Error::custom)?;
            return Ok(Clarification {
                question: s.question,
                answer: s.answer,
            });
        }
        match serde_json::from_value::<Form>(v) {
            Ok(Form::Answer(answer)) => Ok(Clarification {
                question: None,
                answer,
            }),
            Ok(Form::Pair { question, answer }) => Ok(Clarification { question, answer }),
            Err(_) => Err(serde::de::Error::custom(
                "an answer is a string or {\"question\": ..., \"answer\": ...}",
            )),
        }
    }
}

/// Every problem with a job's answers (`answers[K]: ...`), bounded as input from outside.
pub fn answer_problems(answers: &[Clarification]) -> Vec<String> {
    let mut problems = Vec::new();
    if answers.len() > MAX_ANSWERS {
        problems.push(format!(
            "at most {MAX_ANSWERS} answers (got {})",
            answers.len()
        ));
    }
    for (i, a) in answers.iter().enumerate() {
        if a.answer.trim().is_empty() {
            problems.push(format!("answers[{i}]: the answer is empty"));
        }
        for (what, text) in [
            ("answer", Some(&a.answer)),
            ("question", a.question.as_ref()),
        ] {
            if let Some(t) = text
                && t.chars().count() > MAX_ANSWER_CHARS
            {
                problems.push(format!(
                    "answers[{i}]: the {what} has more than {MAX_ANSWER_CHARS} characters"
                ));
            }
        }
    }
    problems
}
