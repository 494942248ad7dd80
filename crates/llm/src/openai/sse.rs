//! Server-sent events: an incremental decoder for `text/event-stream` bodies and the
//! accumulation of Chat Completions chunks into one answer.
//!
//! Everything OpenAI-compatible servers actually send is normal here: comment lines
//! (`: keep-alive`, OpenRouter's `: OPENROUTER PROCESSING`), `\r\n` line ends, events split
//! anywhere across network reads (even inside a UTF-8 character), chunks with empty
//! `choices`, a usage-only last chunk, DeepSeek's `reasoning_content` deltas, and `[DONE]`.

use std::ops::ControlFlow;

use serde_json::Value;

use super::chunk::{Chunk, Obj};
use super::wire::{self, WireUsage};

/// Splits a byte stream into SSE `data` payloads.
///
/// [`feed`](Self::feed) hands each event's data to a callback as it completes, borrowed:
/// lines are read in place from the bytes given (only a line split across reads is copied),
/// and an event's data is built in one reused buffer, so a stream of small events costs no
/// allocation per event.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// The start of a line whose end has not arrived yet.
    buf: Vec<u8>,
    /// The data of the event being read (valid while `has_data`).
    data: String,
    has_data: bool,
}

impl SseDecoder {
    /// Feeds bytes; calls `on_event` with the data of every event they complete, in order,
    /// until it breaks: the stream is then over for the caller (`[DONE]`, an error), and the
    /// bytes after that event are dropped.
    pub fn feed<B>(
        &mut self,
        bytes: &[u8],
        mut on_event: impl FnMut(&str) -> ControlFlow<B>,
    ) -> ControlFlow<B> {
        let mut rest = bytes;
        if !self.buf.is_empty() {
            let Some(nl) = memchr::memchr(b'\n', rest) else {
                self.buf.extend_from_slice(rest);
                return ControlFlow::Continue(());
            };
            let mut line = std::mem::take(&mut self.buf);
            line.extend_from_slice(&rest[..nl]);
            rest = &rest[nl + 1..];
            let flow = self.line(strip_cr(&line), &mut on_event);
            // Keep the buffer's capacity for the next split line.
            line.clear();
            self.buf = line;
            flow?;
        }
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            let line = &rest[..nl];
            rest = &rest[nl + 1..];
            self.line(strip_cr(line), &mut on_event)?;
        }
        self.buf.extend_from_slice(rest);
        ControlFlow::Continue(())
    }

    /// The end of the body: an event not closed by a blank line still counts.
    pub fn end<B>(&mut self, mut on_event: impl FnMut(&str) -> ControlFlow<B>) -> ControlFlow<B> {
        if !self.buf.is_empty() {
            let rest = std::mem::take(&mut self.buf);
            let text = String::from_utf8_lossy(&rest);
            self.text_line(text.trim_end_matches('\r'), &mut on_event)?;
        }
        if std::mem::take(&mut self.has_data) {
            on_event(&self.data)?;
        }
        ControlFlow::Continue(())
    }

    /// Feeds bytes; returns the data of every event completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut out = Vec::new();
        let _ = self.feed(bytes, |d| collect(&mut out, d));
        out
    }

    /// [`end`](Self::end), returning the data of the events it completes.
    pub fn finish(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        let _ = self.end(|d| collect(&mut out, d));
        out
    }

    fn line<B>(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(&str) -> ControlFlow<B>,
    ) -> ControlFlow<B> {
        // Valid UTF-8 is checked with the fast validator; only a broken line pays for the
        // lossy conversion (its bad bytes become U+FFFD, as they always have).
        if let Ok(text) = std::str::from_utf8(line) {
            return self.text_line(text, on_event);
        }
        let text = String::from_utf8_lossy(line).into_owned();
        self.text_line(&text, on_event)
    }

    fn text_line<B>(
        &mut self,
        line: &str,
        on_event: &mut impl FnMut(&str) -> ControlFlow<B>,
    ) -> ControlFlow<B> {
        if line.is_empty() {
            if std::mem::take(&mut self.has_data) {
                return on_event(&self.data);
            }
            return ControlFlow::Continue(());
        }
        if line.starts_with(':') {
            return ControlFlow::Continue(()); // comment / keep-alive
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        if field == "data" {
            if self.has_data {
                self.data.push('\n');
            } else {
                self.data.clear();
                self.has_data = true;
            }
            self.data.push_str(value);
        }
        // `event`, `id`, `retry` carry nothing Chat Completions needs.
        ControlFlow::Continue(())
    }
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

fn collect(out: &mut Vec<String>, data: &str) -> ControlFlow<()> {
    out.push(data.to_owned());
    ControlFlow::Continue(())
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
    /// The server's own `timings` of the request (llama.cpp), when it sent them.
    pub timings: Option<crate::ServerTimings>,
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
        // The common, well-formed chunk is read without a `Value` tree; anything else the
        // typed reading refuses gets the `Value` reading, which decides what it means.
        match serde_json::from_str::<Obj<Chunk<'_>>>(data) {
            Ok(Obj(chunk)) => self.apply_chunk(chunk),
            Err(_) => self.apply_value(data),
        }
    }

    fn apply_chunk(&mut self, c: Chunk<'_>) -> Result<(), ChunkError> {
        if let Some(err) = &c.error {
            return Err(ChunkError::Server(wire::error_message(err)));
        }
        // Every chunk repeats the model: copy it only when it changes.
        if let Some(m) = c.model
            && !m.0.is_empty()
            && self.model.as_deref() != Some(&*m.0)
        {
            self.model = Some(m.0.into_owned());
        }
        if let Some(u) = c.usage {
            self.usage = serde_json::from_value(u).ok();
        }
        if let Some(t) = c.timings {
            self.timings = serde_json::from_value(t).ok();
        }
        for Obj(choice) in c.choices.unwrap_or_default() {
            // Only the first choice is ours (n = 1); ignore any others.
            if choice.index.unwrap_or(0) != 0 {
                continue;
            }
            if let Some(Obj(delta)) = choice.delta {
                if let Some(t) = delta.content {
                    self.content.push_str(&t.0);
                }
                for r in [delta.reasoning_content, delta.reasoning]
                    .into_iter()
                    .flatten()
                {
                    self.reasoning.push_str(&r.0);
                }
                for call in delta.tool_calls.iter().flatten() {
                    self.apply_tool_call(call);
                }
            }
            if let Some(f) = choice.finish_reason {
                self.finish_reason = Some(f.0.into_owned());
            }
        }
        Ok(())
    }

    /// Any chunk, through a `Value` tree: whatever is not a string, object or array where
    /// one belongs counts as absent.
    fn apply_value(&mut self, data: &str) -> Result<(), ChunkError> {
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
        if let Some(t) = v.get("timings").filter(|t| !t.is_null()) {
            self.timings = serde_json::from_value(t.clone()).ok();
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
    fn invalid_utf8_becomes_replacement_characters() {
        assert_eq!(decode_all(&[b"data: a\xffb\n\n"]), vec!["a\u{FFFD}b"]);
        assert_eq!(decode_all(&[b"data: a\xff"]), vec!["a\u{FFFD}"]);
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
        assert_eq!((u.prompt_tokens, u.completion_tokens), (Some(12), Some(30)));
        assert_eq!(u.reasoning_tokens(), 20);
        assert!(a.complete());
    }

    #[test]
    fn a_streamed_usage_chunk_carries_the_cached_tokens_of_either_shape() {
        for usage in [
            r#"{"prompt_tokens":300,"completion_tokens":9,"prompt_tokens_details":{"cached_tokens":256}}"#,
            r#"{"prompt_tokens":300,"completion_tokens":9,"prompt_cache_hit_tokens":256,"prompt_cache_miss_tokens":44}"#,
            r#"{"prompt_tokens":300,"completion_tokens":9,"cache_read_input_tokens":256}"#,
        ] {
            let mut a = StreamAnswer::default();
            a.apply(r#"{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}"#)
                .expect("chunk");
            a.apply(&format!(r#"{{"choices":[],"usage":{usage}}}"#))
                .expect("usage chunk");
            let u = a.usage.clone().expect("usage").to_usage();
            assert_eq!((u.prompt_tokens, u.cached_tokens), (300, 256), "{usage}");
        }
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

    /// The typed reading and the `Value` reading give the same answer for every chunk,
    /// well-formed or odd (the typed one refuses the odd ones and falls back).
    #[test]
    fn typed_and_value_readings_agree() {
        let chunks = [
            r#"{"id":"c","object":"chat.completion.chunk","created":0,"model":"m","choices":[{"index":0,"delta":{"content":"plain"},"finish_reason":null}]}"#,
            r#"{"model":"m2","choices":[{"index":0,"delta":{"content":"esc\n\"q\" \u7279"}}]}"#,
            r#"{"choices":[{"index":1,"delta":{"content":"other choice"}}]}"#,
            r#"{"choices":[{"index":null,"delta":{"content":"null index"}}]}"#,
            r#"{"choices":[{"index":1.0,"delta":{"content":"float index"}}]}"#,
            r#"{"choices":[{"index":-1,"delta":{"content":"negative index"}}]}"#,
            r#"{"choices":[{"delta":"not an object","finish_reason":5}]}"#,
            r#"{"choices":[[0,{"content":"array choice"},"stop"]]}"#,
            r#"{"choices":{"0":{"delta":{"content":"object choices"}}}}"#,
            r#"{"choices":[{"delta":{"content":1,"reasoning":"r"}}]}"#,
            r#"{"choices":[{"delta":{"content":"a","content":"dup key"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning_content":"rc","reasoning":"r"},"finish_reason":"length"}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"t","function":{"name":"f","arguments":"{"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":{"index":0}}}]}"#,
            r#"{"model":5,"choices":[]}"#,
            r#"{"model":"","usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
            r#"{"usage":{"prompt_tokens":"x"}}"#,
            r#"{"usage":null,"error":null}"#,
            r#"{"error":{"message":"m","code":7}}"#,
            r#"["m", null, []]"#,
            r#""just text""#,
            r#"{"choices":[]} trailing"#,
            r#"{"choices": [tru"#,
        ];
        for chunk in chunks {
            let (mut typed, mut value) = (StreamAnswer::default(), StreamAnswer::default());
            typed.model = Some("m".into());
            value.model = Some("m".into());
            let a = typed.apply(chunk);
            let b = value.apply_value(chunk.trim());
            assert_eq!(a, b, "result of {chunk}");
            assert_eq!(typed, value, "answer after {chunk}");
        }
    }

    #[test]
    fn feed_stops_at_a_break_and_splits_anywhere() {
        let body = b"data: a\n\ndata: b\r\n\ndata: c\n\n";
        let mut d = SseDecoder::default();
        let mut seen = Vec::new();
        let flow = d.feed(body, |e| {
            seen.push(e.to_owned());
            if e == "b" {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        });
        assert!(flow.is_break());
        assert_eq!(seen, ["a", "b"]);
        // Split at every byte, the events are the same.
        for cut in 0..body.len() {
            let (x, y) = body.split_at(cut);
            assert_eq!(decode_all(&[x, y]), ["a", "b", "c"], "cut at {cut}");
        }
    }
}
