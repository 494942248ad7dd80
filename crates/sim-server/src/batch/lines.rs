//! The input file's lines checked as OpenAI checks them before a batch runs: each a JSON
//! object with a unique `custom_id`, `method` `POST`, the batch's endpoint as `url`, and a
//! chat request as `body`. Every problem is collected with its line number.

use std::collections::HashSet;

use serde_json::{Value, json};

/// Most lines in one batch (OpenAI's limit).
pub(crate) const MAX_LINES: usize = 50_000;
/// Longest `custom_id` accepted.
pub(crate) const MAX_CUSTOM_ID: usize = 512;
/// Problems reported for one file (the rest are counted in the last message).
const MAX_PROBLEMS: usize = 100;

/// One valid request line.
#[derive(Clone, Debug)]
pub(crate) struct InputLine {
    pub custom_id: String,
    pub body: Value,
    /// What a client's `x-planwave-*` headers would have said (role, attempt, context), as
    /// planwave sent it for the line's `custom_id` (`POST /v1/planwave/batch-contexts`).
    pub planwave: Option<Value>,
}

/// The file's request lines, or its problems as the batch's `errors.data`.
pub(crate) fn check(bytes: &[u8], endpoint: &str) -> Result<Vec<InputLine>, Vec<Value>> {
    let Ok(text) = std::str::from_utf8(bytes) else {
        return Err(vec![problem("invalid_file", "the file is not UTF-8", None)]);
    };
    let mut lines = Vec::new();
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    for (i, raw) in text.lines().enumerate() {
        if raw.trim().is_empty() {
            continue;
        }
        let n = i + 1;
        match line(raw, endpoint) {
            Ok(l) if !seen.insert(l.custom_id.clone()) => problems.push(problem(
                "duplicate_custom_id",
                &format!("custom_id {:?} is used twice", l.custom_id),
                Some(n),
            )),
            Ok(l) => lines.push(l),
            Err((code, m)) => problems.push(problem(code, &m, Some(n))),
        }
    }
    if lines.is_empty() && problems.is_empty() {
        problems.push(problem("empty_file", "the file has no request lines", None));
    }
    if lines.len() > MAX_LINES {
        problems.push(problem(
            "too_many_tasks",
            &format!("{} lines; a batch takes at most {MAX_LINES}", lines.len()),
            None,
        ));
    }
    if problems.len() > MAX_PROBLEMS {
        let more = problems.len() - MAX_PROBLEMS;
        problems.truncate(MAX_PROBLEMS);
        problems.push(problem("more", &format!("and {more} more problems"), None));
    }
    if problems.is_empty() {
        Ok(lines)
    } else {
        Err(problems)
    }
}

fn problem(code: &str, message: &str, line: Option<usize>) -> Value {
    json!({"code": code, "message": message, "param": Value::Null, "line": line})
}

/// A line's problem: OpenAI's code for it (`invalid_json_line`, `url_mismatch`, or
/// `invalid_request`) and what is wrong.
type Problem = (&'static str, String);

fn invalid(m: impl Into<String>) -> Problem {
    ("invalid_request", m.into())
}

fn line(raw: &str, endpoint: &str) -> Result<InputLine, Problem> {
    let v: Value = serde_json::from_str(raw)
        .map_err(|e| ("invalid_json_line", format!("not valid JSON: {e}")))?;
    let o = v
        .as_object()
        .ok_or_else(|| ("invalid_json_line", "not a JSON object".to_owned()))?;
    for key in o.keys() {
        // OpenAI's documented fields only: a client sending more would be refused by a
        // provider that checks.
        if !matches!(key.as_str(), "custom_id" | "method" | "url" | "body") {
            return Err(invalid(format!("unknown field {key:?}")));
        }
    }
    let custom_id = o
        .get("custom_id")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("custom_id must be a string"))?;
    if custom_id.is_empty() || custom_id.chars().count() > MAX_CUSTOM_ID {
        return Err(invalid(format!(
            "custom_id must have 1 to {MAX_CUSTOM_ID} characters"
        )));
    }
    if o.get("method").and_then(Value::as_str) != Some("POST") {
        return Err(invalid("method must be \"POST\""));
    }
    if o.get("url").and_then(Value::as_str) != Some(endpoint) {
        return Err((
            "url_mismatch",
            format!("url must be the batch's endpoint {endpoint:?}"),
        ));
    }
    let body = o
        .get("body")
        .filter(|b| b.is_object())
        .ok_or_else(|| invalid("body must be an object"))?;
    if !body.get("messages").is_some_and(Value::is_array) {
        return Err(invalid("body.messages must be an array"));
    }
    if body.get("stream").and_then(Value::as_bool) == Some(true) {
        return Err(invalid("body.stream cannot be true in a batch"));
    }
    Ok(InputLine {
        custom_id: custom_id.to_owned(),
        body: body.clone(),
        planwave: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const EP: &str = "/v1/chat/completions";

    fn good(id: &str) -> String {
        format!(
            r#"{{"custom_id":"{id}","method":"POST","url":"{EP}","body":{{"model":"m","messages":[]}}}}"#
        )
    }

    #[test]
    fn valid_lines_pass_and_every_problem_is_named_with_its_line() {
        let ok = format!("{}\n\n{}\n", good("a"), good("b"));
        assert_eq!(check(ok.as_bytes(), EP).expect("valid").len(), 2);
        let bad = [
            good("a"),
            good("a"),
            "nope".to_owned(),
            r#"{"custom_id":"c","method":"GET","url":"/v1/chat/completions","body":{"messages":[]}}"#.to_owned(),
            r#"{"custom_id":"d","method":"POST","url":"/v1/embeddings","body":{"messages":[]}}"#.to_owned(),
            r#"{"custom_id":"","method":"POST","url":"/v1/chat/completions","body":{"messages":[]}}"#.to_owned(),
            r#"{"custom_id":"e","method":"POST","url":"/v1/chat/completions","body":{"messages":[],"stream":true}}"#.to_owned(),
            r#"{"custom_id":"f","method":"POST","url":"/v1/chat/completions","body":{}}"#.to_owned(),
            r#"{"custom_id":"g","method":"POST","url":"/v1/chat/completions","body":{"messages":[]},"x_planwave":{}}"#.to_owned(),
        ]
        .join("\n");
        let problems = check(bad.as_bytes(), EP).expect_err("invalid");
        let lines: Vec<u64> = problems.iter().filter_map(|p| p["line"].as_u64()).collect();
        assert_eq!(lines, vec![2, 3, 4, 5, 6, 7, 8, 9]);
        assert_eq!(problems[7]["message"], "unknown field \"x_planwave\"");
        assert_eq!(problems[0]["code"], "duplicate_custom_id");
        assert!(check(b"\n\n", EP).is_err(), "an empty file");
        assert!(check(&[0xff, 0xfe], EP).is_err(), "not UTF-8");
    }
}
