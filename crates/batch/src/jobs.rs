//! Parsing a job file: one JSON object per line.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use serde_json::{Map, Value};

/// What a job starts from.
#[derive(Debug, Clone, PartialEq)]
pub enum JobSource {
    /// Plan the goal with the model, then run the plan.
    Goal(String),
    /// A plan given inline (any form `planwave run` accepts, as JSON).
    Plan(Value),
    /// A plan file, relative to the job file's directory.
    PlanFile(PathBuf),
    /// A plan template file (relative like a plan file) rendered with the job's `vars`.
    Template {
        path: PathBuf,
        vars: BTreeMap<String, Value>,
    },
}

impl JobSource {
    pub fn kind(&self) -> &'static str {
        match self {
            JobSource::Goal(_) => "goal",
            JobSource::Plan(_) => "plan",
            JobSource::PlanFile(_) => "plan_file",
            JobSource::Template { .. } => "template",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: String,
    /// 1-based line number in the job file.
    pub line: usize,
    pub source: JobSource,
    /// The job's metadata: shown to its planner, referable as `{{meta.KEY}}`.
    pub metadata: BTreeMap<String, String>,
    /// A goal job's answers to the planner's clarifying questions (without them a vague
    /// goal ends `needs_input`).
    pub answers: Vec<planwave_plan::clarification::Clarification>,
}

/// A line that is not a job; the batch reports it and goes on.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BadLine {
    pub line: usize,
    pub error: String,
}

impl std::fmt::Display for BadLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.error)
    }
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobFile {
    pub jobs: Vec<Job>,
    pub bad: Vec<BadLine>,
}

const FIELDS: &str = "id, goal, plan, plan_file, template, vars, metadata, answers";
/// The fields that say where a job's plan comes from: exactly one per line.
const SOURCES: [&str; 4] = ["goal", "plan", "plan_file", "template"];

/// Parses every line; blank lines are skipped. Never fails as a whole and never panics.
pub fn parse_jobs(text: impl AsRef<[u8]>) -> JobFile {
    let mut out = JobFile::default();
    let mut first_line: HashMap<String, usize> = HashMap::new();
    for (i, raw) in text.as_ref().split(|&b| b == b'\n').enumerate() {
        let line = i + 1;
        let raw = match std::str::from_utf8(raw) {
            Ok(s) => s.trim(),
            Err(e) => {
                out.bad.push(BadLine {
                    line,
                    error: format!("not valid UTF-8 (at byte {})", e.valid_up_to() + 1),
                });
                continue;
            }
        };
        if raw.is_empty() {
            continue;
        }
        match parse_line(raw) {
            Err(error) => out.bad.push(BadLine { line, error }),
            Ok((id, source, metadata, answers)) => {
                if let Some(first) = first_line.get(&id) {
                    out.bad.push(BadLine {
                        line,
                        error: format!("duplicate job id {id:?} (first on line {first})"),
                    });
                    continue;
                }
                first_line.insert(id.clone(), line);
                out.jobs.push(Job {
                    id,
                    line,
                    source,
                    metadata,
                    answers,
                });
            }
        }
    }
    out
}

type Line = (
    String,
    JobSource,
    BTreeMap<String, String>,
    Vec<planwave_plan::clarification::Clarification>,
);

fn parse_line(raw: &str) -> Result<Line, String> {
    let value: Value = serde_json::from_str(raw).map_err(|e| {
        // serde_json says "at line 1 column N": within one line only the column helps.
        let msg = e.to_string();
        let msg = msg.split(" at line ").next().unwrap_or(&msg).to_owned();
        format!("invalid JSON at column {}: {msg}", e.column())
    })?;
    let Value::Object(obj) = value else {
        return Err(format!(
            "expected a JSON object with {FIELDS}, found {}",
            json_kind(&value)
        ));
    };
    let mut unknown: Vec<&str> = obj
        .keys()
        .map(String::as_str)
        .filter(|k| !SOURCES.contains(k) && !matches!(*k, "id" | "vars" | "metadata" | "answers"))
        .collect();
    unknown.sort_unstable();
    if let Some(k) = unknown.first() {
        return Err(format!("unknown field {k:?} (expected {FIELDS})"));
    }
    let id = job_id(&obj)?;
    let sources: Vec<&str> = SOURCES
        .into_iter()
        .filter(|k| obj.contains_key(*k))
        .collect();
    let source = match sources.as_slice() {
        [] => {
            return Err(format!(
                "job {id:?}: needs one of goal, plan, plan_file or template"
            ));
        }
        [one] => *one,
        many => {
            return Err(format!(
                "job {id:?}: has {} (give exactly one of goal, plan, plan_file or template)",
                many.join(" and ")
            ));
        }
    };
    if source != "template" && obj.contains_key("vars") {
        return Err(format!(
            "job {id:?}: vars go with a template (this job has {source})"
        ));
    }
    let v = &obj[source];
    let source = match (source, v) {
        ("goal", Value::String(g)) if !g.trim().is_empty() => JobSource::Goal(g.clone()),
        ("goal", Value::String(_)) => return Err(format!("job {id:?}: the goal is empty")),
        ("plan", Value::Object(_)) => JobSource::Plan(v.clone()),
        ("plan_file", Value::String(p)) if !p.trim().is_empty() => {
            JobSource::PlanFile(PathBuf::from(p))
        }
        ("template", Value::String(p)) if !p.trim().is_empty() => JobSource::Template {
            path: PathBuf::from(p),
            vars: match obj.get("vars") {
                None | Some(Value::Null) => BTreeMap::new(),
                Some(v) => template_vars(v).map_err(|e| format!("job {id:?}: vars {e}"))?,
            },
        },
        (field, v) => {
            let want = match field {
                "plan" => "a JSON object",
                _ => "a non-empty string",
            };
            return Err(format!(
                "job {id:?}: {field} must be {want}, found {}",
                json_kind(v)
            ));
        }
    };
    let metadata = match obj.get("metadata") {
        None | Some(Value::Null) => BTreeMap::new(),
        Some(v) => metadata(v).map_err(|e| format!("job {id:?}: metadata {e}"))?,
    };
    let answers = match obj.get("answers") {
        None | Some(Value::Null) => Vec::new(),
        Some(_) if !matches!(source, JobSource::Goal(_)) => {
            return Err(format!(
                "job {id:?}: answers go with a goal (they answer its planner's questions)"
            ));
        }
        Some(v) => answers(v).map_err(|e| format!("job {id:?}: answers {e}"))?,
    };
    Ok((id, source, metadata, answers))
}

/// A list of answers (strings, or `{"question", "answer"}` objects), bounded as every
/// front end bounds them.
fn answers(v: &Value) -> Result<Vec<planwave_plan::clarification::Clarification>, String> {
    let list: Vec<planwave_plan::clarification::Clarification> =
        serde_json::from_value(v.clone()).map_err(|e| e.to_string())?;
    let problems = planwave_plan::clarification::answer_problems(&list);
    if problems.is_empty() {
        Ok(list)
    } else {
        Err(problems.join("; "))
    }
}

/// `{"ticker": "002594.SZ", "year": 2024}`: a flat object; numbers and booleans become text.
fn metadata(v: &Value) -> Result<BTreeMap<String, String>, String> {
    let Value::Object(m) = v else {
        return Err(format!("must be a JSON object, found {}", json_kind(v)));
    };
    let mut out = BTreeMap::new();
    for (k, v) in m {
        if !planwave_plan::refs::is_meta_key(k) {
            return Err(format!(
                "key {k:?}: use letters (any script), digits, '_' or '-' (it is referenced as {{{{meta.KEY}}}})"
            ));
        }
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Number(_) | Value::Bool(_) => v.to_string(),
            other => {
                return Err(format!(
                    "{k:?} must be a string, a number or a boolean, found {}",
                    json_kind(other)
                ));
            }
        };
        out.insert(k.clone(), text);
    }
    Ok(out)
}

/// `{"company": "比亚迪", "year": 2024}`: a flat object of strings, numbers and booleans,
/// each name usable as `{{ NAME }}` (a dotted name would read as a plan reference).
fn template_vars(v: &Value) -> Result<BTreeMap<String, Value>, String> {
    let Value::Object(m) = v else {
        return Err(format!("must be a JSON object, found {}", json_kind(v)));
    };
    let mut out = BTreeMap::new();
    for (k, v) in m {
        let mut chars = k.chars();
        let name_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !name_ok {
            return Err(format!(
                "key {k:?}: use letters, digits and '_', not starting with a digit (it is written {{{{ NAME }}}})"
            ));
        }
        if !matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_)) {
            return Err(format!(
                "{k:?} must be a string, a number or a boolean, found {}",
                json_kind(v)
            ));
        }
        out.insert(k.clone(), v.clone());
    }
    Ok(out)
}

fn job_id(obj: &Map<String, Value>) -> Result<String, String> {
    match obj.get("id") {
        None => Err("missing \"id\"".into()),
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Ok(n.to_string()),
        Some(v) => Err(format!(
            "\"id\" must be a non-empty string or an integer, found {}",
            json_kind(v)
        )),
    }
}

/// What a JSON value is, for messages about input of the wrong kind ("found a number").
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(s) if s.trim().is_empty() => "an empty string",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_bad_line_gets_its_number_and_reason_and_good_lines_survive() {
        let text = concat!(
            "{\"id\": \"a\", \"goal\": \"分析特斯拉\"}\n",
            "{\"id\": \"b\", \"goal\": \n",
            "\n",
            "{\"id\": \"c\", \"goal\": \"x\", \"priority\": 3}\n",
            "{\"id\": \"a\", \"plan_file\": \"p.json\"}\n",
            "{\"goal\": \"no id\"}\n",
            "{\"id\": 7, \"plan\": {\"tasks\": []}}\n",
            "{\"id\": \"d\", \"goal\": \"g\", \"plan_file\": \"p.json\"}\n",
            "{\"id\": \"e\"}\n",
            "[1, 2]\n",
            "{\"id\": \"f\", \"plan\": \"not an object\"}\n",
            "{\"id\": \"g\", \"goal\": \"  \"}\n",
            "{\"id\": 1.5, \"goal\": \"g\"}\n",
            "{\"id\": \"m\", \"goal\": \"g\", \"metadata\": {\"a b\": 1}}\n",
            "{\"id\": \"n\", \"goal\": \"g\", \"metadata\": {\"year\": 2024, \"ok\": true, \"t\": \"x\"}}\n",
            "{\"id\": \"t\", \"template\": \"c.json\", \"vars\": {\"company\": \"比亚迪\", \"n\": 3}}\n",
            "{\"id\": \"u\", \"goal\": \"g\", \"vars\": {\"company\": \"x\"}}\n",
            "{\"id\": \"v\", \"template\": \"c.json\", \"vars\": {\"a.b\": \"x\"}}\n",
            "{\"id\": \"w\", \"template\": \"c.json\", \"vars\": {\"c\": [1]}}\n",
            "{\"id\": \"x\", \"template\": \"c.json\", \"plan_file\": \"p.json\"}\n",
        );
        let f = parse_jobs(text);
        let ids: Vec<(&str, usize)> = f.jobs.iter().map(|j| (j.id.as_str(), j.line)).collect();
        assert_eq!(ids, vec![("a", 1), ("7", 7), ("n", 15), ("t", 16)]);
        assert_eq!(
            f.jobs[3].source,
            JobSource::Template {
                path: "c.json".into(),
                vars: [
                    ("company".to_owned(), Value::from("比亚迪")),
                    ("n".to_owned(), Value::from(3))
                ]
                .into()
            }
        );
        let n = &f.jobs[2].metadata;
        assert_eq!(
            (n["year"].as_str(), n["ok"].as_str(), n["t"].as_str()),
            ("2024", "true", "x")
        );
        let bad: Vec<String> = f.bad.iter().map(ToString::to_string).collect();
        assert_eq!(
            bad,
            vec![
                "line 2: invalid JSON at column 19: EOF while parsing a value",
                "line 4: unknown field \"priority\" (expected id, goal, plan, plan_file, template, vars, metadata, answers)",
                "line 5: duplicate job id \"a\" (first on line 1)",
                "line 6: missing \"id\"",
                "line 8: job \"d\": has goal and plan_file (give exactly one of goal, plan, plan_file or template)",
                "line 9: job \"e\": needs one of goal, plan, plan_file or template",
                "line 10: expected a JSON object with id, goal, plan, plan_file, template, vars, metadata, answers, found an array",
                "line 11: job \"f\": plan must be a JSON object, found a string",
                "line 12: job \"g\": the goal is empty",
                "line 13: \"id\" must be a non-empty string or an integer, found a number",
                "line 14: job \"m\": metadata key \"a b\": use letters (any script), digits, '_' or '-' (it is referenced as {{meta.KEY}})",
                "line 17: job \"u\": vars go with a template (this job has goal)",
                "line 18: job \"v\": vars key \"a.b\": use letters, digits and '_', not starting with a digit (it is written {{ NAME }})",
                "line 19: job \"w\": vars \"c\" must be a string, a number or a boolean, found an array",
                "line 20: job \"x\": has plan_file and template (give exactly one of goal, plan, plan_file or template)",
            ]
        );
    }
}
