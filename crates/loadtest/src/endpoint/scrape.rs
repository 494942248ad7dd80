//! `--scrape-metrics URL`: the target's Prometheus endpoint read every second during a run
//! (vLLM, SGLang and TGI expose one, as does `sim-llm serve`), so its queue length, running
//! requests and cache usage line up with the client's figures on the run's time axis.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// One scrape: when, and the value of every series kept (histogram buckets left out; their
/// `_sum` and `_count` kept).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricsSample {
    /// Seconds since the run's start, the time zero of the requests' own times (so the
    /// first sample, taken as the run begins, may be a little below 0).
    pub t_s: f64,
    pub series: BTreeMap<String, f64>,
}

/// What to scrape: the endpoint, and the series to keep.
#[derive(Clone, Debug, PartialEq)]
pub struct ScrapeTarget {
    pub url: String,
    /// Series names (without labels) to keep; a name also keeps its `_sum`, `_count`,
    /// `_total` and `_created` series. Empty: [`DEFAULT_SERIES`].
    pub series: Vec<String>,
}

/// The series kept when none are named: the serving figures of vLLM (and `sim-llm
/// serve`), SGLang, TGI and llama.cpp, those the HTML report draws among them.
pub const DEFAULT_SERIES: &[&str] = &[
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "vllm:prompt_tokens",
    "vllm:generation_tokens",
    "vllm:request_success",
    "vllm:num_preemptions",
    "vllm:time_to_first_token_seconds",
    "vllm:inter_token_latency_seconds",
    "vllm:time_per_output_token_seconds",
    "vllm:e2e_request_latency_seconds",
    "vllm:request_queue_time_seconds",
    "vllm:prefix_cache_queries",
    "vllm:prefix_cache_hits",
    "sglang:num_running_reqs",
    "sglang:num_queue_reqs",
    "sglang:token_usage",
    "sglang:gen_throughput",
    "sglang:cache_hit_rate",
    "sglang:prompt_tokens",
    "sglang:generation_tokens",
    "tgi_queue_size",
    "tgi_batch_current_size",
    "tgi_request_count",
    "tgi_request_success",
    "llamacpp:requests_processing",
    "llamacpp:requests_deferred",
    "llamacpp:kv_cache_usage_ratio",
    "llamacpp:prompt_tokens_total",
    "llamacpp:prompt_tokens_cached_total",
    "llamacpp:tokens_predicted_total",
    "llamacpp:prompt_seconds_total",
    "llamacpp:tokens_predicted_seconds_total",
    "llamacpp:n_busy_slots_per_decode",
];

/// The most series (label sets counted apart) one scrape keeps: a target exposing tens of
/// thousands made a report of over 100 MB.
pub const MAX_SERIES: usize = 200;

/// The largest body read from the endpoint; a larger one is not read (a 1.5 GB body once
/// took 1.7 GB of memory). A vLLM server's exposition is a few hundred kB.
pub const MAX_SCRAPE_BYTES: usize = 4 << 20;

/// Names shown of the series left out, to name what `--scrape-series` could ask for.
const EXAMPLES: usize = 10;

/// What the scrapes of a run left out, so a report says what it does not show.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ScrapeDropped {
    /// The most series one scrape left out because they were not among the names kept.
    pub not_named: u64,
    /// The most series one scrape left out past [`MAX_SERIES`].
    pub over_cap: u64,
    /// Scrapes not read because their body passed [`MAX_SCRAPE_BYTES`].
    pub oversized: u64,
    /// A few names (without labels) of the series left out.
    pub examples: Vec<String>,
}

impl ScrapeDropped {
    fn is_empty(&self) -> bool {
        self.not_named == 0 && self.over_cap == 0 && self.oversized == 0
    }

    /// One line saying what was left out, when anything was.
    pub fn describe(&self) -> Option<String> {
        if self.is_empty() {
            return None;
        }
        let mut parts = Vec::new();
        if self.not_named > 0 {
            parts.push(format!(
                "{} series not named by --scrape-series (e.g. {})",
                self.not_named,
                self.examples.join(", ")
            ));
        }
        if self.over_cap > 0 {
            parts.push(format!(
                "{} series past the {MAX_SERIES} kept",
                self.over_cap
            ));
        }
        if self.oversized > 0 {
            parts.push(format!(
                "{} scrapes over {} MiB, not read",
                self.oversized,
                MAX_SCRAPE_BYTES >> 20
            ));
        }
        Some(format!("scraped metrics left out {}", parts.join("; ")))
    }
}

/// A scraper running in the background until [`Scraper::stop`].
pub(crate) struct Scraper {
    begin: Instant,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<(Vec<MetricsSample>, ScrapeDropped)>,
}

/// Every scrape gives up after this long: a slow endpoint must not hold the run.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(2);

impl Scraper {
    /// Scrapes `target` now and then every `every`.
    pub(crate) fn start(target: ScrapeTarget, every: Duration) -> Scraper {
        let stop = CancellationToken::new();
        let token = stop.clone();
        let begin = Instant::now();
        let task = tokio::spawn(async move {
            let client = reqwest::Client::new();
            let keep = Keep::of(&target.series);
            let mut samples = Vec::new();
            let mut dropped = ScrapeDropped::default();
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // The first tick is immediate: a sample at the start, whatever the run's length.
            tick.tick().await;
            loop {
                let s = scrape(&client, &target.url, begin, &keep, &mut dropped).await;
                samples.extend(s);
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = token.cancelled() => break,
                }
            }
            // One more at the end, so the last sample holds the run's totals.
            let s = scrape(&client, &target.url, begin, &keep, &mut dropped).await;
            samples.extend(s);
            (samples, dropped)
        });
        Scraper { begin, stop, task }
    }

    /// Stops scraping and returns the samples, in time order, timed from `epoch` (the run's
    /// start; without it, from the first scrape), and what they left out, if anything.
    pub(crate) async fn stop(
        self,
        epoch: Option<Instant>,
    ) -> (Vec<MetricsSample>, Option<ScrapeDropped>) {
        self.stop.cancel();
        let (mut samples, dropped) = self.task.await.unwrap_or_default();
        if let Some(epoch) = epoch {
            let shift = match epoch.checked_duration_since(self.begin) {
                Some(later) => -later.as_secs_f64(),
                None => self.begin.duration_since(epoch).as_secs_f64(),
            };
            for s in &mut samples {
                s.t_s += shift;
            }
        }
        (samples, (!dropped.is_empty()).then_some(dropped))
    }
}

async fn scrape(
    client: &reqwest::Client,
    url: &str,
    begin: Instant,
    keep: &Keep,
    dropped: &mut ScrapeDropped,
) -> Option<MetricsSample> {
    let t_s = begin.elapsed().as_secs_f64();
    let resp = client.get(url).timeout(SCRAPE_TIMEOUT).send().await.ok()?;
    let mut resp = resp.error_for_status().ok()?;
    let mut body = Vec::new();
    let too_big = |n: u64| n > MAX_SCRAPE_BYTES as u64;
    if resp.content_length().is_some_and(too_big) {
        dropped.oversized += 1;
        return None;
    }
    while let Some(chunk) = resp.chunk().await.ok()? {
        if too_big((body.len() + chunk.len()) as u64) {
            dropped.oversized += 1;
            return None;
        }
        body.extend_from_slice(&chunk);
    }
    let series = parse_exposition(&String::from_utf8_lossy(&body), keep, dropped);
    Some(MetricsSample { t_s, series })
}

/// The series names kept.
pub(crate) struct Keep {
    names: Vec<String>,
}

/// What a kept name also keeps: a histogram's or summary's parts, a counter's total.
const SUFFIXES: [&str; 4] = ["_sum", "_count", "_total", "_created"];

impl Keep {
    /// `names`, or [`DEFAULT_SERIES`] when there are none.
    pub(crate) fn of(names: &[String]) -> Keep {
        let names = if names.is_empty() {
            DEFAULT_SERIES.iter().map(|n| (*n).to_owned()).collect()
        } else {
            names.to_vec()
        };
        Keep { names }
    }

    fn wants(&self, base: &str) -> bool {
        self.names.iter().any(|n| {
            base == n
                || SUFFIXES
                    .iter()
                    .any(|s| base.strip_suffix(s) == Some(n.as_str()))
        })
    }
}

/// The series kept of a Prometheus (or OpenMetrics) text exposition, `name{labels} value`,
/// at most [`MAX_SERIES`]; comments, histogram buckets and unparsable lines left out, and
/// the series not kept counted in `dropped`.
pub(crate) fn parse_exposition(
    text: &str,
    keep: &Keep,
    dropped: &mut ScrapeDropped,
) -> BTreeMap<String, f64> {
    let mut kept = BTreeMap::new();
    let (mut not_named, mut over_cap) = (0u64, 0u64);
    for l in text.lines() {
        if l.starts_with('#') || l.trim().is_empty() {
            continue;
        }
        // Labels may hold spaces; the value follows the closing brace (or the name).
        let Some(split_at) = l.rfind('}').map_or_else(|| l.find(' '), |i| Some(i + 1)) else {
            continue;
        };
        let (name, rest) = l.split_at(split_at);
        let Some(value) = rest.split_whitespace().next().and_then(|v| v.parse().ok()) else {
            continue;
        };
        let base = name.split('{').next().unwrap_or(name).trim();
        if base.ends_with("_bucket") {
            continue;
        }
        if !keep.wants(base) {
            not_named += 1;
            if dropped.examples.len() < EXAMPLES && !dropped.examples.iter().any(|e| e == base) {
                dropped.examples.push(base.to_owned());
            }
        } else if kept.len() >= MAX_SERIES && !kept.contains_key(name.trim()) {
            over_cap += 1;
        } else {
            kept.insert(name.trim().to_owned(), value);
        }
    }
    dropped.not_named = dropped.not_named.max(not_named);
    dropped.over_cap = dropped.over_cap.max(over_cap);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_series_and_leaves_out_buckets_and_comments() {
        let text = "# HELP x y\n# TYPE vllm:num_requests_running gauge\n\
            vllm:num_requests_running{model_name=\"m 1\"} 3\n\
            vllm:ttft_seconds_bucket{le=\"0.1\"} 2\n\
            vllm:ttft_seconds_count 5\n\
            up 1 1700000000\n# EOF\n";
        let keep = Keep::of(&[
            "vllm:num_requests_running".into(),
            "vllm:ttft_seconds".into(),
            "up".into(),
        ]);
        let mut dropped = ScrapeDropped::default();
        let s = parse_exposition(text, &keep, &mut dropped);
        assert_eq!(
            s.get("vllm:num_requests_running{model_name=\"m 1\"}"),
            Some(&3.0)
        );
        assert_eq!(s.get("vllm:ttft_seconds_count"), Some(&5.0));
        assert_eq!(s.get("up"), Some(&1.0));
        assert_eq!(s.len(), 3, "{s:?}");
        assert_eq!(dropped, ScrapeDropped::default());
    }

    #[test]
    fn series_not_named_or_past_the_cap_are_counted_and_named() {
        let mut text = String::from("other_thing 1\nother_thing{a=\"b\"} 2\n");
        for i in 0..MAX_SERIES + 5 {
            text.push_str(&format!("vllm:num_requests_running{{i=\"{i}\"}} 1\n"));
        }
        let mut dropped = ScrapeDropped::default();
        let s = parse_exposition(&text, &Keep::of(&[]), &mut dropped);
        assert_eq!(s.len(), MAX_SERIES);
        assert_eq!(
            dropped,
            ScrapeDropped {
                not_named: 2,
                over_cap: 5,
                oversized: 0,
                examples: vec!["other_thing".into()],
            }
        );
        assert_eq!(
            dropped.describe().as_deref(),
            Some(
                "scraped metrics left out 2 series not named by --scrape-series (e.g. other_thing); 5 series past the 200 kept"
            )
        );
    }
}
