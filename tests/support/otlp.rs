//! The OTLP receiver peer (`tests/peers/otlp_receiver.py`, decoding with the official
//! `opentelemetry-proto` package) as a child process, and queries over the spans it got.

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::{ChildGuard, peer, repo_file};

pub struct OtlpReceiver {
    pub http_url: String,
    pub grpc_url: Option<String>,
    spans_file: PathBuf,
    _dir: tempfile::TempDir,
    _child: ChildGuard,
}

impl OtlpReceiver {
    /// `None` only when peer tests are skipped on purpose (see [`peer`]).
    pub fn start(grpc: bool) -> Option<OtlpReceiver> {
        let python = peer("py/bin/python")?;
        let dir = tempfile::tempdir().expect("tempdir");
        let spans_file = dir.path().join("spans.jsonl");
        let mut cmd = Command::new(python);
        cmd.arg(repo_file("tests/peers/otlp_receiver.py"))
            .arg(&spans_file)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if grpc {
            cmd.arg("--grpc");
        }
        let mut child = cmd.spawn().expect("spawn the OTLP receiver");
        let line = super::first_line(&mut child);
        let ports: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("receiver said {line:?}: {e}"));
        Some(OtlpReceiver {
            http_url: format!("http://127.0.0.1:{}", ports["http"]),
            grpc_url: ports["grpc"]
                .as_u64()
                .map(|p| format!("http://127.0.0.1:{p}")),
            spans_file,
            _dir: dir,
            _child: ChildGuard(child),
        })
    }

    /// Every span received so far. The receiver writes a request's spans before answering
    /// it, and planwave waits for the answers before it exits.
    pub fn spans(&self) -> Spans {
        let text = std::fs::read_to_string(&self.spans_file).expect("spans file");
        Spans(
            text.lines()
                .map(|l| serde_json::from_str(l).expect("span json"))
                .collect(),
        )
    }

    pub fn raw(&self) -> String {
        std::fs::read_to_string(&self.spans_file).expect("spans file")
    }
}

pub struct Spans(pub Vec<Value>);

impl Spans {
    pub fn named(&self, name: &str) -> Vec<&Value> {
        self.0.iter().filter(|s| s["name"] == name).collect()
    }

    /// Spans whose name starts with `prefix` (task spans are `task <id>`).
    pub fn prefixed(&self, prefix: &str) -> Vec<&Value> {
        self.0
            .iter()
            .filter(|s| s["name"].as_str().is_some_and(|n| n.starts_with(prefix)))
            .collect()
    }

    pub fn children_of(&self, parent: &Value) -> Vec<&Value> {
        self.0
            .iter()
            .filter(|s| s["parent_span_id"] == parent["span_id"])
            .collect()
    }

    pub fn roots(&self) -> Vec<&Value> {
        self.0
            .iter()
            .filter(|s| s["parent_span_id"] == "")
            .collect()
    }

    /// Task spans by `planwave.task.id`; panics on a task with two spans.
    pub fn tasks(&self) -> HashMap<String, &Value> {
        let mut out = HashMap::new();
        for s in self.prefixed("task ") {
            let id = attr(s, "planwave.task.id")
                .as_str()
                .expect("task id")
                .to_owned();
            assert!(
                out.insert(id.clone(), s).is_none(),
                "two spans for task {id}"
            );
        }
        out
    }
}

pub fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}
