use super::*;
use proptest::prelude::*;

const W: u64 = 60_000;

fn rules(rpm: Option<u64>, tpm: Option<u64>) -> Rules {
    Rules {
        rpm,
        tpm,
        window: W,
        longest: 600_000,
    }
}

/// One attempt as the simulation below runs it.
#[derive(Clone, Copy, Debug)]
struct Attempt {
    /// When its worker asks.
    asks: u64,
    /// How long it runs once admitted.
    takes: u64,
    /// Where in its run the provider receives it (0: at once, 1: at its end).
    arrives: f64,
    estimate: u64,
    /// What it really used (at most the estimate).
    used: u64,
}

/// Admits `attempts` (sorted by `asks`) one after another as workers would, each waiting as
/// [`admit`] says (or until a running attempt ends and is settled); returns when the provider
/// received each and the tokens it used.
fn run(attempts: &[Attempt], rules: &Rules) -> Vec<(u64, u64)> {
    let mut admitted: Vec<(u64, Attempt)> = Vec::new();
    let mut received = Vec::new();
    let mut now = 0;
    for a in attempts {
        now = now.max(a.asks);
        let estimate = rules.tpm.map_or(a.estimate, |c| a.estimate.min(c));
        loop {
            // The log as it is at `now`: attempts that ended are settled.
            let mut log = Log {
                entries: admitted
                    .iter()
                    .enumerate()
                    .map(|(i, (at, x))| {
                        let done = at + x.takes;
                        Entry {
                            at_ms: *at,
                            done_ms: (done <= now).then_some(done),
                            id: i as u64,
                            tokens: if done <= now { x.used } else { x.estimate },
                        }
                    })
                    .collect(),
            };
            match admit(&mut log, now, rules, estimate) {
                Ok(()) => break,
                Err(until) => {
                    assert!(until > now, "a wait must move time on");
                    let next_end = admitted
                        .iter()
                        .map(|(at, x)| at + x.takes)
                        .filter(|&d| d > now)
                        .min()
                        .unwrap_or(u64::MAX);
                    now = until.min(next_end);
                }
            }
        }
        admitted.push((now, Attempt { estimate, ..*a }));
        let arrival = now + (a.takes as f64 * a.arrives) as u64;
        received.push((arrival, a.used));
    }
    received.sort_unstable();
    received
}

/// The most requests and tokens any window of `W` holds, by arrival.
fn worst_window(received: &[(u64, u64)]) -> (usize, u64) {
    received
        .iter()
        .map(|(start, _)| {
            let inside: Vec<_> = received
                .iter()
                .filter(|(t, _)| *t >= *start && *t < start + W)
                .collect();
            (inside.len(), inside.iter().map(|(_, k)| *k).sum())
        })
        .fold((0, 0), |(n, k), (a, b)| (n.max(a), k.max(b)))
}

fn instant(asks: u64) -> Attempt {
    Attempt {
        asks,
        takes: 0,
        arrives: 0.0,
        estimate: 1,
        used: 1,
    }
}

#[test]
fn a_burst_at_a_minutes_end_waits_for_the_next_minute_not_the_next_window() {
    // 1 request at 0, 3 at 59 s: a fixed window opened at 0 would let 4 more through at 60 s
    // (7 within two seconds); the log lets the next go only as each leaves.
    let asks = [0, 59_000, 59_000, 59_000, 60_000, 60_000, 60_000].map(instant);
    let received = run(&asks, &rules(Some(4), None));
    let times: Vec<u64> = received.iter().map(|(t, _)| *t).collect();
    assert_eq!(times, [0, 59_000, 59_000, 59_000, 60_000, 119_000, 119_000]);
    assert_eq!(worst_window(&received).0, 4);
}

#[test]
fn an_attempt_counts_until_a_window_after_it_ended() {
    // Limit 1: the first attempt runs 10 s and reaches the provider at its end. Counted
    // from its admission, the second would go at 60 s, 50 s after the provider saw the
    // first; counted from its end, at 70 s.
    let slow = Attempt {
        asks: 0,
        takes: 10_000,
        arrives: 1.0,
        estimate: 1,
        used: 1,
    };
    let received = run(&[slow, instant(1_000)], &rules(Some(1), None));
    assert_eq!(received, [(10_000, 1), (70_000, 1)]);
}

#[test]
fn a_running_attempt_whose_worker_never_settles_leaves_after_its_latest_end() {
    let mut log = Log {
        entries: vec![Entry {
            at_ms: 0,
            done_ms: None,
            id: 1,
            tokens: 1,
        }],
    };
    let r = rules(Some(1), None);
    assert!(admit(&mut log, 600_000 + W - 1, &r, 1).is_err());
    assert_eq!(admit(&mut log, 600_000 + W, &r, 1), Ok(()));
}

fn attempt() -> impl Strategy<Value = Attempt> {
    (
        0u64..300_000,
        0u64..20_000,
        0.0f64..=1.0,
        1u64..400,
        0.0f64..=1.0,
    )
        .prop_map(|(asks, takes, arrives, estimate, share)| Attempt {
            asks,
            takes,
            arrives,
            estimate,
            used: ((estimate as f64 * share) as u64).max(1),
        })
}

proptest! {
    #[test]
    fn no_minute_of_arrivals_ever_holds_more_than_the_limits(
        mut attempts in prop::collection::vec(attempt(), 1..60),
        rpm in 1u64..10,
        tpm in 400u64..2_000,
    ) {
        attempts.sort_by_key(|a| a.asks);
        let received = run(&attempts, &rules(Some(rpm), Some(tpm)));
        let (n, k) = worst_window(&received);
        prop_assert!(n as u64 <= rpm, "{n} requests in a minute, limit {rpm}");
        prop_assert!(k <= tpm, "{k} tokens in a minute, limit {tpm}");
    }
}
