//! `planwave loadtest` traffic options: open- and closed-loop arrival processes, plans started
//! at a rate, sweeps over rate or concurrency, SLOs, and the endpoint's own figures.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use planwave_loadtest::{ServerSide, ServingOptions, Slo, knee};
use planwave_plan::ValidatedPlan;
use planwave_sim_server::ServingStats;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::exit::InvalidInput;

#[derive(Debug, Args)]
pub struct TrafficOptions {
    /// A workload of N independent requests (a wide plan), instead of --shape/--tasks.
    #[arg(long, value_name = "N", conflicts_with_all = ["plan", "tasks", "shape"],
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub requests: Option<u64>,
    /// Open loop: send requests at R per second (gamma-distributed gaps, Poisson by
    /// default), whatever the earlier ones are doing. Several (`10,20,50`): a sweep, one run
    /// per rate. Needs --requests or --duration.
    #[arg(long, value_name = "R", value_delimiter = ',')]
    pub rate: Vec<f64>,
    /// Shape of the gamma distribution of gaps with --rate/--plan-rate: 1 is Poisson, below
    /// 1 burstier, above 1 more regular.
    #[arg(long, value_name = "SHAPE", default_value_t = 1.0)]
    pub burstiness: f64,
    /// With --rate: send rate x duration requests (e.g. 30s); with --plan-rate:
    /// start plan-rate x duration plans.
    #[arg(long, value_name = "DURATION", value_parser = planwave_config::parse_duration)]
    pub duration: Option<Duration>,
    /// Agentic open loop: start whole plans (the generated or given one) at R per second;
    /// each then runs by its own dataflow.
    #[arg(long, value_name = "R", conflicts_with_all = ["rate", "requests"])]
    pub plan_rate: Option<f64>,
    /// With --plan-rate: how many plans to start (default 10, or rate x --duration).
    #[arg(long, value_name = "N", requires = "plan_rate",
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub plans: Option<u64>,
    /// Requests that begin within this time of the first are not counted (e.g. 5s).
    #[arg(long, value_name = "DURATION", value_parser = planwave_config::parse_duration, default_value = "0s")]
    pub warmup: Duration,
    /// Service-level objectives for goodput: `ttft=500ms,tpot=50ms,e2e=10s` (any of them).
    #[arg(long, value_name = "SLO", value_parser = parse_slo)]
    pub slo: Option<SloArg>,
    /// Write a self-contained HTML report (inline SVG, no network) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Compare two saved `--json` outputs side by side (ratios B/A); runs nothing.
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    pub compare: Vec<PathBuf>,
}

#[derive(Clone, Debug)]
pub struct SloArg(pub Slo, pub String);

fn parse_slo(text: &str) -> Result<SloArg, String> {
    Ok(SloArg(text.parse()?, text.to_owned()))
}

/// One point of a run: the arrival process it uses.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Point {
    pub rate: Option<f64>,
    pub concurrency: Option<u64>,
}

impl Point {
    pub fn label(&self) -> Option<String> {
        match (self.rate, self.concurrency) {
            (Some(r), _) => Some(format!("rate={r}")),
            (None, Some(c)) => Some(format!("concurrency={c}")),
            _ => None,
        }
    }
}

impl TrafficOptions {
    /// Whether serving metrics are measured: against an endpoint, for request workloads,
    /// arrival processes and sweeps.
    pub fn wants_serving(&self, llm_url: bool, points: usize) -> bool {
        llm_url
            || points > 1
            || self.requests.is_some()
            || self.duration.is_some()
            || !self.rate.is_empty()
            || self.plan_rate.is_some()
            || self.slo.is_some()
            || self.html.is_some()
    }

    pub fn serving_options(&self) -> ServingOptions {
        ServingOptions {
            warmup: self.warmup,
            slo: self.slo.as_ref().map(|s| (s.0, s.1.clone())),
        }
    }

    /// The runs to make: one per rate or concurrency (a sweep over one of them).
    pub fn points(&self, concurrency: &[u64]) -> Result<Vec<Point>, InvalidInput> {
        if self.rate.len() > 1 && concurrency.len() > 1 {
            return Err(InvalidInput::one(
                "--rate/--concurrency",
                "sweep one of them: give several values to --rate or to --concurrency, not both",
            ));
        }
        for r in self.rate.iter().chain(self.plan_rate.as_ref()) {
            if !(r.is_finite() && *r > 0.0) {
                return Err(InvalidInput::one(
                    "--rate",
                    format!("{r} is not a positive rate"),
                ));
            }
        }
        if !self.rate.is_empty() && self.requests.is_none() && self.duration.is_none() {
            return Err(InvalidInput::one(
                "--rate",
                "say how many requests to send: --requests N or --duration D",
            ));
        }
        if self.duration.is_some() && self.rate.is_empty() && self.plan_rate.is_none() {
            return Err(InvalidInput::one(
                "--duration",
                "sets how many requests an open loop sends: give it with --rate or --plan-rate (a closed loop takes --requests)",
            ));
        }
        let conc = |c: Option<&u64>| c.copied();
        Ok(if self.rate.len() > 1 {
            self.rate
                .iter()
                .map(|r| Point {
                    rate: Some(*r),
                    concurrency: conc(concurrency.first()),
                })
                .collect()
        } else if concurrency.len() > 1 {
            concurrency
                .iter()
                .map(|c| Point {
                    rate: self.rate.first().copied(),
                    concurrency: Some(*c),
                })
                .collect()
        } else {
            vec![Point {
                rate: self.rate.first().copied(),
                concurrency: conc(concurrency.first()),
            }]
        })
    }

    /// Requests of a wide workload at this point (--requests, or rate x --duration).
    pub fn request_count(&self, point: &Point) -> Option<usize> {
        if let Some(n) = self.requests {
            return Some(n as usize);
        }
        match (point.rate, self.duration) {
            (Some(r), Some(d)) => Some((r * d.as_secs_f64()).ceil().max(1.0) as usize),
            _ => None,
        }
    }

    /// Plans to start with --plan-rate.
    pub fn plan_count(&self) -> usize {
        match (self.plans, self.plan_rate, self.duration) {
            (Some(n), _, _) => n as usize,
            (None, Some(r), Some(d)) => (r * d.as_secs_f64()).ceil().max(1.0) as usize,
            _ => 10,
        }
    }

    /// Per task of `plan`, when its first call may be sent.
    pub fn arrivals(
        &self,
        plan: &ValidatedPlan,
        point: &Point,
        seed: u64,
    ) -> Option<Vec<Duration>> {
        if let Some(r) = self.plan_rate {
            let starts =
                planwave_loadtest::gamma_arrivals(self.plan_count(), r, self.burstiness, seed);
            return Some(planwave_loadtest::per_copy(plan, &starts));
        }
        point
            .rate
            .map(|r| planwave_loadtest::gamma_arrivals(plan.len(), r, self.burstiness, seed))
    }
}

/// The sweep's summary: which point is the knee (where goodput, or request throughput
/// without an SLO, stops rising).
pub fn sweep_summary(runs: &[planwave_loadtest::LoadReport]) -> Option<Value> {
    if runs.len() < 2 {
        return None;
    }
    let served: Vec<_> = runs.iter().filter_map(|r| r.serving.as_ref()).collect();
    if served.len() != runs.len() {
        return None;
    }
    let by_goodput = served.iter().all(|s| s.goodput.is_some());
    let values: Vec<f64> = served
        .iter()
        .map(|s| s.goodput.unwrap_or(s.request_throughput))
        .collect();
    let k = knee(&values)?;
    Some(json!({
        "metric": if by_goodput { "goodput" } else { "request_throughput" },
        "points": runs.iter().zip(&values).map(|(r, v)| json!({"point": r.label, "value": v})).collect::<Vec<_>>(),
        "knee": k,
        "knee_point": runs[k].label,
        "knee_value": values[k],
        "rising_at_end": k == values.len() - 1,
    }))
}

/// The line printed under a sweep's table.
pub fn sweep_line(sweep: &Value) -> String {
    format!(
        "knee: {} ({} {:.1} req/s){}",
        sweep["knee_point"].as_str().unwrap_or("-"),
        sweep["metric"].as_str().unwrap_or(""),
        sweep["knee_value"].as_f64().unwrap_or(0.0),
        if sweep["rising_at_end"].as_bool() == Some(true) {
            "; still rising at the last point: the knee is further out"
        } else {
            ""
        }
    )
}

/// `sim-llm serve`'s `/planwave/stats`, when the endpoint is one (`None` for other servers).
pub async fn server_stats(llm_url: &str) -> Option<ServingStats> {
    let rest = llm_url.strip_prefix("http://")?;
    let host = rest.split('/').next()?;
    let read = async {
        let mut tcp = tokio::net::TcpStream::connect(host).await.ok()?;
        let req =
            format!("GET /planwave/stats HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n");
        tcp.write_all(req.as_bytes()).await.ok()?;
        let mut buf = Vec::new();
        tcp.read_to_end(&mut buf).await.ok()?;
        let text = String::from_utf8_lossy(&buf);
        let (head, body) = text.split_once("\r\n\r\n")?;
        if !head.starts_with("HTTP/1.1 200") {
            return None;
        }
        let stats: planwave_sim_server::ServerStats = serde_json::from_str(body).ok()?;
        Some(stats.serving)
    };
    tokio::time::timeout(Duration::from_secs(5), read)
        .await
        .ok()
        .flatten()
}

/// The server's figures for the workload's requests (subagent answers) it completed between
/// two snapshots.
pub fn server_side(before: &ServingStats, after: &ServingStats) -> ServerSide {
    let from = before.completed as usize;
    let requests: Vec<usize> = (from..after.ttft_ms.len())
        .filter(|&i| after.role.get(i).is_none_or(|r| r == "subagent"))
        .collect();
    let pick = |v: &[f64]| {
        planwave_loadtest::Percentiles::of(
            requests.iter().filter_map(|&i| v.get(i).copied()).collect(),
        )
    };
    ServerSide {
        answers: requests.len() as u64,
        ttft_ms: pick(&after.ttft_ms),
        queue_ms: pick(&after.queue_ms),
        e2e_ms: pick(&after.e2e_ms),
        output_tokens: after.output_tokens.saturating_sub(before.output_tokens),
        max_in_flight: after.max_in_flight,
    }
}
