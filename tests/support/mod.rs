//! Helpers to run the real binary and read what it wrote.

#![allow(dead_code)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_planwave"));
    // Tests must not pick up a developer's real model settings.
    for var in [
        "PLANWAVE_LLM_BASE_URL",
        "PLANWAVE_LLM_API_KEY",
        "PLANWAVE_LLM_MODEL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "RUST_LOG",
    ] {
        c.env_remove(var);
    }
    c
}

pub fn run(args: &[&str]) -> Output {
    run_with_stdin(args, None)
}

pub fn run_with_stdin(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut cmd = bin();
    cmd.args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    let mut child = cmd.spawn().expect("spawn planwave");
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().expect("stdin pipe");
        pipe.write_all(input).expect("write stdin");
    }
    let out = child.wait_with_output().expect("wait planwave");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

pub fn write_json(dir: &Path, name: &str, value: &serde_json::Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec_pretty(value).expect("json")).expect("write");
    p
}

pub fn read_json(path: &Path) -> serde_json::Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

pub fn events(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .expect("events.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad event line {l}: {e}")))
        .collect()
}

/// The `tasks[]` entry of `run.json` with this id (compared as text).
pub fn task<'a>(run: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    run["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| id_text(&t["id"]) == id)
        .unwrap_or_else(|| panic!("no task {id}"))
}

pub fn id_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub fn ts(v: &serde_json::Value) -> chrono::DateTime<chrono::FixedOffset> {
    chrono::DateTime::parse_from_rfc3339(
        v.as_str().unwrap_or_else(|| panic!("not a timestamp: {v}")),
    )
    .expect("rfc3339")
}

/// A plan from `(id, description, deps)` triples.
pub fn plan(topic: &str, tasks: &[(&str, &str, &[&str])]) -> serde_json::Value {
    let tasks: Vec<serde_json::Value> = tasks
        .iter()
        .map(|(id, d, deps)| {
            let id: serde_json::Value = id.parse::<i64>().map(Into::into).unwrap_or_else(|_| (*id).into());
            let deps: Vec<serde_json::Value> = deps.iter().map(|d| d.parse::<i64>().map(Into::into).unwrap_or_else(|_| (*d).into())).collect();
            serde_json::json!({"id": id, "description": d, "dependencies": deps, "hints": {"key_questions": [format!("what about {d}?")]}})
        })
        .collect();
    serde_json::json!({"research_type": "company", "topic": topic, "objectives": ["understand it"], "tasks": tasks})
}
