//! Serving metrics: what the endpoint did for every request, measured by the client on the
//! stream, as vLLM's `benchmark_serving` and NVIDIA GenAI-Perf define them (see
//! docs/benchmarks.md): time to first token, inter-token latency, time per output token,
//! end-to-end latency, tokens, outcome, and the aggregates (percentiles, throughput, goodput
//! under SLOs).

use std::collections::BTreeMap;
use std::time::Duration;

use planwave_llm::{ChatResponse, LlmError, ServerTimings};
use serde::{Deserialize, Serialize};

use super::cache::{CacheFigures, ServerClock};
use super::percentiles::Percentiles;

/// One model call as the client saw it. Times in ms; `start_ms` from the run's epoch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    pub role: String,
    pub task: Option<String>,
    pub start_ms: f64,
    /// Send to the first content token (the whole body for an unstreamed answer).
    pub ttft_ms: Option<f64>,
    /// Gaps between consecutive content chunks.
    #[serde(skip)]
    pub itl_ms: Vec<f64>,
    /// (e2e - ttft) / (output tokens - 1).
    pub tpot_ms: Option<f64>,
    pub e2e_ms: f64,
    pub prompt_tokens: u64,
    /// Of `prompt_tokens`, those the endpoint reported read from its prompt cache.
    #[serde(default)]
    pub cached_tokens: u64,
    pub output_tokens: u64,
    /// `ok`, `cancelled` (by the load test, mid-stream), or the error's class (`http_429`,
    /// `http_5xx`, `timeout`, `transport`, ...).
    pub outcome: String,
    pub retries: u32,
    /// Send to the first chunk of answer content, when the model streamed reasoning
    /// (`reasoning_content`) before it; otherwise the same as `ttft_ms`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_content_ms: Option<f64>,
    /// The server's own timings of the request (llama.cpp's `timings`), when it sent them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<ServerTimings>,
}

impl CallRecord {
    /// The mean of the gaps between content chunks (`None` with fewer than two chunks).
    pub fn itl_mean_ms(&self) -> Option<f64> {
        (!self.itl_ms.is_empty())
            .then(|| self.itl_ms.iter().sum::<f64>() / self.itl_ms.len() as f64)
    }

    /// The record of a call that began at `start_ms` and took `elapsed`.
    pub(crate) fn of(
        role: &str,
        task: Option<String>,
        start_ms: f64,
        elapsed: Duration,
        answer: &Result<ChatResponse, LlmError>,
    ) -> CallRecord {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let mut r = CallRecord {
            role: role.to_owned(),
            task,
            start_ms,
            ttft_ms: None,
            itl_ms: Vec::new(),
            tpot_ms: None,
            e2e_ms: ms(elapsed),
            prompt_tokens: 0,
            cached_tokens: 0,
            output_tokens: 0,
            outcome: "ok".into(),
            retries: 0,
            first_content_ms: None,
            server: None,
        };
        match answer {
            Ok(a) => {
                if a.finish_reason.as_deref() == Some(crate::probe::shaping::CANCELLED) {
                    r.outcome = "cancelled".into();
                }
                r.prompt_tokens = a.usage.prompt_tokens;
                r.cached_tokens = a.usage.cached_tokens;
                r.output_tokens = a.usage.completion_tokens + a.usage.reasoning_tokens;
                if let Some(t) = &a.timing {
                    // The client's own figures, from the send (not from the engine's call,
                    // which includes waiting at the client's limiter).
                    r.ttft_ms = Some(ms(t.ttft));
                    r.e2e_ms = ms(t.e2e);
                    r.retries = t.retries;
                    r.first_content_ms = t.first_content.map(ms);
                    r.server = t.server.as_deref().cloned();
                    // An answer in one piece has no inter-token timing to speak of.
                    if t.streamed {
                        r.itl_ms = t.itl().map(ms).collect();
                        r.tpot_ms = t.tpot(r.output_tokens).map(ms);
                    }
                }
            }
            Err(e) => r.outcome = error_class(e),
        }
        r
    }
}

/// The class of a failed call, from the HTTP status or transport failure it reports.
pub(crate) fn error_class(e: &LlmError) -> String {
    let text = e.to_string();
    if let Some(i) = text.find("HTTP ") {
        let code: String = text[i + 5..].chars().take(3).collect();
        if code.len() == 3 && code.chars().all(|c| c.is_ascii_digit()) {
            return match code.as_bytes()[0] {
                b'5' => "http_5xx".into(),
                _ => format!("http_{code}"),
            };
        }
    }
    let lower = text.to_lowercase();
    if lower.contains("timed out") || lower.contains("timeout") {
        "timeout".into()
    } else if e.is_retryable() {
        "transport".into()
    } else {
        "fatal".into()
    }
}

/// Service-level objectives: a request is good when it succeeded and meets each one given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Slo {
    pub ttft_ms: Option<f64>,
    pub tpot_ms: Option<f64>,
    pub e2e_ms: Option<f64>,
}

impl std::str::FromStr for Slo {
    type Err = String;
    /// `ttft=500ms,tpot=50ms,e2e=10s` (units ms or s; a bare number is ms).
    fn from_str(s: &str) -> Result<Slo, String> {
        let mut slo = Slo::default();
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, value) = part
                .split_once('=')
                .ok_or_else(|| format!("{part:?}: expected NAME=DURATION (e.g. ttft=500ms)"))?;
            let ms = parse_ms(value.trim())
                .ok_or_else(|| format!("{value:?} is not a duration (500ms, 2s, 1.5s)"))?;
            match name.trim() {
                "ttft" => slo.ttft_ms = Some(ms),
                "tpot" => slo.tpot_ms = Some(ms),
                "e2e" => slo.e2e_ms = Some(ms),
                o => return Err(format!("unknown SLO {o:?} (ttft, tpot, e2e)")),
            }
        }
        if slo == Slo::default() {
            return Err("no SLO given (e.g. ttft=500ms,tpot=50ms,e2e=10s)".into());
        }
        Ok(slo)
    }
}

/// `500ms`, `2s`, `1.5s`, `250` (ms).
pub(crate) fn parse_ms(text: &str) -> Option<f64> {
    let (num, scale) = if let Some(n) = text.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (text, 1.0)
    };
    num.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .map(|v| v * scale)
}

impl Slo {
    pub(crate) fn met_by(&self, r: &CallRecord) -> bool {
        let within = |limit: Option<f64>, v: Option<f64>| match (limit, v) {
            (None, _) | (Some(_), None) => true,
            (Some(l), Some(v)) => v <= l,
        };
        r.outcome == "ok"
            && within(self.ttft_ms, r.ttft_ms.or(Some(r.e2e_ms)))
            && within(self.tpot_ms, r.tpot_ms)
            && within(self.e2e_ms, Some(r.e2e_ms))
    }
}

/// The endpoint's own figures for the same requests (from `sim-llm serve`'s stats).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSide {
    /// Subagent answers the server completed during the run (the workload's requests).
    pub answers: u64,
    pub ttft_ms: Percentiles,
    pub queue_ms: Percentiles,
    pub e2e_ms: Percentiles,
    pub output_tokens: u64,
    pub max_in_flight: u64,
}

/// The aggregates of one run's requests (subagent calls; warmup excluded).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServingReport {
    pub requests: usize,
    pub ok: usize,
    /// Requests the load test cancelled mid-stream (`--cancel-rate`): neither ok nor errors.
    #[serde(default)]
    pub cancelled: usize,
    /// Requests per outcome class.
    pub outcomes: BTreeMap<String, u64>,
    /// Transport-level retries (inside the client).
    pub retries: u64,
    /// Requests that began during the warmup and are not counted.
    pub warmup_excluded: usize,
    /// First counted request sent to the last one finished.
    pub duration_s: f64,
    pub request_throughput: f64,
    pub output_tokens_per_sec: f64,
    pub prompt_tokens: u64,
    /// Of `prompt_tokens`, those read from the endpoint's prompt cache.
    #[serde(default)]
    pub cached_tokens: u64,
    pub output_tokens: u64,
    pub ttft_ms: Percentiles,
    pub itl_ms: Percentiles,
    pub tpot_ms: Percentiles,
    pub e2e_ms: Percentiles,
    pub prompt_tokens_per_request: Percentiles,
    pub output_tokens_per_request: Percentiles,
    /// The SLO goodput is counted against, as text (`ttft=500ms,...`).
    pub slo: Option<String>,
    /// Requests meeting every SLO.
    pub good: Option<usize>,
    /// Good requests per second.
    pub goodput: Option<f64>,
    /// The endpoint's own figures, when it reports them.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub server: Option<ServerSide>,
    /// The prompt cache's share and TTFT split by cache hit.
    #[serde(default)]
    pub cache: CacheFigures,
    /// Send to the first answer content (apart from TTFT when reasoning streams first).
    #[serde(default)]
    pub first_content_ms: Percentiles,
    /// The server's per-request timings against the client's, where it sends them.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub server_clock: Option<ServerClock>,
}

impl ServingReport {
    /// The aggregates of `calls` (the workload's requests), leaving out those that began
    /// in the first `warmup_ms` after the first one.
    pub(crate) fn of(
        calls: &[CallRecord],
        warmup_ms: f64,
        slo: Option<(&Slo, &str)>,
    ) -> ServingReport {
        let first = calls
            .iter()
            .map(|c| c.start_ms)
            .fold(f64::INFINITY, f64::min);
        let counted: Vec<&CallRecord> = calls
            .iter()
            .filter(|c| c.start_ms - first >= warmup_ms)
            .collect();
        let begin = counted
            .iter()
            .map(|c| c.start_ms)
            .fold(f64::INFINITY, f64::min);
        let end = counted
            .iter()
            .map(|c| c.start_ms + c.e2e_ms)
            .fold(f64::NEG_INFINITY, f64::max);
        let duration_s = if counted.is_empty() {
            0.0
        } else {
            ((end - begin) / 1000.0).max(0.0)
        };
        let per_sec = |n: f64| {
            if duration_s > 0.0 {
                n / duration_s
            } else {
                0.0
            }
        };
        let ok: Vec<&&CallRecord> = counted.iter().filter(|c| c.outcome == "ok").collect();
        let mut outcomes = BTreeMap::new();
        for c in &counted {
            *outcomes.entry(c.outcome.clone()).or_insert(0u64) += 1;
        }
        let output_tokens: u64 = ok.iter().map(|c| c.output_tokens).sum();
        let ok_calls: Vec<&CallRecord> = ok.iter().map(|c| **c).collect();
        let good = slo.map(|(s, _)| counted.iter().filter(|c| s.met_by(c)).count());
        ServingReport {
            requests: counted.len(),
            ok: ok.len(),
            cancelled: counted.iter().filter(|c| c.outcome == "cancelled").count(),
            outcomes,
            retries: counted.iter().map(|c| u64::from(c.retries)).sum(),
            warmup_excluded: calls.len() - counted.len(),
            duration_s,
            request_throughput: per_sec(ok.len() as f64),
            output_tokens_per_sec: per_sec(output_tokens as f64),
            prompt_tokens: ok.iter().map(|c| c.prompt_tokens).sum(),
            cached_tokens: ok.iter().map(|c| c.cached_tokens).sum(),
            output_tokens,
            ttft_ms: Percentiles::of(ok.iter().filter_map(|c| c.ttft_ms).collect()),
            itl_ms: Percentiles::of(ok.iter().flat_map(|c| c.itl_ms.iter().copied()).collect()),
            tpot_ms: Percentiles::of(ok.iter().filter_map(|c| c.tpot_ms).collect()),
            e2e_ms: Percentiles::of(ok.iter().map(|c| c.e2e_ms).collect()),
            prompt_tokens_per_request: Percentiles::of(
                ok.iter().map(|c| c.prompt_tokens as f64).collect(),
            ),
            output_tokens_per_request: Percentiles::of(
                ok.iter().map(|c| c.output_tokens as f64).collect(),
            ),
            slo: slo.map(|(_, text)| text.to_owned()),
            good,
            goodput: good.map(|g| per_sec(g as f64)),
            server: None,
            cache: CacheFigures::of(&ok_calls),
            first_content_ms: Percentiles::of(
                ok.iter().filter_map(|c| c.first_content_ms).collect(),
            ),
            server_clock: ServerClock::of(&ok_calls),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(start: f64, ttft: f64, e2e: f64, tokens: u64, outcome: &str) -> CallRecord {
        CallRecord {
            role: "subagent".into(),
            task: None,
            start_ms: start,
            ttft_ms: Some(ttft),
            itl_ms: vec![1.0, 3.0],
            tpot_ms: (tokens > 1).then(|| (e2e - ttft) / (tokens - 1) as f64),
            e2e_ms: e2e,
            prompt_tokens: 10,
            cached_tokens: 0,
            output_tokens: tokens,
            outcome: outcome.into(),
            retries: 0,
            ..CallRecord::default()
        }
    }

    #[test]
    fn slo_parses_units_and_names_bad_input() {
        let s: Slo = "ttft=500ms,tpot=50ms,e2e=10s".parse().unwrap();
        assert_eq!(
            (s.ttft_ms, s.tpot_ms, s.e2e_ms),
            (Some(500.0), Some(50.0), Some(10_000.0))
        );
        assert!(
            "ttft=fast"
                .parse::<Slo>()
                .unwrap_err()
                .contains("not a duration")
        );
        assert!(
            "itl=5ms"
                .parse::<Slo>()
                .unwrap_err()
                .contains("unknown SLO")
        );
        assert!("".parse::<Slo>().is_err());
    }

    #[test]
    fn goodput_counts_only_successes_within_every_slo() {
        let calls = vec![
            call(0.0, 100.0, 1000.0, 10, "ok"),   // good
            call(0.0, 600.0, 1000.0, 10, "ok"),   // ttft over
            call(0.0, 100.0, 1000.0, 2, "ok"),    // tpot 900 over
            call(0.0, 100.0, 100.0, 1, "ok"),     // one token: no tpot, good
            call(0.0, 10.0, 20.0, 0, "http_5xx"), // failed
        ];
        let slo: Slo = "ttft=500ms,tpot=200ms".parse().unwrap();
        let r = ServingReport::of(&calls, 0.0, Some((&slo, "ttft=500ms,tpot=200ms")));
        assert_eq!((r.requests, r.ok, r.good), (5, 4, Some(2)));
        assert_eq!(r.outcomes.get("http_5xx"), Some(&1));
        assert_eq!(r.duration_s, 1.0);
        assert_eq!(r.goodput, Some(2.0));
        assert_eq!(r.output_tokens, 23);
        assert_eq!(r.itl_ms.samples, 8);
    }

    #[test]
    fn warmup_leaves_out_the_first_requests() {
        let calls: Vec<CallRecord> = (0..10)
            .map(|i| call(f64::from(i) * 100.0, 5.0, 50.0, 5, "ok"))
            .collect();
        let r = ServingReport::of(&calls, 250.0, None);
        assert_eq!((r.requests, r.warmup_excluded), (7, 3));
        assert_eq!(r.goodput, None);
    }

    #[test]
    fn errors_are_classed_by_status_or_transport() {
        let t = |m: &str| LlmError::Transient {
            provider: "p".into(),
            model: "m".into(),
            message: m.into(),
            retry_after: None,
        };
        assert_eq!(error_class(&t("HTTP 429 Too Many Requests: x")), "http_429");
        assert_eq!(
            error_class(&t("HTTP 503 Service Unavailable: x")),
            "http_5xx"
        );
        assert_eq!(error_class(&t("request timed out after 5s")), "timeout");
        assert_eq!(error_class(&t("connection reset")), "transport");
    }
}
