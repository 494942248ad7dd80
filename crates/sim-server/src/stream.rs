//! SSE answers: the fault-injecting stream of a finished answer, and the paced stream that
//! forwards the simulator's deltas as they are generated.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use planwave_llm::{ChatRequest, ChatResponse, DeltaSink, LlmError, StreamEvent};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::faults::Fault;
use crate::server::{AppState, CompletionRequest, error_response, tool_call_deltas, usage_json};
use crate::serving::{AnswerTiming, Slot};

/// Characters per content chunk when the simulator hands over a whole answer at once.
const CHUNK_CHARS: usize = 24;

/// The constant parts of one stream's content chunks, its id and model quoted once: at zero
/// latency the server's own formatting is a fair share of a load test's CPU, so a chunk is
/// written straight into the body (no `Value` tree, no string per chunk).
pub(crate) struct ChunkFrame {
    head: Vec<u8>,
}

const CHUNK_TAIL: &[u8] = b"},\"finish_reason\":null}]}\n\n";

impl ChunkFrame {
    pub(crate) fn new(id: &str, model: &str) -> ChunkFrame {
        let mut head = b"data: {\"id\":".to_vec();
        escaped(&mut head, id);
        head.extend_from_slice(b",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":");
        escaped(&mut head, model);
        head.extend_from_slice(b",\"choices\":[{\"index\":0,\"delta\":{\"content\":");
        ChunkFrame { head }
    }

    /// One content chunk carrying `text`, appended to `out`.
    pub(crate) fn push(&self, out: &mut Vec<u8>, text: &str) {
        out.extend_from_slice(&self.head);
        escaped(out, text);
        out.extend_from_slice(CHUNK_TAIL);
    }

    /// `text` as content chunks of [`CHUNK_CHARS`] characters each.
    pub(crate) fn push_pieces(&self, out: &mut Vec<u8>, text: &str) {
        for piece in pieces(text) {
            self.push(out, piece);
        }
    }
}

/// `text` in pieces of [`CHUNK_CHARS`] characters (the last may be shorter).
fn pieces(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let cut = rest
            .char_indices()
            .nth(CHUNK_CHARS)
            .map_or(rest.len(), |(i, _)| i);
        let (piece, after) = rest.split_at(cut);
        rest = after;
        Some(piece)
    })
}

/// `s` as a JSON string, exactly as serde_json writes it.
fn escaped(out: &mut Vec<u8>, s: &str) {
    // Writing to a Vec cannot fail.
    let _ = serde_json::to_writer(out, s);
}

pub(crate) fn chunk(id: &str, model: &str, delta: Value, finish: Option<&str>) -> String {
    let c = json!({
        "id": id, "object": "chat.completion.chunk", "created": 0, "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    });
    format!("data: {c}\n\n")
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn stream_response(
    id: String,
    model: String,
    content: String,
    tool_calls: Vec<Value>,
    usage: Option<Value>,
    fault: Fault,
    stall: Duration,
) -> Response {
    let (tx, mut rx) = mpsc::channel::<String>(16);
    tokio::spawn(async move {
        let frame = ChunkFrame::new(&id, &model);
        let mut events = vec![
            ": keep-alive\n\n".to_owned(),
            chunk(
                &id,
                &model,
                json!({"role": "assistant", "content": ""}),
                None,
            ),
        ];
        events.extend(pieces(&content).map(|p| {
            let mut c = Vec::new();
            frame.push(&mut c, p);
            // `push` writes only UTF-8 (ASCII framing around JSON strings).
            String::from_utf8(c).unwrap_or_default()
        }));
        let finish = if tool_calls.is_empty() {
            "stop"
        } else {
            events.push(chunk(&id, &model, json!({"tool_calls": tool_calls}), None));
            "tool_calls"
        };
        let body_end = events.len();
        events.push(chunk(&id, &model, json!({}), Some(finish)));
        if let Some(u) = usage {
            let c = json!({"id": id, "object": "chat.completion.chunk", "created": 0,
                           "model": model, "choices": [], "usage": u});
            events.push(format!("data: {c}\n\n"));
        }
        events.push("data: [DONE]\n\n".to_owned());
        let half = 2 + (body_end - 2) / 2;
        for (i, ev) in events.into_iter().enumerate() {
            if i == half {
                match fault {
                    Fault::Truncated => return,
                    Fault::Malformed => {
                        let _ = tx
                            .send("data: {\"choices\": [{\"delta\": {\"content\n\n".into())
                            .await;
                        return;
                    }
                    Fault::Stall => {
                        tokio::select! {
                            _ = tokio::time::sleep(stall) => {}
                            _ = tx.closed() => return,
                        }
                    }
                    _ => {}
                }
            }
            if tx.send(ev).await.is_err() {
                return;
            }
        }
    });
    let stream = futures::stream::poll_fn(move |cx| {
        rx.poll_recv(cx)
            .map(|o| o.map(|s| Ok::<Bytes, Infallible>(Bytes::from(s))))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

/// What the simulator's task sends the stream.
enum Piece {
    Delta(String),
    // Boxed: an answer (with its timing) is far larger than a delta.
    Done(Result<Box<ChatResponse>, LlmError>),
}

/// The state of a paced stream between two body chunks.
struct Paced {
    rx: mpsc::UnboundedReceiver<Piece>,
    pending: Option<Piece>,
    st: Arc<AppState>,
    id: String,
    model: String,
    frame: ChunkFrame,
    include_usage: bool,
    timing: AnswerTiming,
    /// Held until the stream ends: the slot of the concurrency limit.
    slot: Option<Slot>,
    started: bool,
    /// When the last content piece went out (for the inter-token histogram).
    last_piece: Option<Instant>,
}

/// Streams the answer as the simulator generates it (through its delta sink), so the
/// simulator's token rate and jitter are what the client sees. Headers go out with the first
/// token (or the error, as a status, when the simulator refuses).
pub(crate) async fn paced_stream(
    st: Arc<AppState>,
    req: &CompletionRequest,
    mut chat: ChatRequest,
    id: String,
    model: String,
    slot: Slot,
    timing: AnswerTiming,
) -> Response {
    let (tx, mut rx) = mpsc::unbounded_channel::<Piece>();
    let sink_tx = tx.clone();
    chat.on_delta = Some(DeltaSink::new(move |e| {
        if let StreamEvent::Delta(d) = e {
            let _ = sink_tx.send(Piece::Delta(d.to_owned()));
        }
    }));
    let sim_state = st.clone();
    let length = req.length();
    let cached = timing.cached_tokens;
    tokio::spawn(async move {
        let answer =
            crate::prefix::with_cached(sim_state.sim.chat_bounded(chat, length).await, cached);
        let _ = tx.send(Piece::Done(answer.map(Box::new)));
    });
    let first = match rx.recv().await {
        Some(Piece::Done(Err(e))) => return error_response(e),
        Some(p) => p,
        None => return StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    };
    let include_usage = req.include_usage() && !st.cfg.no_usage;
    let state = Paced {
        rx,
        pending: Some(first),
        st,
        frame: ChunkFrame::new(&id, &model),
        id,
        model,
        include_usage,
        timing,
        slot: Some(slot),
        started: false,
        last_piece: None,
    };
    let body = futures::stream::unfold(state, |mut s| async move {
        let piece = match s.pending.take() {
            Some(p) => p,
            None => s.rx.recv().await?,
        };
        let mut out = Vec::new();
        s.render(piece, &mut out)?;
        // Pieces already waiting go out in the same write (at zero latency the whole
        // answer and its end are there at once): one body frame, not one per piece.
        while s.slot.is_some()
            && let Ok(next) = s.rx.try_recv()
        {
            s.render(next, &mut out)?;
        }
        Some((Ok::<Bytes, Infallible>(Bytes::from(out)), s))
    });
    sse(Body::from_stream(body))
}

impl Paced {
    /// The SSE text of one piece, appended to `out`; `None` once the answer has ended.
    fn render(&mut self, piece: Piece, out: &mut Vec<u8>) -> Option<()> {
        self.slot.as_ref()?;
        if !self.started {
            self.started = true;
            out.extend_from_slice(b": keep-alive\n\n");
            out.extend_from_slice(
                chunk(
                    &self.id,
                    &self.model,
                    json!({"role": "assistant", "content": ""}),
                    None,
                )
                .as_bytes(),
            );
        }
        match piece {
            Piece::Delta(d) => {
                let now = Instant::now();
                if self.timing.first_token.is_none() {
                    self.timing.first_token = Some(now);
                }
                if let Some(last) = self.last_piece {
                    self.st.metrics.token_gap((now - last).as_secs_f64());
                }
                self.last_piece = Some(now);
                self.frame.push_pieces(out, &d);
            }
            Piece::Done(Ok(answer)) => {
                self.finish(&answer, out);
            }
            // The simulator refuses before any content; after it, end the stream short.
            Piece::Done(Err(_)) => {
                self.slot = None;
            }
        }
        Some(())
    }

    /// The closing chunks, and the server's record of the answer.
    fn finish(&mut self, answer: &ChatResponse, out: &mut Vec<u8>) {
        let tool_calls = tool_call_deltas(answer);
        let finish = if tool_calls.is_empty() {
            "stop"
        } else {
            out.extend_from_slice(
                chunk(
                    &self.id,
                    &self.model,
                    json!({"tool_calls": tool_calls}),
                    None,
                )
                .as_bytes(),
            );
            "tool_calls"
        };
        out.extend_from_slice(chunk(&self.id, &self.model, json!({}), Some(finish)).as_bytes());
        if self.include_usage {
            let c = json!({"id": self.id, "object": "chat.completion.chunk", "created": 0,
                           "model": self.model, "choices": [], "usage": usage_json(answer)});
            out.extend_from_slice(format!("data: {c}\n\n").as_bytes());
        }
        out.extend_from_slice(b"data: [DONE]\n\n");
        self.timing.output_tokens = answer.usage.completion_tokens;
        self.st.answered(&self.timing, Instant::now());
        // The answer is complete: free the slot now, not when the connection lets go.
        self.slot = None;
    }
}

fn sse(body: Body) -> Response {
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(body)
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_chunk_is_the_json_of_the_value_form() {
        let mut out = Vec::new();
        ChunkFrame::new("c-1", "m\"x").push(&mut out, "line\n\u{7f}特斯拉");
        let out = String::from_utf8(out).unwrap();
        let direct: Value =
            serde_json::from_str(out.strip_prefix("data: ").unwrap().trim()).unwrap();
        let built = chunk(
            "c-1",
            "m\"x",
            json!({"content": "line\n\u{7f}特斯拉"}),
            None,
        );
        let built: Value =
            serde_json::from_str(built.strip_prefix("data: ").unwrap().trim()).unwrap();
        assert_eq!(direct, built);
        assert!(out.ends_with("\n\n"));
    }

    #[test]
    fn pieces_are_whole_characters() {
        let text: String = "特".repeat(CHUNK_CHARS * 2 + 1);
        let got: Vec<usize> = pieces(&text).map(|p| p.chars().count()).collect();
        assert_eq!(got, vec![CHUNK_CHARS, CHUNK_CHARS, 1]);
        assert_eq!(pieces("").count(), 0);
    }
}
