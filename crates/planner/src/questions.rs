//! Clarifying questions: the planner's other answer. When a goal is too vague to plan (no
//! subject, or several readings), the model may answer `{"questions": [...]}` (one to three)
//! instead of a plan; the job then asks the user and plans again with the answers
//! ([`Clarification`]). The answer's schema offers both forms ([`answer_schema_for`]), so
//! structured output covers the questions too.

use planwave_plan::PlanFormat;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The most questions one answer may ask.
pub const MAX_QUESTIONS: usize = 3;
/// The longest question, in characters.
pub const MAX_QUESTION_CHARS: usize = 300;
pub use planwave_plan::clarification::{
    Clarification, MAX_ANSWER_CHARS, MAX_ANSWERS, answer_problems,
};

/// What the planner asks instead of a plan when the goal is too vague to plan.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[schemars(title = "ClarifyingQuestions")]
pub struct ClarifyingQuestions {
    /// One to three short questions whose answers would let the plan be made.
    #[schemars(length(min = 1, max = 3))]
    pub questions: Vec<String>,
}

/// The schema the planner's answer follows: the plan of `format`, or (`ask`, research plans
/// only) either the plan or [`ClarifyingQuestions`]. The plan's definitions move to the
/// root so its `$ref`s still resolve inside the `anyOf`.
pub fn answer_schema_for(format: PlanFormat, ask: bool) -> serde_json::Value {
    with_questions(crate::schema::plan_schema_for(format), format, ask)
}

/// `plan` (a plan schema, bounded or not), or, when the model may ask, `anyOf` it and the
/// questions form.
pub fn with_questions(
    mut plan: serde_json::Value,
    format: PlanFormat,
    ask: bool,
) -> serde_json::Value {
    if !ask || format != PlanFormat::Research {
        return plan;
    }
    let questions =
        serde_json::to_value(schemars::schema_for!(ClarifyingQuestions)).unwrap_or_default();
    let mut root = serde_json::Map::new();
    if let Some(obj) = plan.as_object_mut() {
        for key in ["$schema", "$defs", "definitions"] {
            if let Some(v) = obj.remove(key) {
                root.insert(key.into(), v);
            }
        }
    }
    let mut questions = questions;
    if let Some(obj) = questions.as_object_mut() {
        obj.remove("$schema");
    }
    root.insert("title".into(), "PlanOrQuestions".into());
    root.insert("anyOf".into(), serde_json::json!([plan, questions]));
    serde_json::Value::Object(root)
}

/// The questions of an answer that asks them (an object with `questions` and no `tasks` or
/// `steps`): `None` for any other answer (a plan, or text to judge as one); else the
/// questions, or every problem with them.
pub fn read_questions(raw: &str) -> Option<Result<Vec<String>, Vec<String>>> {
    let obj = json_object(raw)?;
    let asked = obj.get("questions")?;
    if obj.contains_key("tasks") || obj.contains_key("steps") {
        return None;
    }
    let Some(list) = asked.as_array() else {
        return Some(Err(vec!["questions: expected a list of strings".into()]));
    };
    let mut problems = Vec::new();
    if list.is_empty() || list.len() > MAX_QUESTIONS {
        problems.push(format!(
            "questions: ask one to {MAX_QUESTIONS} questions (got {})",
            list.len()
        ));
    }
    let mut questions = Vec::new();
    for (i, q) in list.iter().enumerate() {
        match q.as_str().map(str::trim) {
            None => problems.push(format!("questions[{i}]: expected a string")),
            Some("") => problems.push(format!("questions[{i}]: empty")),
            // A small model under a grammar fills the form with "..." for a clear goal: a
            // question says something (at least three letters, of any script).
            Some(q) if q.chars().filter(|c| c.is_alphabetic()).count() < 3 => problems.push(
                format!("questions[{i}]: not a question a person could answer: {q:?}"),
            ),
            Some(q) if q.chars().count() > MAX_QUESTION_CHARS => problems.push(format!(
                "questions[{i}]: longer than {MAX_QUESTION_CHARS} characters"
            )),
            Some(q) => questions.push(q.to_owned()),
        }
    }
    Some(if problems.is_empty() {
        Ok(questions)
    } else {
        Err(problems)
    })
}

/// The answer's JSON object: the whole text, or what lies between its first `{` and last
/// `}` (a model may wrap it in a code fence or a sentence).
fn json_object(raw: &str) -> Option<serde_json::Map<String, serde_json::Value>> {
    let t = raw.trim();
    if let Ok(serde_json::Value::Object(o)) = serde_json::from_str(t) {
        return Some(o);
    }
    let (start, end) = (t.find('{')?, t.rfind('}')?);
    match serde_json::from_str(t.get(start..=end)?) {
        Ok(serde_json::Value::Object(o)) => Some(o),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_read_and_bounded() {
        assert_eq!(
            read_questions("```json\n{\"questions\": [\"Which company?\"]}\n```"),
            Some(Ok(vec!["Which company?".to_owned()]))
        );
        assert_eq!(
            read_questions(r#"{"questions": ["Who a?", "Who b?", "Who c?", "Who d?"]}"#),
            Some(Err(vec![
                "questions: ask one to 3 questions (got 4)".into()
            ]))
        );
        // What a small model wrote under the grammar for a clear goal.
        assert_eq!(
            read_questions(r#"{"questions": ["...", "Which market, 中国?"]}"#),
            Some(Err(vec![
                "questions[0]: not a question a person could answer: \"...\"".into()
            ]))
        );
        assert_eq!(
            read_questions(r#"{"questions": [" ", 3]}"#),
            Some(Err(vec![
                "questions[0]: empty".into(),
                "questions[1]: expected a string".into()
            ]))
        );
        assert_eq!(read_questions(r#"{"topic": "x", "tasks": []}"#), None);
        assert_eq!(read_questions("not json"), None);
    }

    #[test]
    fn answers_read_both_forms_and_refuse_unknown_keys() {
        let a: Vec<Clarification> =
            serde_json::from_str(r#"["Tesla", {"question": "Which?", "answer": "BYD"}]"#).unwrap();
        assert_eq!(a[0].answer, "Tesla");
        assert_eq!(a[1].question.as_deref(), Some("Which?"));
        let e = serde_json::from_str::<Vec<Clarification>>(r#"[{"answer": "x", "extra": 1}]"#)
            .unwrap_err();
        assert!(e.to_string().contains("unknown field `extra`"), "{e}");
    }

    #[test]
    fn the_answer_schema_offers_questions_only_when_asking_is_allowed() {
        let both = answer_schema_for(PlanFormat::Research, true);
        assert_eq!(both["anyOf"].as_array().map(Vec::len), Some(2));
        assert!(both["$defs"].is_object(), "{both}");
        let plan = answer_schema_for(PlanFormat::Research, false);
        assert!(plan.get("anyOf").is_none());
        assert!(
            answer_schema_for(PlanFormat::Steps, true)
                .get("anyOf")
                .is_none()
        );
    }
}
