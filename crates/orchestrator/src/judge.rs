//! Tolerant parsing and strict validation of evaluator and reflector answers.
//!
//! Tolerant: the JSON may sit in prose or a fence (the plan crate's extraction), scores may
//! be numeric strings or carry a `%`, booleans may be `"true"`/`"yes"`, a single string may
//! stand for a list of one. Strict: every score is a finite number from 0 to 100, every
//! required field is present and of the right type. Every problem is collected and named
//! by its field, so a repair request can list them all.

use serde_json::{Map, Value};

use crate::model::{Dimensions, Evaluation, Reflection, StepReflection, Suggestion};
use crate::policy::Strategy;

type Problems = Vec<String>;

fn root(raw: &str) -> Result<Map<String, Value>, Problems> {
    if raw.trim().is_empty() {
        return Err(vec![
            "the answer was empty; expected one JSON object".into(),
        ]);
    }
    match planwave_plan::extract_json(raw) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(vec![format!(
            "expected a JSON object, got {}",
            kind(&other)
        )]),
        Err(e) => Err(vec![e.to_string()]),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn show(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 40 {
        format!("{}…", s.chars().take(40).collect::<String>())
    } else {
        s
    }
}

fn score(m: &Map<String, Value>, key: &str, path: &str, p: &mut Problems) -> f64 {
    let Some(v) = m.get(key) else {
        p.push(format!("{path}: missing; expected a score from 0 to 100"));
        return 0.0;
    };
    let n = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().trim_end_matches('%').trim().parse::<f64>().ok(),
        _ => None,
    };
    match n {
        Some(x) if x.is_finite() && (0.0..=100.0).contains(&x) => x,
        Some(x) => {
            p.push(format!("{path}: {x} is not between 0 and 100"));
            0.0
        }
        None => {
            p.push(format!("{path}: {} is not a score from 0 to 100", show(v)));
            0.0
        }
    }
}

fn boolean(m: &Map<String, Value>, key: &str, p: &mut Problems) -> bool {
    match m.get(key) {
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" => true,
            "false" | "no" => false,
            _ => {
                p.push(format!("{key}: \"{s}\" is not true or false"));
                false
            }
        },
        Some(v) => {
            p.push(format!("{key}: {} is not true or false", show(v)));
            false
        }
        None => {
            p.push(format!("{key}: missing; expected true or false"));
            false
        }
    }
}

/// Optional list of strings: missing or null is empty, one string is a list of one.
fn strings(m: &Map<String, Value>, key: &str, p: &mut Problems) -> Vec<String> {
    match m.get(key) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => out.push(s.clone()),
                    Value::Number(n) => out.push(n.to_string()),
                    other => p.push(format!(
                        "{key}[{i}]: expected a string, got {}",
                        kind(other)
                    )),
                }
            }
            out
        }
        Some(v) => {
            p.push(format!(
                "{key}: expected a list of strings, got {}",
                kind(v)
            ));
            Vec::new()
        }
    }
}

fn text(m: &Map<String, Value>, key: &str, path: &str, p: &mut Problems) -> String {
    match m.get(key) {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => {
            p.push(format!("{path}: expected a string, got {}", kind(v)));
            String::new()
        }
    }
}

/// An id the model gave (a string or a number); empty when it gave none, for the loop to
/// fill in. Never a problem: an answer need not carry one.
fn id(m: &Map<String, Value>, key: &str) -> String {
    match m.get(key) {
        Some(Value::String(s)) => s.trim().to_owned(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// An evaluation, or every problem with the answer.
pub fn parse_evaluation(raw: &str) -> Result<Evaluation, Problems> {
    let m = root(raw)?;
    let mut p = Vec::new();
    let overall_score = score(&m, "overall_score", "overall_score", &mut p);
    let is_successful = boolean(&m, "is_successful", &mut p);
    let dimensions = match m.get("dimensions") {
        Some(Value::Object(d)) => Dimensions {
            completeness: score(d, "completeness", "dimensions.completeness", &mut p),
            correctness: score(d, "correctness", "dimensions.correctness", &mut p),
            efficiency: score(d, "efficiency", "dimensions.efficiency", &mut p),
            reliability: score(d, "reliability", "dimensions.reliability", &mut p),
        },
        Some(v) => {
            p.push(format!("dimensions: expected an object, got {}", kind(v)));
            Dimensions::default()
        }
        None => {
            p.push(
                "dimensions: missing; expected {completeness, correctness, efficiency, reliability}"
                    .into(),
            );
            Dimensions::default()
        }
    };
    let e = Evaluation {
        evaluation_id: id(&m, "evaluation_id"),
        overall_score,
        is_successful,
        dimensions,
        successes: strings(&m, "successes", &mut p),
        failures: strings(&m, "failures", &mut p),
        improvement_suggestions: strings(&m, "improvement_suggestions", &mut p),
    };
    if p.is_empty() { Ok(e) } else { Err(p) }
}

/// A reflection, or every problem with the answer.
pub fn parse_reflection(raw: &str) -> Result<Reflection, Problems> {
    let m = root(raw)?;
    let mut p = Vec::new();
    let mut suggestions = Vec::new();
    match m.get("optimization_suggestions") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let path = |f: &str| format!("optimization_suggestions[{i}].{f}");
                match item {
                    Value::Object(s) => suggestions.push(Suggestion {
                        aspect: text(s, "aspect", &path("aspect"), &mut p),
                        current_issue: text(s, "current_issue", &path("current_issue"), &mut p),
                        proposed_solution: text(
                            s,
                            "proposed_solution",
                            &path("proposed_solution"),
                            &mut p,
                        ),
                        expected_improvement: text(
                            s,
                            "expected_improvement",
                            &path("expected_improvement"),
                            &mut p,
                        ),
                    }),
                    Value::String(s) => suggestions.push(Suggestion {
                        proposed_solution: s.clone(),
                        ..Suggestion::default()
                    }),
                    other => p.push(format!(
                        "optimization_suggestions[{i}]: expected an object, got {}",
                        kind(other)
                    )),
                }
            }
        }
        Some(v) => p.push(format!(
            "optimization_suggestions: expected a list, got {}",
            kind(v)
        )),
    }
    let r = Reflection {
        reflection_id: id(&m, "reflection_id"),
        root_causes: strings(&m, "root_causes", &mut p),
        incorrect_assumptions: strings(&m, "incorrect_assumptions", &mut p),
        alternative_approaches: strings(&m, "alternative_approaches", &mut p),
        optimization_suggestions: suggestions,
        lessons_learned: strings(&m, "lessons_learned", &mut p),
        should_replan: boolean(&m, "should_replan", &mut p),
    };
    if p.is_empty() { Ok(r) } else { Err(p) }
}

/// A step-level reflection, or every problem with the answer. `allowed` are the strategies
/// the reflector was offered; another one is a problem, so the repair can say which.
pub fn parse_step_reflection(raw: &str, allowed: &[Strategy]) -> Result<StepReflection, Problems> {
    let m = root(raw)?;
    let mut p = Vec::new();
    let analysis = text(&m, "analysis", "analysis", &mut p);
    let names: Vec<&str> = allowed.iter().map(|s| s.as_str()).collect();
    let strategy = match m.get("strategy") {
        Some(Value::String(s)) => {
            let s = s.trim();
            let found = allowed.iter().copied().find(|a| a.as_str() == s);
            if found.is_none() {
                p.push(format!(
                    "strategy: {s:?} is not one of {}",
                    names.join(", ")
                ));
            }
            found
        }
        Some(v) => {
            p.push(format!("strategy: expected a string, got {}", kind(v)));
            None
        }
        None => {
            p.push(format!(
                "strategy: missing; expected one of {}",
                names.join(", ")
            ));
            None
        }
    };
    let reason = match m.get("reason") {
        Some(Value::String(s)) => s.clone(),
        _ => String::new(),
    };
    match strategy {
        Some(strategy) if p.is_empty() => Ok(StepReflection {
            analysis,
            strategy,
            reason,
        }),
        _ => Err(p),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evaluation_in_prose_with_string_scores_is_accepted() {
        let raw = "Here it is:\n```json\n{\"overall_score\": \"85%\", \"is_successful\": \"yes\", \"dimensions\": {\"completeness\": 90, \"correctness\": 95.5, \"efficiency\": \"80\", \"reliability\": 85}, \"successes\": \"one\", \"failures\": []}\n```\nDone.";
        let e = parse_evaluation(raw).expect("valid");
        assert_eq!(e.overall_score, 85.0);
        assert!(e.is_successful);
        assert_eq!(e.dimensions.correctness, 95.5);
        assert_eq!(e.successes, ["one"]);
        assert!(e.improvement_suggestions.is_empty());
    }

    #[test]
    fn evaluation_problems_are_all_listed_by_field() {
        let raw = r#"{"overall_score": 150, "is_successful": "maybe", "dimensions": {"completeness": 80, "correctness": "high"}, "successes": [1, {"x": 2}]}"#;
        let p = parse_evaluation(raw).expect_err("invalid");
        assert_eq!(
            p,
            [
                "overall_score: 150 is not between 0 and 100",
                "is_successful: \"maybe\" is not true or false",
                "dimensions.correctness: \"high\" is not a score from 0 to 100",
                "dimensions.efficiency: missing; expected a score from 0 to 100",
                "dimensions.reliability: missing; expected a score from 0 to 100",
                "successes[1]: expected a string, got an object",
            ]
        );
        assert_eq!(
            parse_evaluation("I think it went well.")
                .expect_err("no json")
                .len(),
            1
        );
        assert_eq!(
            parse_evaluation("[1, 2]").expect_err("array"),
            ["no JSON object found in the input"]
        );
    }

    #[test]
    fn reflection_requires_should_replan_and_typed_suggestions() {
        let ok = parse_reflection(
            r#"{"root_causes": ["a"], "optimization_suggestions": [{"aspect": "plan", "current_issue": "i", "proposed_solution": "s", "expected_improvement": "e"}, "narrow it"], "should_replan": false}"#,
        )
        .expect("valid");
        assert!(!ok.should_replan);
        assert_eq!(ok.optimization_suggestions.len(), 2);
        assert_eq!(
            ok.optimization_suggestions[1].proposed_solution,
            "narrow it"
        );
        let p = parse_reflection(
            r#"{"root_causes": "thin data", "should_replan": "perhaps", "optimization_suggestions": [{"aspect": 3}]}"#,
        )
        .expect_err("invalid");
        assert_eq!(
            p,
            [
                "optimization_suggestions[0].aspect: expected a string, got a number",
                "should_replan: \"perhaps\" is not true or false",
            ]
        );
    }
}
