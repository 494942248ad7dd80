//! Server-sent events: an incremental decoder for `text/event-stream` bodies and the
//! accumulation of Chat Completions chunks into one answer.
//!
//! Everything OpenAI-compatible servers actually send is normal here: comment lines
//! (`: keep-alive`, OpenRouter's `: OPENROUTER PROCESSING`), `\r\n` line ends, events split
//! anywhere across network reads (even inside a UTF-8 character), chunks with empty
//! `choices`, a usage-only last chunk, DeepSeek's `reasoning_content` deltas, and `[DONE]`.

use serde_json::Value;

use super::wire::{self, WireUsage};

/// Splits a byte stream into SSE `data` payloads.
#[derive(Debug, Default)]
pub struct SseDecoder {
    buf: Vec<u8>,
    data: Option<String>,
}

impl SseDecoder {
    /// Feeds bytes; returns the data of every event completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(pos) = self.buf[start..].iter().position(|&b| b == b'\n') {
            let end = start + pos;
            let mut line = &self.buf[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            let line = String::from_utf8_lossy(line).into_owned();
            self.line(&line, &mut out);
            start = end + 1;
        }
        self.buf.drain(..start);
        out
    }

    /// The end of the body: an event not closed by a blank line still counts.
    pub fn finish(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        if !self.buf.is_empty() {
            let rest = std::mem::take(&mut self.buf);
            let line = String::from_utf8_lossy(&rest)
                .trim_end_matches('\r')
                .to_owned();
            self.line(&line, &mut out);
        }
        if let Some(d) = self.data.take() {
            out.push(d);
        }
        out
    }

    fn line(&mut self, line: &str, out: &mut Vec<String>) {
        if line.is_empty() {
            if let Some(d) = self.data.take() {
                out.push(d);
            }
            return;
        }
        if line.starts_with(':') {
            return; // comment / keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        if field == "data" {
            match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            }
        }
        // `event`, `id`, `retry` carry nothing Chat Completions needs.
    }
}

/// What the chunks of one streamed answer add up to.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct StreamAnswer {
    pub content: String,
    /// DeepSeek `reasoning_content` (or `reasoning`): counted, never returned as content.
    pub reasoning: String,
    pub finish_reason: Option<String>,
    pub usage: Option<WireUsage>,
    pub model: Option<String>,
    pub done: bool,
    /// Native tool calls, assembled from `delta.tool_calls[]` fragments by their `index`.
    pub tool_calls: Vec<crate::ToolCall>,
}

/// A chunk the stream could not use.
#[derive(Debug, Clone, PartialEq)]
pub enum ChunkError {
    /// Not JSON: a broken or truncated server.
    Malformed(String),
    /// The server reported an error inside the stream.
    Server(String),
}

impl StreamAnswer {
    /// Folds one event's data into the answer.
    pub fn apply(&mut self, data: &str) -> Result<(), ChunkError> {
        let data = data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let v: Value = serde_json::from_str(data).map_err(|e| {
            let head: String = data.chars().take(80).collect();
            ChunkError::Malformed(format!("{e} in stream chunk {head:?}"))
        })?;
        if let Some(err) = v.get("error") {
            return Err(ChunkError::Server(wire::error_message(err)));
        }
        if let Some(m) = v.get("model").and_then(Value::as_str)
            && !m.is_empty()
        {
            self.model = Some(m.to_owned());
        }
        if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
            self.usage = serde_json::from_value(u.clone()).ok();
        }
        for choice in v
            .get("choices")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            // Only the first choice is ours (n = 1); ignore any others.
            if choice.get("index").and_then(Value::as_u64).unwrap_or(0) != 0 {
                continue;
            }
            if let Some(delta) = choice.get("delta") {
                if let Some(c) = delta.get("content").and_then(Value::as_str) {
                    self.content.push_str(c);
                }
                for key in ["reasoning_content", "reasoning"] {
                    if let Some(r) = delta.get(key).and_then(Value::as_str) {
                        self.reasoning.push_str(r);
                    }
                }
                if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
                    for c in calls {
                        self.apply_tool_call(c);
                    }
                }
            }
            if let Some(f) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(f.to_owned());
            }
        }
        Ok(())
    }

    /// The first fragment of a call carries its id and name; later ones add argument text.
    fn apply_tool_call(&mut self, c: &Value) {
        let index = c.get("index").and_then(Value::as_u64).unwrap_or(0) as usize;
        if index > 1024 {
            return;
        }
        while self.tool_calls.len() <= index {
            self.tool_calls
                .push(crate::ToolCall::new("", "", &Value::Null));
            if let Some(last) = self.tool_calls.last_mut() {
                last.function.arguments.clear();
            }
        }
        let call = &mut self.tool_calls[index];
        if let Some(id) = c.get("id").and_then(Value::as_str) {
            call.id = id.to_owned();
        }
        if let Some(f) = c.get("function") {
            if let Some(n) = f.get("name").and_then(Value::as_str) {
                call.function.name.push_str(n);
            }
            if let Some(a) = f.get("arguments").and_then(Value::as_str) {
                call.function.arguments.push_str(a);
            }
        }
    }

    /// Whether the stream ended properly (`[DONE]`, or at least a finish reason).
    pub fn complete(&self) -> bool {
        self.done || self.finish_reason.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(chunks: &[&[u8]]) -> Vec<String> {
        let mut d = SseDecoder::default();
        let mut out = Vec::new();
        for c in chunks {
            out.extend(d.push(c));
        }
        out.extend(d.finish());
        out
    }

    #[test]
    fn comments_crlf_multiline_and_splits() {
        let body = ": keep-alive\r\n\r\ndata: {\"a\":1}\r\n\r\nevent: x\ndata: line1\ndata: line2\n\ndata: [DONE]\n\n";
        let whole = decode_all(&[body.as_bytes()]);
        assert_eq!(whole, vec!["{\"a\":1}", "line1\nline2", "[DONE]"]);
        // Byte by byte gives the same events.
        let bytes: Vec<&[u8]> = body.as_bytes().chunks(1).collect();
        assert_eq!(decode_all(&bytes), whole);
    }

    #[test]
    fn utf8_split_inside_a_character_survives() {
        let body = "data: {\"t\":\"特斯拉\"}\n\n".as_bytes();
        let (a, b) = body.split_at(14); // inside 特
        assert_eq!(decode_all(&[a, b]), vec!["{\"t\":\"特斯拉\"}"]);
    }

    #[test]
    fn last_event_without_blank_line_counts() {
        assert_eq!(decode_all(&[b"data: [DONE]"]), vec!["[DONE]"]);
    }

    #[test]
    fn deepseek_stream_with_reasoning_empty_choices_and_usage_chunk() {
        let events = [
            r#"{"id":"1","model":"deepseek-reasoner","choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":"Let me think"},"finish_reason":null}]}"#,
            r#"{"id":"1","choices":[{"index":0,"delta":{"content":null,"reasoning_content":" more."},"finish_reason":null}]}"#,
            r###"{"id":"1","choices":[{"index":0,"delta":{"content":"## 标题"},"finish_reason":null}]}"###,
            r#"{"id":"1","choices":[]}"#,
            r#"{"id":"1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
            r#"{"id":"1","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":30,"total_tokens":42,"completion_tokens_details":{"reasoning_tokens":20}}}"#,
            "[DONE]",
        ];
        let mut a = StreamAnswer::default();
        for e in events {
            a.apply(e).expect("chunk");
        }
        assert_eq!(a.content, "## 标题");
        assert_eq!(a.reasoning, "Let me think more.");
        assert_eq!(a.finish_reason.as_deref(), Some("stop"));
        assert_eq!(a.model.as_deref(), Some("deepseek-reasoner"));
        let u = a.usage.clone().expect("usage");
        assert_eq!((u.prompt_tokens, u.completion_tokens), (12, 30));
        assert_eq!(u.reasoning_tokens(), 20);
        assert!(a.complete());
    }

    #[test]
    fn malformed_and_error_chunks_are_reported() {
        let mut a = StreamAnswer::default();
        assert!(matches!(
            a.apply("{\"choices\": [tru"),
            Err(ChunkError::Malformed(_))
        ));
        assert_eq!(
            a.apply(r#"{"error":{"message":"overloaded","type":"server_error"}}"#),
            Err(ChunkError::Server("overloaded (server_error)".into()))
        );
        assert!(!a.complete());
    }
}
