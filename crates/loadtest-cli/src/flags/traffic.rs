//! `planwave loadtest` traffic options: open- and closed-loop arrival processes, plans started
//! at a rate, sweeps over rate or concurrency, SLOs, and the endpoint's own figures.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use planwave_runner::ops::InvalidInput;

use planwave_loadtest::{
    LatencyModel, LatencyModelError, SaturationRule, Slo, Traffic, TrafficError,
};

#[derive(Debug, Args)]
pub(crate) struct TrafficOptions {
    /// A workload of N independent requests (a wide plan), instead of --shape/--tasks.
    #[arg(long, value_name = "N", conflicts_with_all = ["plan", "tasks", "shape"],
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub(crate) requests: Option<u64>,
    /// Open loop: send requests at R per second (gamma-distributed gaps, Poisson by
    /// default), whatever the earlier ones are doing. Several (`10,20,50`): a sweep, one run
    /// per rate. Needs --requests or --duration.
    #[arg(long, value_name = "R", value_delimiter = ',', value_parser = planwave_config::parse_rate)]
    pub(crate) rate: Vec<f64>,
    /// Shape of the gamma distribution of gaps with --rate/--plan-rate: 1 is Poisson, below
    /// 1 burstier, above 1 more regular.
    #[arg(long, value_name = "SHAPE", default_value_t = 1.0, value_parser = planwave_config::parse_shape)]
    pub(crate) burstiness: f64,
    /// With --rate: send rate x duration requests (e.g. 30s); with --plan-rate:
    /// start plan-rate x duration plans.
    #[arg(long, value_name = "DURATION", value_parser = planwave_config::parse_duration)]
    pub(crate) duration: Option<Duration>,
    /// Agentic open loop: start whole plans (the generated or given one) at R per second;
    /// each then runs by its own dataflow.
    #[arg(long, value_name = "R", conflicts_with_all = ["rate", "requests"],
          value_parser = planwave_config::parse_rate)]
    pub(crate) plan_rate: Option<f64>,
    /// With --plan-rate: how many plans to start (default 10, or rate x --duration).
    #[arg(long, value_name = "N", requires = "plan_rate",
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub(crate) plans: Option<u64>,
    /// Requests that begin within this time of the first are not counted (e.g. 5s).
    #[arg(long, value_name = "DURATION", value_parser = planwave_config::parse_duration, default_value = "0s")]
    pub(crate) warmup: Duration,
    /// Service-level objectives for goodput: `ttft=500ms,tpot=50ms,e2e=10s` (any of them).
    #[arg(long, value_name = "SLO", value_parser = parse_slo)]
    pub(crate) slo: Option<SloArg>,
    /// In a sweep over --rate: a rate saturates the target when the requests completed per
    /// second fall below those sent by more than this share (or were sent below the rate
    /// asked, or TTFT p99 passes --slo's ttft); the sweep stops rising there and names it.
    #[arg(long, value_name = "SHARE", default_value_t = 0.1, value_parser = planwave_config::parse_share)]
    pub(crate) saturation_tolerance: f64,
    /// In a sweep over --rate: run every rate, also past the saturation point (still named).
    #[arg(long)]
    pub(crate) past_saturation: bool,
    /// Write a self-contained HTML report (inline SVG, no network) to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
    /// Compare two saved `--json` outputs side by side (ratios B/A); runs nothing.
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    pub(crate) compare: Vec<PathBuf>,
}

/// `--latency`: `fixed:MS` or `lognormal:MEAN_MS:SIGMA`, its numbers checked as
/// `--sim-latency-ms` and `--sim-sigma` check theirs.
pub(crate) fn parse_latency(text: &str) -> Result<LatencyModel, String> {
    let model: LatencyModel = text.parse().map_err(|e: LatencyModelError| e.to_string())?;
    let checked = match text.split(':').collect::<Vec<_>>().as_slice() {
        [_, ms] => planwave_config::parse_millis(ms).map(drop),
        [_, mean, sigma] => planwave_config::parse_millis(mean)
            .and_then(|_| planwave_config::parse_sigma(sigma))
            .map(drop),
        _ => Ok(()),
    };
    checked.map_err(|e| format!("latency {text:?}: {e}"))?;
    Ok(model)
}

#[derive(Clone, Debug)]
pub(crate) struct SloArg(pub(crate) Slo, pub(crate) String);

fn parse_slo(text: &str) -> Result<SloArg, String> {
    Ok(SloArg(text.parse()?, text.to_owned()))
}

impl TrafficOptions {
    /// The traffic these flags ask for, with `--concurrency`'s values.
    pub(crate) fn traffic(&self, concurrency: &[u64]) -> Traffic {
        Traffic {
            requests: self.requests,
            rate: self.rate.clone(),
            concurrency: concurrency.to_vec(),
            burstiness: self.burstiness,
            duration: self.duration,
            plan_rate: self.plan_rate,
            plans: self.plans,
            warmup: self.warmup,
            slo: self.slo.as_ref().map(|s| (s.0, s.1.clone())),
            saturation: SaturationRule {
                tolerance: self.saturation_tolerance,
                stop: !self.past_saturation,
            },
            // Set by the sessions flags, which make the conversations.
            sessions: None,
        }
    }
}

/// Contradictory traffic, named by its flags.
pub(crate) fn invalid(e: &TrafficError) -> InvalidInput {
    match e {
        TrafficError::BothSwept => InvalidInput::one(
            "--rate/--concurrency",
            "sweep one of them: give several values to --rate or to --concurrency, not both",
        ),
        TrafficError::NotPositiveRate(r) => {
            InvalidInput::one("--rate", format!("{r} is not a positive rate"))
        }
        TrafficError::RateWithoutCount => InvalidInput::one(
            "--rate",
            "say how many requests to send: --requests N or --duration D",
        ),
        TrafficError::TooMany { what, .. } => InvalidInput::one(
            if *what == "plans" {
                "--plan-rate/--duration"
            } else {
                "--rate/--duration"
            },
            e.to_string(),
        ),
        TrafficError::DurationWithoutRate => InvalidInput::one(
            "--duration",
            "sets how many requests an open loop sends: give it with --rate or --plan-rate (a closed loop takes --requests)",
        ),
    }
}
