//! `--scrape-metrics URL`: the target's Prometheus endpoint read every second during a run
//! (vLLM, SGLang and TGI expose one, as does `sim-llm serve`), so its queue length, running
//! requests and cache usage line up with the client's figures on the run's time axis.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// One scrape: when, and every series' value (histogram buckets left out; their `_sum` and
/// `_count` kept).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricsSample {
    /// Seconds since the run's start, the time zero of the requests' own times (so the
    /// first sample, taken as the run begins, may be a little below 0).
    pub t_s: f64,
    pub series: BTreeMap<String, f64>,
}

/// A scraper running in the background until [`Scraper::stop`].
pub(crate) struct Scraper {
    begin: Instant,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<Vec<MetricsSample>>,
}

/// Every scrape gives up after this long: a slow endpoint must not hold the run.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(2);

impl Scraper {
    /// Scrapes `url` now and then every `every`.
    pub(crate) fn start(url: String, every: Duration) -> Scraper {
        let stop = CancellationToken::new();
        let token = stop.clone();
        let begin = Instant::now();
        let task = tokio::spawn(async move {
            let client = reqwest::Client::new();
            let mut samples = Vec::new();
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // The first tick is immediate: a sample at the start, whatever the run's length.
            tick.tick().await;
            loop {
                if let Some(s) = scrape(&client, &url, begin).await {
                    samples.push(s);
                }
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = token.cancelled() => break,
                }
            }
            // One more at the end, so the last sample holds the run's totals.
            if let Some(s) = scrape(&client, &url, begin).await {
                samples.push(s);
            }
            samples
        });
        Scraper { begin, stop, task }
    }

    /// Stops scraping and returns the samples, in time order, timed from `epoch` (the run's
    /// start; without it, from the first scrape).
    pub(crate) async fn stop(self, epoch: Option<Instant>) -> Vec<MetricsSample> {
        self.stop.cancel();
        let mut samples = self.task.await.unwrap_or_default();
        if let Some(epoch) = epoch {
            let shift = match epoch.checked_duration_since(self.begin) {
                Some(later) => -later.as_secs_f64(),
                None => self.begin.duration_since(epoch).as_secs_f64(),
            };
            for s in &mut samples {
                s.t_s += shift;
            }
        }
        samples
    }
}

async fn scrape(client: &reqwest::Client, url: &str, begin: Instant) -> Option<MetricsSample> {
    let t_s = begin.elapsed().as_secs_f64();
    let resp = client.get(url).timeout(SCRAPE_TIMEOUT).send().await.ok()?;
    let text = resp.error_for_status().ok()?.text().await.ok()?;
    Some(MetricsSample {
        t_s,
        series: parse_exposition(&text),
    })
}

/// The series of a Prometheus (or OpenMetrics) text exposition: `name{labels} value`, with
/// comments, histogram buckets and unparsable lines left out.
pub(crate) fn parse_exposition(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            // Labels may hold spaces; the value follows the closing brace (or the name).
            let split_at = l.rfind('}').map_or_else(|| l.find(' '), |i| Some(i + 1))?;
            let (name, rest) = l.split_at(split_at);
            let value: f64 = rest.split_whitespace().next()?.parse().ok()?;
            let base = name.split('{').next().unwrap_or(name);
            (!base.ends_with("_bucket")).then(|| (name.trim().to_owned(), value))
        })
        .collect()
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
        let s = parse_exposition(text);
        assert_eq!(
            s.get("vllm:num_requests_running{model_name=\"m 1\"}"),
            Some(&3.0)
        );
        assert_eq!(s.get("vllm:ttft_seconds_count"), Some(&5.0));
        assert_eq!(s.get("up"), Some(&1.0));
        assert_eq!(s.len(), 3, "{s:?}");
    }
}
