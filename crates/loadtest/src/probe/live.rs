//! What a live view reads while a run goes on: the probe's own counters (calls, errors, in
//! flight) and TTFT and ITL histograms kept beside them. Every update is a relaxed atomic
//! add, so the request path takes no lock for it; a reader (once a second) sums the buckets.
//!
//! The histograms are log-linear (32 buckets per power of two of nanoseconds, as
//! HdrHistogram lays them out), so a percentile read from one is the midpoint of its bucket:
//! within 1.6 % of the exact nearest-rank value the final report gives.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use planwave_llm::CallTiming;

/// Sub-buckets per power of two (2^5).
const SUB_BITS: u32 = 5;
const SUB: u64 = 1 << SUB_BITS;
/// Values below 2 x SUB ns have a bucket each; above, SUB buckets per power of two.
const BUCKETS: usize = ((64 - SUB_BITS as usize) * SUB as usize) + SUB as usize;

/// A histogram of durations that many threads add to without a lock.
pub(crate) struct AtomicHistogram {
    counts: Box<[AtomicU64]>,
    total: AtomicU64,
}

impl Default for AtomicHistogram {
    fn default() -> AtomicHistogram {
        AtomicHistogram {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            total: AtomicU64::new(0),
        }
    }
}

fn bucket(ns: u64) -> usize {
    if ns < 2 * SUB {
        return ns as usize;
    }
    let shift = 63 - ns.leading_zeros() - SUB_BITS;
    (u64::from(shift) * SUB + (ns >> shift)) as usize
}

/// The middle of bucket `b`, in ns.
fn midpoint(b: usize) -> f64 {
    let b = b as u64;
    if b < 2 * SUB {
        return b as f64;
    }
    let shift = b / SUB - 1;
    let low = (b - shift * SUB) << shift;
    low as f64 + ((1u64 << shift) as f64 - 1.0) / 2.0
}

impl AtomicHistogram {
    pub(crate) fn add(&self, d: Duration) {
        self.add_n(bucket(d.as_nanos().min(u128::from(u64::MAX)) as u64), 1);
    }

    fn add_n(&self, b: usize, n: u64) {
        self.counts[b].fetch_add(n, Ordering::Relaxed);
        self.total.fetch_add(n, Ordering::Relaxed);
    }

    /// Adds many values, one atomic add per run of values in the same bucket (the gaps of
    /// a paced stream mostly share one).
    pub(crate) fn add_all(&self, values: impl Iterator<Item = Duration>) {
        let mut run: Option<(usize, u64)> = None;
        for d in values {
            let b = bucket(d.as_nanos().min(u128::from(u64::MAX)) as u64);
            run = match run {
                Some((rb, n)) if rb == b => Some((rb, n + 1)),
                Some((rb, n)) => {
                    self.add_n(rb, n);
                    Some((b, 1))
                }
                None => Some((b, 1)),
            };
        }
        if let Some((b, n)) = run {
            self.add_n(b, n);
        }
    }

    #[cfg(test)]
    pub(crate) fn count(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }

    /// Nearest-rank quantiles (as [`crate::Percentiles`] takes them), in ms, of what was
    /// added so far: one pass over the buckets for all of `qs`.
    pub(crate) fn quantiles_ms<const N: usize>(&self, qs: [f64; N]) -> [Option<f64>; N] {
        let counts: Vec<u64> = self
            .counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        let n: u64 = counts.iter().sum();
        let mut out = [None; N];
        if n == 0 {
            return out;
        }
        for (slot, q) in out.iter_mut().zip(qs) {
            let rank = ((q * n as f64).ceil() as u64).clamp(1, n);
            let mut seen = 0;
            for (b, c) in counts.iter().enumerate() {
                seen += c;
                if seen >= rank {
                    *slot = Some(midpoint(b) / 1e6);
                    break;
                }
            }
        }
        out
    }
}

/// TTFT and ITL of the successful requests so far.
#[derive(Default)]
pub(crate) struct LiveLatencies {
    pub(crate) ttft: AtomicHistogram,
    pub(crate) itl: AtomicHistogram,
}

impl LiveLatencies {
    /// Adds a successful request's timing, as its [`crate::CallRecord`] counts it: TTFT
    /// whenever the client timed it, inter-token gaps only for a streamed answer.
    pub(crate) fn record(&self, t: &CallTiming) {
        self.ttft.add(t.ttft);
        if t.streamed {
            self.itl.add_all(t.itl());
        }
    }
}

/// What a live view shows at one moment of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveSnapshot {
    /// Since the run's start.
    pub elapsed: Duration,
    /// Model calls sent so far.
    pub sent: u64,
    /// Model calls answered (successfully or not).
    pub done: u64,
    pub errors: u64,
    pub in_flight: u64,
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p99_ms: Option<f64>,
    pub itl_p50_ms: Option<f64>,
    pub itl_p99_ms: Option<f64>,
}

impl LiveSnapshot {
    pub(crate) fn with_latencies(mut self, l: &LiveLatencies) -> LiveSnapshot {
        [self.ttft_p50_ms, self.ttft_p99_ms] = l.ttft.quantiles_ms([0.5, 0.99]);
        [self.itl_p50_ms, self.itl_p99_ms] = l.itl.quantiles_ms([0.5, 0.99]);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::figures::percentiles::Percentiles;

    #[test]
    fn buckets_are_contiguous_and_midpoints_lie_inside() {
        let mut last = 0;
        for ns in [
            0u64,
            1,
            63,
            64,
            65,
            127,
            128,
            1_000,
            1 << 20,
            (1 << 40) + 7,
            u64::MAX,
        ] {
            let b = bucket(ns);
            assert!(b >= last && b < BUCKETS, "{ns}: {b}");
            last = b;
            let m = midpoint(b);
            assert!((m - ns as f64).abs() <= ns as f64 / 64.0 + 0.5, "{ns}: {m}");
        }
        assert_eq!(bucket(64), 64);
        assert_eq!(bucket(127), 95);
        assert_eq!(bucket(128), 96);
    }

    #[test]
    fn quantiles_match_the_exact_ones_within_the_bucket_width() {
        let h = AtomicHistogram::default();
        let values: Vec<f64> = (1..=1000).map(|i| f64::from(i) * 0.37).collect();
        h.add_all(values.iter().map(|ms| Duration::from_secs_f64(ms / 1000.0)));
        let exact = Percentiles::of(values);
        let [p50, p99] = h.quantiles_ms([0.5, 0.99]);
        for (live, exact) in [(p50, exact.p50), (p99, exact.p99)] {
            let (live, exact) = (live.expect("some"), exact.expect("some"));
            assert!((live - exact).abs() <= exact / 64.0, "{live} vs {exact}");
        }
        assert_eq!(h.count(), 1000);
        assert_eq!(
            AtomicHistogram::default().quantiles_ms([0.5]),
            [None],
            "nothing yet"
        );
    }

    #[test]
    fn a_streamed_answer_adds_its_gaps_and_an_unstreamed_one_only_its_ttft() {
        let l = LiveLatencies::default();
        let t = CallTiming {
            ttft: Duration::from_millis(10),
            chunks: vec![Duration::from_millis(12), Duration::from_millis(14)],
            e2e: Duration::from_millis(14),
            streamed: true,
            ..CallTiming::default()
        };
        l.record(&t);
        l.record(&CallTiming {
            streamed: false,
            ..t
        });
        assert_eq!((l.ttft.count(), l.itl.count()), (2, 2));
        let s = LiveSnapshot::default().with_latencies(&l);
        let itl = s.itl_p50_ms.expect("gaps");
        assert!((itl - 2.0).abs() < 0.04, "{itl}");
        assert_eq!(s.itl_p99_ms, Some(itl), "both gaps in one bucket");
        let ttft = s.ttft_p50_ms.expect("ttft");
        assert!((ttft - 10.0).abs() < 0.2, "{ttft}");
    }
}
