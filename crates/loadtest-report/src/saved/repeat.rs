//! Repeated runs (`--repeat N`): every figure of every run as the mean of the repeats with a
//! 95 % confidence interval (Student's t, as the spread of a few repeats needs).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

/// One figure over the repeats.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimate {
    pub mean: f64,
    /// Half the width of the 95 % interval (`mean ± ci95`); 0 with one repeat.
    pub ci95: f64,
    /// Each repeat's value, in order.
    pub values: Vec<f64>,
}

/// Two-sided 97.5 % quantiles of Student's t for 1..=30 degrees of freedom.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

impl Estimate {
    pub fn of(values: Vec<f64>) -> Estimate {
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n.max(1) as f64;
        let ci95 = if n < 2 {
            0.0
        } else {
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
            let t = T975.get(n - 2).copied().unwrap_or(1.96);
            t * (var / n as f64).sqrt()
        };
        Estimate { mean, ci95, values }
    }
}

/// Per run (by position), every numeric figure found in all repeats' `runs[i]`, keyed by
/// its path (`serving.ttft_ms.p50`). `repeats` are `--json` documents of the same workload.
pub fn repeat_estimates(repeats: &[Value]) -> Vec<BTreeMap<String, Estimate>> {
    let runs = repeats
        .iter()
        .map(|r| r["runs"].as_array().map_or(0, Vec::len))
        .min()
        .unwrap_or(0);
    (0..runs)
        .map(|i| {
            let mut figures: BTreeMap<String, Vec<f64>> = BTreeMap::new();
            for r in repeats {
                let mut flat = Vec::new();
                numbers(&r["runs"][i], String::new(), &mut flat);
                for (k, v) in flat {
                    figures.entry(k).or_default().push(v);
                }
            }
            figures
                .into_iter()
                .filter(|(_, v)| v.len() == repeats.len())
                .map(|(k, v)| (k, Estimate::of(v)))
                .collect()
        })
        .collect()
}

/// Every number under `v` with its dotted path (objects only: arrays are per-call data).
fn numbers(v: &Value, path: String, out: &mut Vec<(String, f64)>) {
    match v {
        Value::Number(n) => {
            if let Some(x) = n.as_f64() {
                out.push((path, x));
            }
        }
        Value::Object(m) => {
            for (k, child) in m {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                numbers(child, p, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn mean_and_interval_follow_students_t() {
        let e = Estimate::of(vec![10.0, 12.0, 14.0]);
        assert_eq!(e.mean, 12.0);
        // s = 2, n = 3: 4.303 * 2 / sqrt(3).
        assert!((e.ci95 - 4.303 * 2.0 / 3f64.sqrt()).abs() < 1e-9, "{e:?}");
        assert_eq!(Estimate::of(vec![5.0]).ci95, 0.0);
    }

    #[test]
    fn figures_are_matched_by_run_and_path() {
        let a = json!({"runs": [{"makespan_ms": 10.0, "serving": {"ttft_ms": {"p50": 1.0}}, "label": "x"}]});
        let b = json!({"runs": [{"makespan_ms": 20.0, "serving": {"ttft_ms": {"p50": 3.0}}, "label": "x"}]});
        let got = repeat_estimates(&[a, b]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0]["makespan_ms"].mean, 15.0);
        assert_eq!(got[0]["serving.ttft_ms.p50"].values, vec![1.0, 3.0]);
        assert!(!got[0].contains_key("label"));
    }
}
