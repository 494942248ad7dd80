//! Streaming hooks shared by every provider: a sink that sees an answer's text as it arrives,
//! and the client-side timing of one call.
//!
//! The sink travels inside the [`ChatRequest`](crate::ChatRequest) rather than through a
//! second trait method, so every wrapper provider (tracing, recording, probes) passes it on
//! without knowing it exists. Providers that do not stream call it once with the whole text.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// What a streaming consumer is told.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamEvent<'a> {
    /// The next piece of the answer's content.
    Delta(&'a str),
    /// Everything delivered so far is void: the provider is retrying the call from the
    /// start (a stream broke, a transient error). Incremental parsers start over.
    Restart,
}

type SinkFn = dyn Fn(StreamEvent<'_>) + Send + Sync;

/// A callback for [`StreamEvent`]s. Cheap to clone; called on the provider's task, so it must
/// not block (push into a channel, update a parser).
#[derive(Clone)]
pub struct DeltaSink(Arc<SinkFn>);

impl DeltaSink {
    pub fn new(f: impl Fn(StreamEvent<'_>) + Send + Sync + 'static) -> DeltaSink {
        DeltaSink(Arc::new(f))
    }

    pub fn emit(&self, event: StreamEvent<'_>) {
        (self.0)(event)
    }
}

impl fmt::Debug for DeltaSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DeltaSink")
    }
}

/// Two requests are equal whatever their sinks: a sink is where the answer goes, not part of
/// what is asked.
impl PartialEq for DeltaSink {
    fn eq(&self, _: &DeltaSink) -> bool {
        true
    }
}

/// Client-side timing of one call, as serving benchmarks (vLLM `benchmark_serving`,
/// GenAI-Perf) measure it: from the moment the request is sent (after any wait at the
/// client's own limiter) to each piece of content received.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CallTiming {
    /// Waiting at the client's limiter before the successful attempt was sent.
    pub queued: Duration,
    /// Send to the first content (or tool-call) chunk: time to first token. For an answer
    /// that was not streamed, the arrival of the whole body.
    pub ttft: Duration,
    /// Arrival of every content-bearing chunk after the first, measured from the send; the
    /// gaps between consecutive entries (starting at `ttft`) are inter-token latencies.
    pub chunks: Vec<Duration>,
    /// Send to the end of the answer.
    pub e2e: Duration,
    /// Whether the answer came as a stream (false: one JSON body, or a provider without
    /// streaming).
    pub streamed: bool,
    /// Attempts before the one that succeeded (transport-level retries).
    pub retries: u32,
    /// The server reported no usage, so the client estimated it from the text: a caller
    /// with a real tokenizer may count it again.
    pub usage_estimated: bool,
    /// Send to the first chunk of answer content, apart from `ttft` when the model streams
    /// reasoning first (`reasoning_content`); `None` when no content came.
    pub first_content: Option<Duration>,
    /// The server's own clock for this request, when it reports one (llama.cpp's `timings`);
    /// boxed: every answer carries a `CallTiming`, few carry timings.
    pub server: Option<Box<ServerTimings>>,
}

/// A server's own timings of one request, as llama.cpp reports them in the answer's
/// `timings` object (its last stream chunk): prompt processing and generation, in ms and
/// tokens. Fields the server leaves out are `None`.
#[derive(Clone, Debug, Default, PartialEq, serde::Deserialize, serde::Serialize)]
pub struct ServerTimings {
    /// Prompt tokens read from the server's cache (not processed).
    #[serde(default)]
    pub cache_n: Option<u64>,
    /// Prompt tokens processed.
    #[serde(default)]
    pub prompt_n: Option<u64>,
    #[serde(default)]
    pub prompt_ms: Option<f64>,
    /// Tokens generated.
    #[serde(default)]
    pub predicted_n: Option<u64>,
    #[serde(default)]
    pub predicted_ms: Option<f64>,
    #[serde(default)]
    pub predicted_per_token_ms: Option<f64>,
}

impl CallTiming {
    /// Inter-token latencies: gaps between consecutive content chunks.
    pub fn itl(&self) -> impl Iterator<Item = Duration> + '_ {
        std::iter::once(self.ttft)
            .chain(self.chunks.iter().copied())
            .zip(self.chunks.iter().copied())
            .map(|(a, b)| b.saturating_sub(a))
    }

    /// Time per output token after the first: `(e2e - ttft) / (tokens - 1)`; None for a
    /// single-token answer.
    pub fn tpot(&self, output_tokens: u64) -> Option<Duration> {
        (output_tokens > 1).then(|| {
            self.e2e.saturating_sub(self.ttft) / (output_tokens - 1).min(u32::MAX as u64) as u32
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn itl_are_gaps_from_first_token() {
        let t = CallTiming {
            ttft: Duration::from_millis(100),
            chunks: vec![Duration::from_millis(120), Duration::from_millis(150)],
            e2e: Duration::from_millis(160),
            ..CallTiming::default()
        };
        let gaps: Vec<_> = t.itl().collect();
        assert_eq!(gaps, [Duration::from_millis(20), Duration::from_millis(30)]);
        assert_eq!(t.tpot(4), Some(Duration::from_millis(20)));
        assert_eq!(t.tpot(1), None);
    }

    #[test]
    fn sink_sees_events_in_order() {
        let seen = Arc::new(std::sync::Mutex::new(String::new()));
        let s = seen.clone();
        let sink = DeltaSink::new(move |e| match e {
            StreamEvent::Delta(d) => s.lock().unwrap().push_str(d),
            StreamEvent::Restart => s.lock().unwrap().clear(),
        });
        sink.emit(StreamEvent::Delta("ab"));
        sink.emit(StreamEvent::Restart);
        sink.emit(StreamEvent::Delta("c"));
        sink.emit(StreamEvent::Delta("d"));
        assert_eq!(*seen.lock().unwrap(), "cd");
    }
}
