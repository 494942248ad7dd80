//! Simulated latency and the stable hash that makes every simulated choice replayable.

use std::time::Duration;

use rand::SeedableRng;
use rand::rngs::StdRng;
use rand_distr::{Distribution, LogNormal};

/// How long a simulated call takes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Latency {
    /// No delay at all (load tests of the engine itself).
    #[default]
    Zero,
    Fixed(Duration),
    /// Lognormal with the given mean (not median) and sigma of the underlying normal.
    LogNormal {
        mean_ms: f64,
        sigma: f64,
    },
}

impl Latency {
    /// `--sim-latency-ms M --sim-sigma S`: 0 means no delay, sigma 0 means exactly M.
    pub fn from_mean(mean_ms: f64, sigma: f64) -> Latency {
        if mean_ms <= 0.0 || !mean_ms.is_finite() {
            Latency::Zero
        } else if sigma <= 0.0 || !sigma.is_finite() {
            Latency::Fixed(Duration::from_secs_f64(mean_ms / 1000.0))
        } else {
            Latency::LogNormal { mean_ms, sigma }
        }
    }

    /// The latency for a call whose identity hashes to `key`.
    pub fn sample(&self, key: u64) -> Duration {
        self.sample_keyed(|| key)
    }

    /// [`Latency::sample`], hashing the call's identity only when the draw needs it (zero and
    /// fixed latencies do not: a zero-latency load test hashed every task id for nothing).
    pub fn sample_keyed(&self, key: impl FnOnce() -> u64) -> Duration {
        match *self {
            Latency::Zero => Duration::ZERO,
            Latency::Fixed(d) => d,
            Latency::LogNormal { mean_ms, sigma } => {
                // E[X] = exp(mu + sigma^2 / 2), so this mu makes `mean_ms` the mean.
                let mu = mean_ms.ln() - sigma * sigma / 2.0;
                match LogNormal::new(mu, sigma) {
                    Ok(dist) => {
                        let ms: f64 = dist.sample(&mut StdRng::seed_from_u64(key()));
                        // Cap absurd tails so a single draw cannot stall a run for hours.
                        Duration::from_secs_f64((ms.min(mean_ms * 100.0)) / 1000.0)
                    }
                    Err(_) => Duration::from_secs_f64(mean_ms / 1000.0),
                }
            }
        }
    }
}

/// FNV-1a over the seed, a key and an attempt number: stable across runs and platforms,
/// unlike `std`'s hasher, so a seed replays the same run everywhere.
pub fn stable_hash(seed: u64, key: &str, attempt: u32) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01B3;
    // Three plain loops rather than one chained iterator, which the compiler did not
    // flatten (a visible share of every simulated call).
    let step = |h: u64, b: &u8| (h ^ u64::from(*b)).wrapping_mul(PRIME);
    let h = seed.to_le_bytes().iter().fold(0xcbf2_9ce4_8422_2325, step);
    let h = key.as_bytes().iter().fold(h, step);
    attempt.to_le_bytes().iter().fold(h, step)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lognormal_mean_is_close_to_requested_mean() {
        let lat = Latency::from_mean(100.0, 1.0);
        let n = 20_000u64;
        let sum: f64 = (0..n)
            .map(|i| lat.sample(stable_hash(7, "t", i as u32)).as_secs_f64() * 1000.0)
            .sum();
        let mean = sum / n as f64;
        assert!((mean - 100.0).abs() < 5.0, "mean {mean}");
    }

    /// The hash as first written (one chained iterator).
    fn chained_hash(seed: u64, key: &str, attempt: u32) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in seed
            .to_le_bytes()
            .iter()
            .chain(key.as_bytes())
            .chain(attempt.to_le_bytes().iter())
        {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01B3);
        }
        h
    }

    #[test]
    fn the_hash_is_the_chained_one_and_pinned() {
        // Seeded runs replay across versions: FNV-1a values as an independent script gives them.
        assert_eq!(stable_hash(0, "", 0), 0x5467_b0da_1d10_6495);
        assert_eq!(stable_hash(7, "task_12", 3), 0x24ff_c70b_7a54_a4b0);
        assert_eq!(
            stable_hash(u64::MAX, "任务", u32::MAX),
            0x165e_912f_f8fb_4095
        );
        for seed in [0, 1, 42, u64::MAX] {
            for key in ["", "1", "step_10", "任务 3", "-"] {
                for attempt in [0, 1, 2, u32::MAX] {
                    assert_eq!(
                        stable_hash(seed, key, attempt),
                        chained_hash(seed, key, attempt)
                    );
                }
            }
        }
    }

    #[test]
    fn zero_and_fixed_latencies_do_not_hash() {
        let never = || -> u64 { panic!("hashed") };
        assert_eq!(Latency::Zero.sample_keyed(never), Duration::ZERO);
        let d = Duration::from_millis(3);
        assert_eq!(Latency::Fixed(d).sample_keyed(never), d);
        let lat = Latency::from_mean(50.0, 0.5);
        assert_eq!(lat.sample_keyed(|| 9), lat.sample(9));
    }

    #[test]
    fn same_inputs_same_latency_and_zero_means_none() {
        let lat = Latency::from_mean(50.0, 0.5);
        assert_eq!(
            lat.sample(stable_hash(1, "a", 1)),
            lat.sample(stable_hash(1, "a", 1))
        );
        assert_ne!(stable_hash(1, "a", 1), stable_hash(2, "a", 1));
        assert_eq!(Latency::from_mean(0.0, 1.0).sample(42), Duration::ZERO);
        assert_eq!(
            Latency::from_mean(10.0, 0.0).sample(42),
            Duration::from_millis(10)
        );
    }
}
