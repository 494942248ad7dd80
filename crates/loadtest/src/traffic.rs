//! Traffic: open- and closed-loop arrival processes, plans started at a rate, and the points
//! of a sweep over rate or concurrency.

use std::sync::Arc;
use std::time::Duration;

use planwave_plan::ValidatedPlan;

use crate::figures::saturation::SaturationRule;
use crate::figures::serving::Slo;
use crate::run::ServingOptions;
use crate::workload::arrivals::{gamma_arrivals, per_copy};
use crate::workload::sessions::SessionMap;

/// How requests arrive, and which points a sweep measures.
#[derive(Clone, Debug)]
pub struct Traffic {
    /// A workload of N independent requests (a wide plan) instead of the plan.
    pub requests: Option<u64>,
    /// Open loop at R requests per second; several: a sweep, one run per rate.
    pub rate: Vec<f64>,
    /// Most subagents in flight (a closed loop of N clients with `requests`); several: a
    /// sweep, one run per value.
    pub concurrency: Vec<u64>,
    /// Shape of the gamma distribution of gaps (1 is Poisson).
    pub burstiness: f64,
    /// With `rate`: send rate x duration requests; with `plan_rate`: start that many plans.
    pub duration: Option<Duration>,
    /// Start whole plans at R per second (the agentic open loop).
    pub plan_rate: Option<f64>,
    /// With `plan_rate`: how many plans (default 10, or rate x duration).
    pub plans: Option<u64>,
    /// Requests that begin within this time of the first are not counted.
    pub warmup: Duration,
    /// The SLO goodput is counted against, with its text.
    pub slo: Option<(Slo, String)>,
    /// When a rate sweep stops rising (the saturation point).
    pub saturation: SaturationRule,
    /// Multi-turn sessions: `rate` starts their conversations (its first turns; the later
    /// ones follow their answers), and the conversations are the requests, so a rate needs
    /// no count. Each rate of a sweep starts the same conversations.
    pub sessions: Option<Arc<SessionMap>>,
}

impl Default for Traffic {
    fn default() -> Traffic {
        Traffic {
            requests: None,
            rate: Vec::new(),
            concurrency: Vec::new(),
            burstiness: 1.0,
            duration: None,
            plan_rate: None,
            plans: None,
            warmup: Duration::ZERO,
            slo: None,
            saturation: SaturationRule::default(),
            sessions: None,
        }
    }
}

/// Traffic that cannot be run.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TrafficError {
    #[error("a sweep over both rate and concurrency")]
    BothSwept,
    #[error("{0} is not a positive rate")]
    NotPositiveRate(f64),
    #[error("an open loop at a rate needs a request count or a duration")]
    RateWithoutCount,
    #[error("a duration sets how many requests an open loop sends, and there is no rate")]
    DurationWithoutRate,
    /// Rate x duration asks for more requests (or plans) than a run may make.
    #[error("{rate} per second for {secs} s is more than {most} {what}")]
    TooMany {
        rate: f64,
        secs: f64,
        most: u64,
        what: &'static str,
    },
}

/// The most requests of a wide workload (as `--requests` takes).
pub(crate) const MAX_REQUESTS: u64 = 10_000_000;
/// The most plans started at a rate (as `--plans` takes).
pub(crate) const MAX_PLANS: u64 = 100_000;

/// One point of a sweep: the arrival process one run uses.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Point {
    pub(crate) rate: Option<f64>,
    pub(crate) concurrency: Option<u64>,
}

impl Point {
    /// `rate=20` or `concurrency=64`, as runs are labelled.
    pub(crate) fn label(&self) -> Option<String> {
        match (self.rate, self.concurrency) {
            (Some(r), _) => Some(format!("rate={r}")),
            (None, Some(c)) => Some(format!("concurrency={c}")),
            _ => None,
        }
    }
}

impl Traffic {
    /// The runs to make: one per rate or concurrency (a sweep over one of them).
    pub(crate) fn points(&self) -> Result<Vec<Point>, TrafficError> {
        let concurrency = &self.concurrency;
        if self.rate.len() > 1 && concurrency.len() > 1 {
            return Err(TrafficError::BothSwept);
        }
        if let Some(r) = self
            .rate
            .iter()
            .chain(self.plan_rate.as_ref())
            .find(|r| !(r.is_finite() && **r > 0.0))
        {
            return Err(TrafficError::NotPositiveRate(*r));
        }
        if !self.rate.is_empty()
            && self.requests.is_none()
            && self.duration.is_none()
            && self.sessions.is_none()
        {
            return Err(TrafficError::RateWithoutCount);
        }
        if self.duration.is_some() && self.rate.is_empty() && self.plan_rate.is_none() {
            return Err(TrafficError::DurationWithoutRate);
        }
        self.check_counts()?;
        Ok(if self.rate.len() > 1 {
            self.rate
                .iter()
                .map(|r| Point {
                    rate: Some(*r),
                    concurrency: concurrency.first().copied(),
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
                concurrency: concurrency.first().copied(),
            }]
        })
    }

    /// Rate x duration within what a run may send: an absurd product would size the
    /// workload past memory.
    fn check_counts(&self) -> Result<(), TrafficError> {
        let Some(d) = self.duration else {
            return Ok(());
        };
        let secs = d.as_secs_f64();
        let rates = self.rate.iter().filter(|_| self.requests.is_none());
        let requests = rates.map(|r| (*r, MAX_REQUESTS, "requests"));
        let plans = self
            .plan_rate
            .filter(|_| self.plans.is_none())
            .map(|r| (r, MAX_PLANS, "plans"));
        match requests
            .chain(plans)
            .find(|(r, most, _)| r * secs > *most as f64)
        {
            Some((rate, most, what)) => Err(TrafficError::TooMany {
                rate,
                secs,
                most,
                what,
            }),
            None => Ok(()),
        }
    }

    /// Whether serving metrics are measured: against an endpoint, for request workloads,
    /// arrival processes and sweeps.
    pub(crate) fn wants_serving(&self, endpoint: bool, points: usize) -> bool {
        endpoint
            || points > 1
            || self.requests.is_some()
            || self.duration.is_some()
            || !self.rate.is_empty()
            || self.plan_rate.is_some()
            || self.slo.is_some()
    }

    pub(crate) fn serving_options(&self) -> ServingOptions {
        ServingOptions {
            warmup: self.warmup,
            slo: self.slo.clone(),
        }
    }

    /// Requests of a wide workload at this point (`requests`, or rate x duration).
    pub(crate) fn request_count(&self, point: &Point) -> Option<usize> {
        if let Some(n) = self.requests {
            return Some(n as usize);
        }
        match (point.rate, self.duration) {
            (Some(r), Some(d)) => Some((r * d.as_secs_f64()).ceil().max(1.0) as usize),
            _ => None,
        }
    }

    /// Plans to start with `plan_rate`.
    pub(crate) fn plan_count(&self) -> usize {
        match (self.plans, self.plan_rate, self.duration) {
            (Some(n), _, _) => n as usize,
            (None, Some(r), Some(d)) => (r * d.as_secs_f64()).ceil().max(1.0) as usize,
            _ => 10,
        }
    }

    /// Per task of `plan`, when its first call may be sent.
    pub(crate) fn arrivals(
        &self,
        plan: &ValidatedPlan,
        point: &Point,
        seed: u64,
    ) -> Option<Vec<Duration>> {
        if let Some(r) = self.plan_rate {
            let starts = gamma_arrivals(self.plan_count(), r, self.burstiness, seed);
            return Some(per_copy(plan, &starts));
        }
        if let Some(map) = &self.sessions {
            return Some(map.arrivals(&self.session_starts(point, seed)?));
        }
        point
            .rate
            .map(|r| gamma_arrivals(plan.len(), r, self.burstiness, seed))
    }

    /// With sessions and a rate at this point: when each conversation starts.
    pub(crate) fn session_starts(&self, point: &Point, seed: u64) -> Option<Vec<Duration>> {
        let map = self.sessions.as_ref()?;
        point
            .rate
            .map(|r| gamma_arrivals(map.first.len(), r, self.burstiness, seed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_is_over_rate_or_concurrency_never_both() {
        let t = Traffic {
            rate: vec![10.0, 20.0],
            requests: Some(5),
            concurrency: vec![4],
            ..Traffic::default()
        };
        let points = t.points().expect("valid");
        assert_eq!(
            points.iter().map(Point::label).collect::<Vec<_>>(),
            [Some("rate=10".into()), Some("rate=20".into())]
        );
        assert!(points.iter().all(|p| p.concurrency == Some(4)));
        let both = Traffic {
            concurrency: vec![1, 2],
            ..t.clone()
        };
        assert_eq!(both.points(), Err(TrafficError::BothSwept));
        let by_clients = Traffic {
            concurrency: vec![1, 2, 8],
            requests: Some(9),
            ..Traffic::default()
        };
        assert_eq!(
            by_clients.points().expect("valid")[2].label().as_deref(),
            Some("concurrency=8")
        );
        assert_eq!(
            Traffic::default().points().expect("one run")[0].label(),
            None
        );
    }

    #[test]
    fn rates_must_be_positive_and_counted() {
        let bad = Traffic {
            plan_rate: Some(0.0),
            ..Traffic::default()
        };
        assert_eq!(bad.points(), Err(TrafficError::NotPositiveRate(0.0)));
        let uncounted = Traffic {
            rate: vec![5.0],
            ..Traffic::default()
        };
        assert_eq!(uncounted.points(), Err(TrafficError::RateWithoutCount));
        let no_rate = Traffic {
            duration: Some(Duration::from_secs(2)),
            ..Traffic::default()
        };
        assert_eq!(no_rate.points(), Err(TrafficError::DurationWithoutRate));
        // Sessions are their own count: a rate sweep of conversation starts.
        let map = SessionMap {
            session: vec![0, 0, 1],
            turn: vec![1, 2, 1],
            think: vec![Duration::ZERO; 3],
            first: vec![0, 2],
        };
        let sessions = Traffic {
            rate: vec![1.0, 1000.0],
            burstiness: 1e6,
            sessions: Some(Arc::new(map)),
            ..Traffic::default()
        };
        let points = sessions.points().expect("valid");
        assert_eq!(points.len(), 2);
        let plan = ValidatedPlan::new(planwave_plan::generate::chain(3)).expect("valid");
        let at = sessions.arrivals(&plan, &points[0], 0).expect("arrivals");
        let second = sessions.session_starts(&points[0], 0).expect("starts")[1];
        assert_eq!(at, [Duration::ZERO, Duration::ZERO, second], "{at:?}");
        assert!(
            second > Duration::from_millis(900),
            "regular gaps of 1 s: {second:?}"
        );
    }

    #[test]
    fn counts_come_from_rate_times_duration() {
        let t = Traffic {
            rate: vec![2.5],
            duration: Some(Duration::from_secs(3)),
            ..Traffic::default()
        };
        let p = &t.points().expect("valid")[0];
        assert_eq!(t.request_count(p), Some(8), "ceil(2.5 x 3)");
        assert_eq!(Traffic::default().plan_count(), 10);
        let plans = Traffic {
            plan_rate: Some(4.0),
            duration: Some(Duration::from_millis(500)),
            ..Traffic::default()
        };
        assert_eq!(plans.plan_count(), 2);
        assert!(plans.wants_serving(false, 1));
        assert!(!Traffic::default().wants_serving(false, 1));
    }
}
