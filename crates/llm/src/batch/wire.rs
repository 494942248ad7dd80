//! The Batch API's wire format (OpenAI's, which other providers copy): the request line, the
//! output and error lines, the batch object, and the multipart body of a file upload.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The header `sim-llm serve` answers a batch file's upload with: it is planwave's
/// simulator, and takes what each line is about at [`CONTEXTS_PATH`].
pub const SIMULATOR_HEADER: &str = "x-planwave-simulator";
/// The simulator's route (under the API's base URL) for what each line of an uploaded file
/// is about: `{"input_file_id": F, "lines": {custom_id: {"role", "attempt", "context"}}}`.
pub const CONTEXTS_PATH: &str = "planwave/batch-contexts";

/// The batch object (`POST /v1/batches`, `GET /v1/batches/{id}`), as much as planwave reads.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct BatchObject {
    pub id: String,
    pub status: String,
    #[serde(default)]
    pub input_file_id: Option<String>,
    #[serde(default)]
    pub output_file_id: Option<String>,
    #[serde(default)]
    pub error_file_id: Option<String>,
    #[serde(default)]
    pub request_counts: Option<RequestCounts>,
    /// A failed batch's validation problems: `{"data": [{"code", "message", "line"}]}`.
    #[serde(default)]
    pub errors: Option<Value>,
    /// Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<u64>,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct RequestCounts {
    #[serde(default)]
    pub total: u64,
    #[serde(default)]
    pub completed: u64,
    #[serde(default)]
    pub failed: u64,
}

impl BatchObject {
    /// The batch will not change any more: its output and error files are final.
    pub fn is_terminal(&self) -> bool {
        matches!(
            self.status.as_str(),
            "completed" | "failed" | "expired" | "cancelled"
        )
    }

    /// A failed batch's problems on one line.
    pub fn error_text(&self) -> String {
        let data = self
            .errors
            .as_ref()
            .and_then(|e| e.get("data"))
            .and_then(Value::as_array);
        let msgs: Vec<String> = data
            .into_iter()
            .flatten()
            .take(5)
            .map(|e| {
                let m = e.get("message").and_then(Value::as_str).unwrap_or("error");
                match e.get("line").and_then(Value::as_u64) {
                    Some(l) => format!("line {l}: {m}"),
                    None => m.to_owned(),
                }
            })
            .collect();
        if msgs.is_empty() {
            "the provider failed the batch".into()
        } else {
            msgs.join("; ")
        }
    }
}

/// `GET /v1/batches` (a page of them, newest first; the next page is `?after=` its last id).
#[derive(Debug, Default, Deserialize)]
pub struct BatchList {
    #[serde(default)]
    pub data: Vec<BatchObject>,
    #[serde(default)]
    pub has_more: bool,
}

/// `POST /v1/files`, `GET /v1/files/{id}`.
#[derive(Debug, Deserialize)]
pub struct FileObject {
    pub id: String,
    /// Unix seconds.
    #[serde(default)]
    pub created_at: Option<u64>,
}

/// How one line of a finished batch ended.
#[derive(Clone, Debug, PartialEq)]
pub enum LineOutcome {
    /// The response body (a chat completion).
    Answer(Value),
    /// The request failed: `status` is the HTTP status the line got (0 when it got none),
    /// `code` the error's code (`batch_expired`, `batch_cancelled`, `server_error`, ...).
    Failed {
        status: u16,
        code: String,
        message: String,
    },
}

impl LineOutcome {
    /// Not run at all because the batch expired or was cancelled: sent again, not retried.
    pub fn unfinished(&self) -> bool {
        matches!(self, LineOutcome::Failed { code, .. }
            if code == "batch_expired" || code == "batch_cancelled")
    }
}

/// One line of an output or error file: its `custom_id` and outcome, or `None` when the line
/// is not one.
pub fn parse_result_line(line: &str) -> Option<(String, LineOutcome)> {
    let v: Value = serde_json::from_str(line).ok()?;
    let id = v.get("custom_id")?.as_str()?.to_owned();
    let response = v.get("response").filter(|r| !r.is_null());
    let status = response
        .and_then(|r| r.get("status_code"))
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .unwrap_or(0);
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        return Some((id, failed(status, err)));
    }
    let body = response.and_then(|r| r.get("body")).cloned()?;
    if (200..300).contains(&status) {
        return Some((id, LineOutcome::Answer(body)));
    }
    let err = body.get("error").cloned().unwrap_or(body);
    Some((id, failed(status, &err)))
}

fn failed(status: u16, err: &Value) -> LineOutcome {
    let text = |k: &str| err.get(k).and_then(Value::as_str).map(str::to_owned);
    LineOutcome::Failed {
        status,
        code: text("code").or_else(|| text("type")).unwrap_or_default(),
        message: text("message").unwrap_or_else(|| crate::openai::wire::error_message(err)),
    }
}

/// A `multipart/form-data` body with the `purpose` field and the JSONL file, and its
/// content type. The boundary is chosen so it occurs nowhere in the file.
pub fn multipart(jsonl: &[u8], purpose: &str, filename: &str) -> (Vec<u8>, String) {
    let mut boundary = format!(
        "planwave-{:016x}",
        planwave_record::stable_hash(0, filename, 0)
    );
    while memchr::memmem::find(jsonl, boundary.as_bytes()).is_some() {
        boundary.push('x');
    }
    let mut body = Vec::with_capacity(jsonl.len() + 512);
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"purpose\"\r\n\r\n{purpose}\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\nContent-Type: application/jsonl\r\n\r\n"
        )
        .as_bytes(),
    );
    body.extend_from_slice(jsonl);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (body, format!("multipart/form-data; boundary={boundary}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_and_error_lines_parse_as_openai_writes_them() {
        let ok = r#"{"id":"batch_req_1","custom_id":"a","response":{"status_code":200,"request_id":"r","body":{"choices":[]}},"error":null}"#;
        assert_eq!(
            parse_result_line(ok),
            Some((
                "a".into(),
                LineOutcome::Answer(serde_json::json!({"choices": []}))
            ))
        );
        let expired = r#"{"id":"batch_req_2","custom_id":"b","response":null,"error":{"code":"batch_expired","message":"not run"}}"#;
        let (id, out) = parse_result_line(expired).expect("line");
        assert_eq!(id, "b");
        assert!(out.unfinished());
        let five = r#"{"id":"x","custom_id":"c","response":{"status_code":500,"body":{"error":{"message":"boom","type":"server_error"}}},"error":null}"#;
        assert_eq!(
            parse_result_line(five),
            Some((
                "c".into(),
                LineOutcome::Failed {
                    status: 500,
                    code: "server_error".into(),
                    message: "boom".into()
                }
            ))
        );
        assert_eq!(parse_result_line("not json"), None);
        assert_eq!(parse_result_line(r#"{"no":"id"}"#), None);
    }

    #[test]
    fn the_multipart_boundary_is_not_in_the_file() {
        let name = "f.jsonl";
        let b = format!("planwave-{:016x}", planwave_record::stable_hash(0, name, 0));
        let file = format!("{{\"x\":\"{b}\"}}\n");
        let (body, ct) = multipart(file.as_bytes(), "batch", name);
        let boundary = ct.rsplit('=').next().expect("boundary");
        assert_ne!(boundary, b);
        let text = String::from_utf8(body).expect("utf-8");
        assert!(text.starts_with(&format!("--{boundary}\r\n")));
        assert!(text.ends_with(&format!("\r\n--{boundary}--\r\n")));
        assert!(text.contains("name=\"purpose\"\r\n\r\nbatch\r\n"));
    }
}
