//! What a server's prefix cache and its own clock say about a run's requests: the share of
//! prompt tokens it reported cached, TTFT apart for requests it served mostly from cache,
//! and the server's per-request timings (llama.cpp's `timings`) against the client's.

use serde::{Deserialize, Serialize};

use super::percentiles::Percentiles;
use super::serving::CallRecord;

/// A run whose cached share passes this, without a workload that asked for sharing, is
/// warned about: its TTFT describes the cache more than the server.
pub const CACHED_SHARE_WARNING: f64 = 0.2;

/// The prompt cache's part in a run's requests (successful ones, warmup excluded).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CacheFigures {
    /// Cached prompt tokens / prompt tokens (`None` without prompt tokens).
    pub cached_share: Option<f64>,
    /// Requests with more than half their prompt tokens cached.
    pub hits: usize,
    /// TTFT of the hits and of the rest.
    pub ttft_hit_ms: Percentiles,
    pub ttft_miss_ms: Percentiles,
    /// Why so much was cached, when more than a fifth was and the workload did not ask for
    /// a shared prefix (set by the front end, which knows the workload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// Whether the server served most of this request's prompt from its cache.
fn hit(c: &CallRecord) -> bool {
    c.cached_tokens * 2 > c.prompt_tokens
}

impl CacheFigures {
    pub(crate) fn of(ok: &[&CallRecord]) -> CacheFigures {
        let prompt: u64 = ok.iter().map(|c| c.prompt_tokens).sum();
        let cached: u64 = ok.iter().map(|c| c.cached_tokens).sum();
        let ttft = |want: bool| {
            Percentiles::of(
                ok.iter()
                    .filter(|c| hit(c) == want)
                    .filter_map(|c| c.ttft_ms)
                    .collect(),
            )
        };
        CacheFigures {
            cached_share: (prompt > 0).then(|| cached as f64 / prompt as f64),
            hits: ok.iter().filter(|c| hit(c)).count(),
            ttft_hit_ms: ttft(true),
            ttft_miss_ms: ttft(false),
            warning: None,
        }
    }

    /// More than [`CACHED_SHARE_WARNING`] of the prompt tokens came from the cache.
    pub fn mostly_cached(&self) -> bool {
        self.cached_share.is_some_and(|s| s > CACHED_SHARE_WARNING)
    }
}

/// The server's own clock for a run's requests, where it reported one (llama.cpp's
/// `timings`), and how far the client's figures are from it: the client, the network and
/// the server's queue.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerClock {
    /// Requests that came with the server's timings.
    pub requests: usize,
    /// The server's prompt processing per request (llama.cpp `prompt_ms`).
    pub prompt_ms: Percentiles,
    /// The server's time per generated token (llama.cpp `predicted_per_token_ms`).
    pub per_token_ms: Percentiles,
    /// Per request: client TTFT - the server's prompt processing.
    pub client_minus_server_ttft_ms: Percentiles,
    /// Per request: the client's mean inter-token latency - the server's time per token.
    pub client_minus_server_itl_ms: Percentiles,
    /// Prompt tokens the server's timings say came from its cache (`cache_n`).
    pub cache_n: u64,
}

impl ServerClock {
    /// `None` when no request came with the server's timings.
    pub(crate) fn of(ok: &[&CallRecord]) -> Option<ServerClock> {
        let timed: Vec<_> = ok
            .iter()
            .filter_map(|c| c.server.as_ref().map(|s| (c, s)))
            .collect();
        if timed.is_empty() {
            return None;
        }
        let ttft = timed
            .iter()
            .filter_map(|(c, s)| Some(c.ttft_ms? - s.prompt_ms?))
            .collect();
        let itl = timed
            .iter()
            .filter_map(|(c, s)| Some(c.itl_mean_ms()? - s.predicted_per_token_ms?))
            .collect();
        Some(ServerClock {
            requests: timed.len(),
            prompt_ms: Percentiles::of(timed.iter().filter_map(|(_, s)| s.prompt_ms).collect()),
            per_token_ms: Percentiles::of(
                timed
                    .iter()
                    .filter_map(|(_, s)| s.predicted_per_token_ms)
                    .collect(),
            ),
            client_minus_server_ttft_ms: Percentiles::of(ttft),
            client_minus_server_itl_ms: Percentiles::of(itl),
            cache_n: timed.iter().filter_map(|(_, s)| s.cache_n).sum(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use planwave_llm::ServerTimings;

    fn call(prompt: u64, cached: u64, ttft: f64, server: Option<ServerTimings>) -> CallRecord {
        CallRecord {
            ttft_ms: Some(ttft),
            itl_ms: vec![10.0, 14.0],
            prompt_tokens: prompt,
            cached_tokens: cached,
            server,
            ..CallRecord::default()
        }
    }

    #[test]
    fn the_cached_share_splits_ttft_and_warns_past_a_fifth() {
        let calls = [call(100, 90, 5.0, None), call(100, 0, 50.0, None)];
        let ok: Vec<&CallRecord> = calls.iter().collect();
        let f = CacheFigures::of(&ok);
        assert_eq!(f.cached_share, Some(0.45));
        assert_eq!(
            (f.hits, f.ttft_hit_ms.p50, f.ttft_miss_ms.p50),
            (1, Some(5.0), Some(50.0))
        );
        assert!(f.mostly_cached());
        assert!(!CacheFigures::of(&ok[1..]).mostly_cached());
    }

    #[test]
    fn client_minus_server_is_per_request() {
        let timings = ServerTimings {
            cache_n: Some(3),
            prompt_ms: Some(40.0),
            predicted_per_token_ms: Some(11.5),
            ..ServerTimings::default()
        };
        let calls = [call(10, 3, 42.0, Some(timings)), call(10, 0, 9.0, None)];
        let ok: Vec<&CallRecord> = calls.iter().collect();
        let c = ServerClock::of(&ok).expect("one request has timings");
        assert_eq!(c.requests, 1);
        assert_eq!(c.client_minus_server_ttft_ms.p50, Some(2.0));
        assert_eq!(c.client_minus_server_itl_ms.p50, Some(0.5));
        assert_eq!(c.cache_n, 3);
        assert_eq!(ServerClock::of(&ok[1..]), None);
    }
}
