//! References from a tool step's parameters to earlier results (step plans):
//! `{{ID.result}}` (the whole result), `{{ID.field.path}}` or `{{ID.result.field}}` (a field
//! of a JSON result, array indices as numbers) and the `@{{steps.ID.result}}` form.
//!
//! A string that is exactly one reference is replaced by the referenced JSON value (so a
//! number stays a number); references inside longer strings are replaced by text.
//! `{{input}}` is not a reference: it belongs to the tool loop's chaining rule.
//!
//! Two names are namespaces rather than tasks, unless a task has that id: `{{vars.NAME}}`
//! reads the plan's `global_variables` and `{{meta.KEY}}` the job's metadata (`--meta`).

use serde_json::Value;

use crate::model::PlanAbout;

/// `{{vars.NAME}}`: the plan's `global_variables`.
pub const VARS: &str = "vars";
/// `{{meta.KEY}}`: the job's metadata.
pub const META: &str = "meta";

/// Whether `key` can name the job's metadata (`--meta KEY=VALUE`, a job line's
/// `metadata`): letters and digits of any script (`流程规范` as well as `ticker`), `_` and
/// `-`, so `{{meta.KEY}}` reads it back; no `.`, space or brace, which would end or split
/// the reference.
pub fn is_meta_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-')
}

/// The value a namespace reference starts from, or `None` when `name` is no namespace.
pub fn namespace(about: &PlanAbout, name: &str) -> Option<Value> {
    match name {
        VARS => Some(Value::Object(about.global_variables.clone())),
        META => Some(Value::Object(
            about
                .meta
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        )),
        _ => None,
    }
}

/// One `{{...}}` in a parameter string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reference {
    /// The referenced task's id as text (`TaskId::key`).
    pub task: String,
    /// Field path into the result; empty means the whole result.
    pub path: Vec<String>,
}

/// A reference's place in its string: byte range and the parsed reference.
struct Found {
    start: usize,
    end: usize,
    reference: Reference,
}

fn scan(s: &str) -> Vec<Found> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(open) = s[from..].find("{{").map(|i| i + from) {
        let Some(close) = s[open + 2..].find("}}").map(|i| i + open + 2) else {
            break;
        };
        let inner = s[open + 2..close].trim();
        let start = if open > 0 && s.as_bytes()[open - 1] == b'@' {
            open - 1
        } else {
            open
        };
        if let Some(reference) = parse(inner) {
            out.push(Found {
                start,
                end: close + 2,
                reference,
            });
        }
        from = close + 2;
    }
    out
}

/// A parameter string taken apart: text, and the references between it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(&'a str),
    Ref(Reference),
}

/// `s` as its text and references in order (for a caller that places each reference's
/// value its own way, as an `llm_call`'s prompt places results in data blocks).
pub fn pieces(s: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut at = 0;
    for f in scan(s) {
        if f.start > at {
            out.push(Piece::Text(&s[at..f.start]));
        }
        out.push(Piece::Ref(f.reference));
        at = f.end;
    }
    if at < s.len() {
        out.push(Piece::Text(&s[at..]));
    }
    out
}

/// Whether the text between `{{` and `}}` is the plan's own: a reference (`ID.result`,
/// `vars.NAME`, `meta.KEY`, `steps.ID.result`) or the chaining rule's `input`. Other text
/// engines (a batch's plan templates) must leave such expressions alone.
pub fn is_plan_expression(inner: &str) -> bool {
    inner.trim() == "input" || parse(inner.trim()).is_some()
}

fn parse(inner: &str) -> Option<Reference> {
    let inner = inner.strip_prefix("steps.").unwrap_or(inner);
    let mut parts = inner.split('.').map(str::trim);
    let task = parts.next().filter(|t| !t.is_empty())?;
    if task == "input" {
        return None;
    }
    let mut path: Vec<String> = parts.map(str::to_owned).collect();
    if path.is_empty() || path.iter().any(String::is_empty) {
        return None;
    }
    // `result` names the whole result; what follows it is a path into it.
    if path[0] == "result" {
        path.remove(0);
    }
    Some(Reference {
        task: task.to_owned(),
        path,
    })
}

/// Every reference in a parameter tree, in document order.
pub fn references(params: &Value) -> Vec<Reference> {
    let mut out = Vec::new();
    let mut stack = vec![params];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => out.extend(scan(s).into_iter().map(|f| f.reference)),
            Value::Array(a) => stack.extend(a.iter().rev()),
            Value::Object(o) => stack.extend(o.values().rev()),
            _ => {}
        }
    }
    out
}

/// Follows `path` into `value`; a string holding JSON is parsed first (tools often return
/// JSON as text).
pub fn lookup(value: &Value, path: &[String]) -> Option<Value> {
    let mut cur = value.clone();
    for key in path {
        if let Value::String(s) = &cur
            && let Ok(parsed) = serde_json::from_str::<Value>(s)
        {
            cur = parsed;
        }
        cur = match &cur {
            Value::Object(o) => o.get(key)?.clone(),
            Value::Array(a) => a.get(key.parse::<usize>().ok()?)?.clone(),
            _ => return None,
        };
    }
    Some(cur)
}

/// A value as text in a string: a string as it is, anything else as JSON.
pub fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The parameters with every reference replaced. `result` gives a task's result by id; an
/// unknown task or a path that does not exist is an error naming the reference.
pub fn substitute(params: &Value, result: &dyn Fn(&str) -> Option<Value>) -> Result<Value, String> {
    let resolve = |r: &Reference| -> Result<Value, String> {
        let whole = result(&r.task).ok_or_else(|| format!("no result for task {}", r.task))?;
        lookup(&whole, &r.path).ok_or_else(|| {
            format!(
                "the result of task {} has no field {}",
                r.task,
                r.path.join(".")
            )
        })
    };
    Ok(match params {
        Value::String(s) => {
            let found = scan(s);
            match found.as_slice() {
                [] => params.clone(),
                [f] if f.start == 0 && f.end == s.len() => resolve(&f.reference)?,
                _ => {
                    let mut out = String::with_capacity(s.len());
                    let mut at = 0;
                    for f in &found {
                        out.push_str(&s[at..f.start]);
                        out.push_str(&as_text(&resolve(&f.reference)?));
                        at = f.end;
                    }
                    out.push_str(&s[at..]);
                    Value::String(out)
                }
            }
        }
        Value::Array(a) => Value::Array(
            a.iter()
                .map(|v| substitute(v, result))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(o) => Value::Object(
            o.iter()
                .map(|(k, v)| Ok((k.clone(), substitute(v, result)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_every_form() {
        let p = json!({"a": "{{1.result}}", "b": ["x @{{steps.fetch.result}} y", {"c": "{{2.data.items.0}}"}], "d": "{{input}}", "e": "{{ 3.result.tz }}"});
        let refs = references(&p);
        let got: Vec<(String, Vec<String>)> = refs.into_iter().map(|r| (r.task, r.path)).collect();
        assert_eq!(
            got,
            vec![
                ("1".into(), vec![]),
                ("fetch".into(), vec![]),
                ("2".into(), vec!["data".into(), "items".into(), "0".into()]),
                ("3".into(), vec!["tz".into()]),
            ]
        );
    }

    #[test]
    fn substitutes_values_and_text() {
        let results = |id: &str| match id {
            "1" => Some(json!(42)),
            "2" => Some(json!("{\"tz\": \"Europe/Warsaw\", \"list\": [1, 2]}")),
            _ => None,
        };
        let p = json!({"n": "{{1.result}}", "s": "sum is {{1.result}}!", "tz": "@{{steps.2.tz}}", "i": "{{2.list.1}}", "keep": "{{input}}"});
        assert_eq!(
            substitute(&p, &results).expect("ok"),
            json!({"n": 42, "s": "sum is 42!", "tz": "Europe/Warsaw", "i": 2, "keep": "{{input}}"})
        );
        assert_eq!(
            substitute(&json!("{{2.nope}}"), &results).expect_err("missing"),
            "the result of task 2 has no field nope"
        );
        assert_eq!(
            substitute(&json!("{{9.result}}"), &results).expect_err("unknown"),
            "no result for task 9"
        );
    }

    #[test]
    fn pieces_keep_the_text_between_references() {
        let r = |task: &str, path: &[&str]| {
            Piece::Ref(Reference {
                task: task.into(),
                path: path.iter().map(|p| (*p).to_owned()).collect(),
            })
        };
        assert_eq!(
            pieces("Read {{h.result}} and @{{steps.g.result.tz}}; {{input}} stays"),
            [
                Piece::Text("Read "),
                r("h", &[]),
                Piece::Text(" and "),
                r("g", &["tz"]),
                Piece::Text("; {{input}} stays"),
            ]
        );
        assert_eq!(pieces("{{h.result}}"), [r("h", &[])]);
        assert!(pieces("").is_empty());
    }
}
