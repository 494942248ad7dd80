//! The one percentile implementation of the crate: nearest-rank quantiles of an exact,
//! sorted sample. Every figure (dispatch latency, TTFT, ITL, the server's own) goes through
//! [`Percentiles::of`]; [`Distribution`] is its shorter projection for the run table.

use serde::{Deserialize, Serialize};

/// The nearest-rank `q` quantile of an ascending sample (`None` when it is empty).
fn nearest_rank(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let k = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    Some(sorted[k - 1])
}

/// Mean and nearest-rank percentiles of a sample, in ms.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub samples: usize,
    pub mean: Option<f64>,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

impl Percentiles {
    pub(crate) fn of(mut v: Vec<f64>) -> Percentiles {
        v.sort_by(f64::total_cmp);
        let rank = |q| nearest_rank(&v, q);
        Percentiles {
            samples: v.len(),
            mean: (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64),
            p50: rank(0.50),
            p90: rank(0.90),
            p99: rank(0.99),
            max: v.last().copied(),
        }
    }
}

/// p50/p99/max of a sample (nearest-rank percentiles), in ms: the run table's columns.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Distribution {
    pub samples: usize,
    pub p50: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
}

impl Distribution {
    pub(crate) fn of(v: Vec<f64>) -> Distribution {
        let p = Percentiles::of(v);
        Distribution {
            samples: p.samples,
            p50: p.p50,
            p99: p.p99,
            max: p.max,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let d = Distribution::of((1..=200).map(f64::from).rev().collect());
        assert_eq!(
            (d.samples, d.p50, d.p99, d.max),
            (200, Some(100.0), Some(198.0), Some(200.0))
        );
        let empty = Distribution::of(Vec::new());
        assert_eq!((empty.samples, empty.p50, empty.max), (0, None, None));
    }

    #[test]
    fn percentiles_have_the_mean_and_p90_of_the_same_ranks() {
        let p = Percentiles::of(vec![4.0, 1.0, 3.0, 2.0]);
        assert_eq!(
            (p.samples, p.mean, p.p50, p.p90, p.p99, p.max),
            (4, Some(2.5), Some(2.0), Some(4.0), Some(4.0), Some(4.0))
        );
        assert_eq!(Percentiles::of(Vec::new()), Percentiles::default());
    }
}
