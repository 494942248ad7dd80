//! The endpoint's own figures: `sim-llm serve`'s `GET /planwave/stats`, read before and after
//! a run, so the client's measurements can be checked against the server's for the same
//! requests.

use std::time::Duration;

use planwave_sim::{ServerStats, ServingStats};

use crate::figures::percentiles::Percentiles;
use crate::figures::serving::ServerSide;

/// How long the stats may take: they are a side figure, never worth stalling the sweep.
const STATS_TIMEOUT: Duration = Duration::from_secs(5);

/// `/planwave/stats` of the server behind `llm_url` (an OpenAI-compatible base URL), when it
/// is `sim-llm serve`; `None` for any other server, or when it does not answer in time.
///
/// Only plain `http` URLs are asked: `sim-llm serve` speaks nothing else, and a TLS URL is
/// somebody else's gateway, which gets no request beyond the workload's. Credentials in the
/// URL are not sent with it, and no proxy is used: the stats come from the server itself.
pub(crate) async fn server_stats(llm_url: &str) -> Option<ServingStats> {
    let mut url = reqwest::Url::parse(llm_url).ok()?;
    if url.scheme() != "http" {
        return None;
    }
    url.set_username("").ok()?;
    url.set_password(None).ok()?;
    url.set_path("/planwave/stats");
    url.set_query(None);
    let client = planwave_tls::http_client()
        .timeout(STATS_TIMEOUT)
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .ok()?;
    let answer = client.get(url).send().await.ok()?;
    if answer.status() != reqwest::StatusCode::OK {
        return None;
    }
    let stats: ServerStats = answer.json().await.ok()?;
    Some(stats.serving)
}

/// The server's figures for the workload's requests (subagent answers) it completed between
/// two snapshots.
pub(crate) fn server_side(before: &ServingStats, after: &ServingStats) -> ServerSide {
    let from = before.completed as usize;
    let requests: Vec<usize> = (from..after.ttft_ms.len())
        .filter(|&i| after.role.get(i).is_none_or(|r| r == "subagent"))
        .collect();
    let pick =
        |v: &[f64]| Percentiles::of(requests.iter().filter_map(|&i| v.get(i).copied()).collect());
    ServerSide {
        answers: requests.len() as u64,
        ttft_ms: pick(&after.ttft_ms),
        queue_ms: pick(&after.queue_ms),
        e2e_ms: pick(&after.e2e_ms),
        output_tokens: after.output_tokens.saturating_sub(before.output_tokens),
        max_in_flight: after.max_in_flight,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use planwave_sim_server::{SimServer, SimServerConfig};

    #[test]
    fn server_side_counts_only_the_subagent_answers_after_the_first_snapshot() {
        let before = ServingStats {
            completed: 1,
            output_tokens: 5,
            ..ServingStats::default()
        };
        let after = ServingStats {
            completed: 4,
            max_in_flight: 2,
            ttft_ms: vec![100.0, 10.0, 20.0, 30.0],
            queue_ms: vec![0.0, 1.0, 2.0, 3.0],
            e2e_ms: vec![200.0, 40.0, 50.0, 60.0],
            role: vec!["subagent", "subagent", "integrator", "subagent"]
                .into_iter()
                .map(String::from)
                .collect(),
            output_tokens: 35,
            ..ServingStats::default()
        };
        let s = server_side(&before, &after);
        assert_eq!((s.answers, s.output_tokens, s.max_in_flight), (2, 30, 2));
        assert_eq!((s.ttft_ms.samples, s.ttft_ms.max), (2, Some(30.0)));
        assert_eq!(s.e2e_ms.p50, Some(40.0));
    }

    #[tokio::test]
    async fn stats_come_from_a_sim_llm_server_and_from_nothing_else() {
        let server = SimServer::start(
            "127.0.0.1:0".parse().expect("address"),
            SimServerConfig::default(),
        )
        .await
        .expect("sim-llm serve");
        let url = server.base_url();
        let stats = server_stats(&url).await.expect("sim-llm reports its stats");
        assert_eq!(stats, server.stats().serving);
        let with_credentials = url.replacen("http://", "http://user:secret@", 1);
        assert!(server_stats(&with_credentials).await.is_some());
        let tls = url.replacen("http://", "https://", 1);
        assert_eq!(server_stats(&tls).await, None, "only plain http is asked");
        let addr = server.addr();
        server.shutdown(Duration::from_secs(1)).await;
        assert_eq!(server_stats(&format!("http://{addr}/v1")).await, None);
        assert_eq!(server_stats("not a url").await, None);
    }
}
