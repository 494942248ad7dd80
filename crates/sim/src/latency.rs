//! Simulated latency, drawn from the stable hash so every run replays.

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

#[cfg(test)]
mod tests {
    use planwave_record::stable_hash;

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
