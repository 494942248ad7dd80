//! Saturation detection in a rate sweep: after each rate, did the endpoint keep up? A point
//! saturates when the requests it completed per second fall below those sent (by a stated
//! tolerance), when the requests could not even be sent at the rate asked (the client or a
//! concurrency cap held them), or when TTFT p99 passes the SLO. The sweep stops rising there
//! and names the point.
//!
//! Rates are measured between the 10th and 90th percentile of the send (or completion)
//! times, not first to last: a run's first completions come one latency after its first
//! sends and its last request may be slow, and either would bias a short run's rate.
//!
//! A sweep of multi-turn sessions offers conversations, so it is checked in conversations
//! ([`check_sessions_point`]): started per second (their first turns sent) against the rate
//! asked, and completed per second (every turn answered) against started. A target that
//! keeps up finishes conversations as fast as they start; one that falls behind makes each
//! conversation longer than the one before.

use std::time::Duration;

use serde::Serialize;

use planwave_plan::ValidatedPlan;

use super::load_report::LoadReport;
use super::serving::CallRecord;
use crate::workload::sessions::SessionMap;

/// When a rate sweep counts a point as saturated, and whether it stops there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SaturationRule {
    /// A point saturates when the achieved rate is below (1 - tolerance) x the sent rate.
    pub tolerance: f64,
    /// Stop rising the rate at the first saturated point (otherwise run every rate and
    /// still name the first).
    pub stop: bool,
}

impl Default for SaturationRule {
    fn default() -> SaturationRule {
        SaturationRule {
            tolerance: 0.1,
            stop: true,
        }
    }
}

/// Fewer requests than this at a point say nothing reliable about its rates.
pub(crate) const MIN_REQUESTS: usize = 10;

/// Why a point saturated.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SaturationReason {
    /// The endpoint completed fewer requests per second than were sent.
    AchievedBelowSent,
    /// Requests went out slower than the arrivals asked (the client, or --concurrency).
    SentBelowOffered,
    /// TTFT p99 passed the SLO's TTFT.
    TtftOverSlo,
}

/// What a point's rates count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RateUnit {
    /// Requests.
    #[default]
    Requests,
    /// Multi-turn conversations: sent when their first turn is, completed when their last
    /// turn is answered.
    Conversations,
}

/// One point of a rate sweep, checked.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PointCheck {
    /// The run's label (`rate=40`).
    pub point: Option<String>,
    /// What the rates count.
    pub unit: RateUnit,
    /// Requests (or conversations) per second the arrival process asked for (measured on
    /// its own schedule).
    pub offered_rate: Option<f64>,
    /// Requests (conversations) per second actually sent (started).
    pub sent_rate: Option<f64>,
    /// Successful requests (conversations every turn of which succeeded) completed per
    /// second.
    pub achieved_rate: Option<f64>,
    pub ttft_p99_ms: Option<f64>,
    /// Empty: the point kept up.
    pub reasons: Vec<SaturationReason>,
}

impl PointCheck {
    pub fn saturated(&self) -> bool {
        !self.reasons.is_empty()
    }
}

/// The saturation check of a rate sweep (`"saturation"` in `--json`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SaturationReport {
    pub tolerance: f64,
    /// The SLO's TTFT, when one was given.
    pub ttft_slo_ms: Option<f64>,
    /// Every point that ran, in order.
    pub checked: Vec<PointCheck>,
    /// The saturation point: the first point that saturated (`None`: none did).
    pub point: Option<String>,
    /// The rates not run because the sweep stopped at the saturation point.
    pub skipped: Vec<String>,
}

impl SaturationReport {
    pub(crate) fn new(rule: &SaturationRule, ttft_slo_ms: Option<f64>) -> SaturationReport {
        SaturationReport {
            tolerance: rule.tolerance,
            ttft_slo_ms,
            checked: Vec::new(),
            point: None,
            skipped: Vec::new(),
        }
    }

    /// Adds a point's check; true when it is the first saturated one.
    pub(crate) fn add(&mut self, check: PointCheck) -> bool {
        let first = check.saturated() && !self.checked.iter().any(PointCheck::saturated);
        if first {
            self.point = check.point.clone();
        }
        self.checked.push(check);
        first
    }
}

/// The requests/second of ascending event times (ms), between their 10th and 90th
/// percentile; `None` with fewer than `MIN_REQUESTS` events or no time between them.
pub(crate) fn inner_rate(sorted_ms: &[f64]) -> Option<f64> {
    let n = sorted_ms.len();
    if n < MIN_REQUESTS {
        return None;
    }
    let lo = ((n - 1) as f64 * 0.1).floor() as usize;
    let hi = ((n - 1) as f64 * 0.9).ceil() as usize;
    let span_ms = sorted_ms[hi] - sorted_ms[lo];
    (span_ms > 0.0).then(|| (hi - lo) as f64 / span_ms * 1000.0)
}

/// One request (or conversation) of a run: when it was sent, and when it completed if it
/// succeeded, in ms from the run's start.
struct Span {
    sent_ms: f64,
    done_ms: Option<f64>,
}

/// Checks one run of a rate sweep. `offered` is the arrival schedule it was given (send
/// times from the run's start); `ttft_slo_ms` the SLO's TTFT.
pub(crate) fn check_point(
    run: &LoadReport,
    offered: Option<&[Duration]>,
    rule: &SaturationRule,
    ttft_slo_ms: Option<f64>,
) -> PointCheck {
    let spans: Vec<Span> = run
        .calls
        .iter()
        .filter(|c| c.role == "subagent")
        .map(|c| Span {
            sent_ms: c.start_ms,
            done_ms: (c.outcome == "ok").then_some(c.start_ms + c.e2e_ms),
        })
        .collect();
    check_spans(run, &spans, RateUnit::Requests, offered, rule, ttft_slo_ms)
}

/// Checks one run of a rate sweep of multi-turn sessions (`plan` and `map` the session
/// workload's), in conversations: `starts` is when each was asked to start.
pub(crate) fn check_sessions_point(
    run: &LoadReport,
    plan: &ValidatedPlan,
    map: &SessionMap,
    starts: Option<&[Duration]>,
    rule: &SaturationRule,
    ttft_slo_ms: Option<f64>,
) -> PointCheck {
    let spans = conversation_spans(&run.calls, plan, map);
    check_spans(
        run,
        &spans,
        RateUnit::Conversations,
        starts,
        rule,
        ttft_slo_ms,
    )
}

/// Per conversation that sent its first turn: that send, and its last turn's answer when
/// every turn of it succeeded.
fn conversation_spans(calls: &[CallRecord], plan: &ValidatedPlan, map: &SessionMap) -> Vec<Span> {
    let n = map.first.len();
    let mut turns = vec![0u32; n];
    for &c in &map.session {
        if let Some(t) = turns.get_mut(c as usize) {
            *t += 1;
        }
    }
    // Per conversation: first send, last answer, turns answered, any failure.
    let mut seen = vec![(f64::INFINITY, f64::NEG_INFINITY, 0u32, false); n];
    for c in calls.iter().filter(|c| c.role == "subagent") {
        let Some(&conv) = c
            .task
            .as_deref()
            .and_then(|id| plan.index_of_key(id))
            .and_then(|i| map.session.get(i))
        else {
            continue;
        };
        let s = &mut seen[conv as usize];
        s.0 = s.0.min(c.start_ms);
        if c.outcome == "ok" {
            s.1 = s.1.max(c.start_ms + c.e2e_ms);
            s.2 += 1;
        } else {
            s.3 = true;
        }
    }
    seen.iter()
        .zip(&turns)
        .filter(|(s, _)| s.0.is_finite())
        .map(|(s, &want)| Span {
            sent_ms: s.0,
            done_ms: (!s.3 && s.2 >= want).then_some(s.1),
        })
        .collect()
}

/// The check of a run's requests (or conversations) against the rate asked.
fn check_spans(
    run: &LoadReport,
    spans: &[Span],
    unit: RateUnit,
    offered: Option<&[Duration]>,
    rule: &SaturationRule,
    ttft_slo_ms: Option<f64>,
) -> PointCheck {
    let sorted = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v
    };
    let sends = sorted(spans.iter().map(|s| s.sent_ms).collect());
    let done = sorted(spans.iter().filter_map(|s| s.done_ms).collect());
    let offered_rate = offered
        .and_then(|a| inner_rate(&sorted(a.iter().map(|d| d.as_secs_f64() * 1e3).collect())));
    let sent_rate = inner_rate(&sends);
    // Too few successes to measure a rate, out of enough sends: the endpoint did not keep up.
    let achieved_rate = match (inner_rate(&done), sent_rate) {
        (Some(r), _) => Some(r),
        (None, Some(_)) => Some(0.0),
        (None, None) => None,
    };
    let ttft_p99_ms = run.serving.as_ref().and_then(|s| s.ttft_ms.p99);
    let below = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => a < b * (1.0 - rule.tolerance),
        _ => false,
    };
    let mut reasons = Vec::new();
    if below(achieved_rate, sent_rate) {
        reasons.push(SaturationReason::AchievedBelowSent);
    }
    if below(sent_rate, offered_rate) {
        reasons.push(SaturationReason::SentBelowOffered);
    }
    if let (Some(p99), Some(slo)) = (ttft_p99_ms, ttft_slo_ms)
        && p99 > slo
    {
        reasons.push(SaturationReason::TtftOverSlo);
    }
    PointCheck {
        point: run.label.clone(),
        unit,
        offered_rate,
        sent_rate,
        achieved_rate,
        ttft_p99_ms,
        reasons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::serving::ServingReport;

    fn call(start_ms: f64, e2e_ms: f64, outcome: &str) -> CallRecord {
        CallRecord {
            role: "subagent".into(),
            task: None,
            start_ms,
            ttft_ms: Some(1.0),
            itl_ms: Vec::new(),
            tpot_ms: None,
            e2e_ms,
            prompt_tokens: 0,
            cached_tokens: 0,
            output_tokens: 1,
            outcome: outcome.into(),
            retries: 0,
            ..CallRecord::default()
        }
    }

    fn run(calls: Vec<CallRecord>, ttft_p99: Option<f64>) -> LoadReport {
        let mut serving = ServingReport::default();
        serving.ttft_ms.p99 = ttft_p99;
        LoadReport {
            label: Some("rate=10".into()),
            calls,
            serving: Some(serving),
            ..LoadReport::default()
        }
    }

    /// Sends every 100 ms (10/s); each answer takes `e2e(i)`.
    fn at_ten_per_sec(n: usize, e2e: impl Fn(usize) -> f64) -> Vec<CallRecord> {
        (0..n)
            .map(|i| call(i as f64 * 100.0, e2e(i), "ok"))
            .collect()
    }

    #[test]
    fn inner_rate_ignores_the_ends_and_needs_enough_events() {
        let even: Vec<f64> = (0..21).map(|i| f64::from(i) * 50.0).collect();
        assert_eq!(inner_rate(&even), Some(20.0));
        let mut late_last = even.clone();
        late_last[20] = 60_000.0;
        assert_eq!(inner_rate(&late_last), Some(20.0), "one slow request");
        assert_eq!(inner_rate(&even[..9]), None);
        assert_eq!(inner_rate(&[5.0; 12]), None, "no time between them");
    }

    #[test]
    fn a_steady_endpoint_keeps_up_whatever_its_latency() {
        let rule = SaturationRule::default();
        let c = check_point(
            &run(at_ten_per_sec(40, |_| 2_000.0), None),
            None,
            &rule,
            None,
        );
        assert_eq!((c.sent_rate, c.achieved_rate), (Some(10.0), Some(10.0)));
        assert!(!c.saturated(), "{c:?}");
    }

    #[test]
    fn a_queue_that_grows_saturates_the_point() {
        // Served one at a time, 200 ms each: 5/s while 10/s are sent.
        let calls = at_ten_per_sec(40, |i| 200.0 * (i + 1) as f64 - 100.0 * i as f64);
        let c = check_point(&run(calls, None), None, &SaturationRule::default(), None);
        assert_eq!(c.reasons, [SaturationReason::AchievedBelowSent], "{c:?}");
        let achieved = c.achieved_rate.expect("measured");
        assert!((achieved - 5.0).abs() < 1e-9, "{achieved}");
        let loose = SaturationRule {
            tolerance: 0.6,
            ..SaturationRule::default()
        };
        let calls = at_ten_per_sec(40, |i| 200.0 * (i + 1) as f64 - 100.0 * i as f64);
        assert!(!check_point(&run(calls, None), None, &loose, None).saturated());
    }

    #[test]
    fn failures_sends_held_back_and_slow_first_tokens_saturate_too() {
        let rule = SaturationRule::default();
        let mut calls = at_ten_per_sec(40, |_| 10.0);
        for c in calls.iter_mut().step_by(2) {
            c.outcome = "http_5xx".into();
        }
        let c = check_point(&run(calls, None), None, &rule, None);
        assert_eq!(c.reasons, [SaturationReason::AchievedBelowSent]);

        let asked: Vec<Duration> = (0..40).map(|i| Duration::from_millis(i * 50)).collect();
        let c = check_point(
            &run(at_ten_per_sec(40, |_| 10.0), None),
            Some(asked.as_slice()),
            &rule,
            None,
        );
        assert_eq!(c.reasons, [SaturationReason::SentBelowOffered]);
        assert_eq!(c.offered_rate, Some(20.0));

        let c = check_point(
            &run(at_ten_per_sec(40, |_| 10.0), Some(900.0)),
            None,
            &rule,
            Some(500.0),
        );
        assert_eq!(c.reasons, [SaturationReason::TtftOverSlo]);
        let c = check_point(
            &run(at_ten_per_sec(40, |_| 10.0), Some(400.0)),
            None,
            &rule,
            Some(500.0),
        );
        assert!(!c.saturated());
    }

    #[test]
    fn sessions_are_judged_in_conversations_that_end_with_their_last_answer() {
        // Two-turn conversations started every 100 ms (10/s); each turn 50 ms. Served one
        // turn at a time they would fall behind; here every conversation takes 100 ms.
        let plan = ValidatedPlan::new(planwave_plan::generate::wide(40)).expect("valid");
        let map = SessionMap {
            session: (0..40).map(|i| i / 2).collect(),
            turn: (0..40).map(|i| i % 2 + 1).collect(),
            think: vec![Duration::ZERO; 40],
            first: (0..20).map(|c| c as usize * 2).collect(),
        };
        let calls: Vec<CallRecord> = (0..40u32)
            .map(|i| {
                let mut c = call(
                    f64::from(i / 2) * 100.0 + f64::from(i % 2) * 50.0,
                    50.0,
                    "ok",
                );
                c.task = Some(plan.id(i as usize).to_string());
                c
            })
            .collect();
        let starts: Vec<Duration> = (0..20).map(|c| Duration::from_millis(c * 100)).collect();
        let rule = SaturationRule::default();
        let check = |calls: Vec<CallRecord>| {
            check_sessions_point(&run(calls, None), &plan, &map, Some(&starts), &rule, None)
        };
        let c = check(calls.clone());
        assert_eq!(c.unit, RateUnit::Conversations);
        for rate in [c.offered_rate, c.sent_rate, c.achieved_rate] {
            assert!(rate.is_some_and(|r| (r - 10.0).abs() < 1e-9), "{c:?}");
        }
        assert!(!c.saturated());
        // Every other conversation's second turn fails: half of them complete.
        let mut failing = calls;
        for c in failing.iter_mut().skip(1).step_by(4) {
            c.outcome = "http_5xx".into();
        }
        let c = check(failing);
        assert_eq!(c.reasons, [SaturationReason::AchievedBelowSent], "{c:?}");
        assert_eq!(c.unit, RateUnit::Conversations);
    }

    #[test]
    fn the_report_names_the_first_saturated_point_only() {
        let rule = SaturationRule::default();
        let mut s = SaturationReport::new(&rule, None);
        let check = |point: &str, reasons: Vec<SaturationReason>| PointCheck {
            point: Some(point.into()),
            unit: RateUnit::Requests,
            offered_rate: None,
            sent_rate: Some(10.0),
            achieved_rate: Some(5.0),
            ttft_p99_ms: None,
            reasons,
        };
        assert!(!s.add(check("rate=5", vec![])));
        assert_eq!(s.point, None);
        assert!(s.add(check("rate=10", vec![SaturationReason::AchievedBelowSent])));
        assert!(!s.add(check("rate=20", vec![SaturationReason::AchievedBelowSent])));
        assert_eq!(s.point.as_deref(), Some("rate=10"));
        let json = serde_json::to_value(&s).expect("json");
        assert_eq!(json["checked"][1]["reasons"][0], "achieved_below_sent");
        assert_eq!(json["point"], "rate=10");
    }
}
