//! A request's `"options"` (the run flags by long name, `-` written `_`) as command-line
//! arguments, so the front end parses them exactly as it parses its own flags. Only flags
//! that shape one job are accepted: paths on the server's disk (`config`, `prompts`,
//! `sim_latency_file`, `plan_cache`, `mcp_config`), where the output goes, and which model
//! answers (the server's shared client) are the server's own.

use serde_json::{Map, Value};

const ALLOWED: &[&str] = &[
    "concurrency",
    "schedule",
    "retries",
    "retry_backoff_ms",
    "seed",
    "task_timeout",
    "deadline",
    "sim_latency_ms",
    "sim_sigma",
    "sim_tokens_per_sec",
    "sim_fail",
    "sim_flaky",
    "sim_panic",
    "sim_terse",
    "sim_planner_faults",
    "sim_scores",
    "sim_overall",
    "sim_replan",
    "sim_invalid",
    "sim_task_fail",
    "sim_step_strategy",
    "context_budget",
    "meta",
    "lang",
    "planner_attempts",
    "plan_format",
    "max_rounds",
];

/// Flags only `research` has.
const RESEARCH_ONLY: &[&str] = &["lang", "planner_attempts", "plan_format", "max_rounds"];

/// `--name=value` arguments for `options`, or every problem with them.
pub fn to_args(options: &Map<String, Value>, research: bool) -> Result<Vec<String>, Vec<String>> {
    let mut args = Vec::new();
    let mut problems = Vec::new();
    for (name, value) in options {
        if !ALLOWED.contains(&name.as_str()) {
            problems.push(format!(
                "options.{name}: not an option a request may set (allowed: {})",
                ALLOWED.join(", ")
            ));
            continue;
        }
        if !research && RESEARCH_ONLY.contains(&name.as_str()) {
            problems.push(format!("options.{name}: only for a goal (research)"));
            continue;
        }
        let flag = format!("--{}", name.replace('_', "-"));
        if let Err(p) = push_value(&mut args, &flag, value) {
            problems.push(format!("options.{name}: {p}"));
        }
    }
    if problems.is_empty() {
        Ok(args)
    } else {
        Err(problems)
    }
}

fn push_value(args: &mut Vec<String>, flag: &str, value: &Value) -> Result<(), String> {
    match value {
        Value::Bool(true) => args.push(flag.to_owned()),
        Value::Bool(false) | Value::Null => {}
        Value::Number(n) => args.push(format!("{flag}={n}")),
        Value::String(s) => args.push(format!("{flag}={s}")),
        Value::Array(items) => {
            for item in items {
                match item {
                    Value::Number(n) => args.push(format!("{flag}={n}")),
                    Value::String(s) => args.push(format!("{flag}={s}")),
                    Value::Bool(b) => args.push(format!("{flag}={b}")),
                    _ => return Err("array items must be strings, numbers or booleans".into()),
                }
            }
        }
        // `{"meta": {"k": "v"}}` is `--meta k=v` per entry.
        Value::Object(map) if flag == "--meta" => {
            for (k, v) in map {
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                args.push(format!("{flag}={k}={v}"));
            }
        }
        Value::Object(_) => return Err("expected a string, number, boolean or array".into()),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn options_become_long_flags() {
        let got = to_args(
            &map(
                json!({"sim_latency_ms": 300, "sim_fail": "4", "sim_flaky": ["1", "2"],
                        "meta": {"client": "acme"}, "seed": 7}),
            ),
            false,
        )
        .unwrap();
        assert_eq!(
            got,
            [
                "--meta=client=acme",
                "--seed=7",
                "--sim-fail=4",
                "--sim-flaky=1",
                "--sim-flaky=2",
                "--sim-latency-ms=300"
            ]
        );
    }

    #[test]
    fn server_paths_and_model_are_refused_with_every_problem() {
        let err = to_args(
            &map(json!({"config": "/etc/passwd", "llm_base_url": "http://x", "max_rounds": 2})),
            false,
        )
        .unwrap_err();
        assert_eq!(err.len(), 3);
        assert!(err[0].starts_with("options.config: not an option"));
        assert!(err[1].starts_with("options.llm_base_url: not an option"));
        assert_eq!(err[2], "options.max_rounds: only for a goal (research)");
    }
}
