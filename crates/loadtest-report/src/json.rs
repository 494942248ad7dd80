//! The `--json` document of a load test: the workload, every run, the sweep's summary.

use serde::Serialize;

use planwave_loadtest::{LoadReport, SaturationReport, SweepOutcome, SweepSummary, WorkloadInfo};

/// What the workload was, as the document names it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadDoc {
    pub source: String,
    pub tasks: usize,
    pub waves: usize,
    pub seed: u64,
    /// The latency model (`lognormal:100:1`), as given or the default.
    pub latency: String,
    pub latency_file: Option<String>,
    pub model: String,
}

impl WorkloadDoc {
    pub(crate) fn of(w: &WorkloadInfo) -> WorkloadDoc {
        WorkloadDoc {
            source: w.source.clone(),
            tasks: w.plan.len(),
            waves: w.plan.waves().len(),
            seed: w.seed,
            latency: w.latency.to_string(),
            latency_file: w.latency_file.as_ref().map(|p| p.display().to_string()),
            model: w.model.clone(),
        }
    }
}

/// The whole document (`compare` reads it back).
#[derive(Clone, Debug, Serialize)]
pub struct JsonReport<'a> {
    pub workload: WorkloadDoc,
    pub runs: &'a [LoadReport],
    /// `null` without a sweep.
    pub sweep: Option<SweepSummary>,
    /// The saturation check of a rate sweep; `null` for anything else.
    pub saturation: Option<SaturationReport>,
}

impl<'a> JsonReport<'a> {
    /// The document of a sweep that ran `workload`.
    pub fn of(outcome: &'a SweepOutcome, workload: &WorkloadInfo) -> JsonReport<'a> {
        JsonReport {
            workload: WorkloadDoc::of(workload),
            runs: &outcome.runs,
            sweep: outcome.summary(),
            saturation: outcome.saturation.clone(),
        }
    }

    /// Pretty JSON with every object's keys sorted, as the document has always been written,
    /// so saved outputs of different versions diff figure by figure.
    pub fn to_pretty_json(&self) -> serde_json::Result<String> {
        serde_json::to_string_pretty(&serde_json::to_value(self)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_data;

    #[test]
    fn the_document_has_sorted_keys_and_a_null_sweep_for_one_run() {
        let workload = test_data::workload("chain (seed 0)", planwave_plan::generate::chain(3));
        let outcome = test_data::outcome(&workload, vec![LoadReport::default()], None);
        let text = JsonReport::of(&outcome, &workload)
            .to_pretty_json()
            .expect("json");
        let at = |key: &str| text.find(&format!("\"{key}\"")).expect(key);
        assert!(
            at("runs") < at("sweep") && at("sweep") < at("workload"),
            "{text}"
        );
        assert!(
            at("blocked") < at("bound_source"),
            "run keys sorted too: {text}"
        );
        let v: serde_json::Value = serde_json::from_str(&text).expect("parses");
        assert_eq!(v["sweep"], serde_json::Value::Null);
        assert_eq!(v["workload"]["latency"], "lognormal:100:1");
        assert_eq!(
            (
                v["workload"]["tasks"].as_u64(),
                v["workload"]["waves"].as_u64()
            ),
            (Some(3), Some(3))
        );
        assert_eq!(v["workload"]["latency_file"], serde_json::Value::Null);
    }
}
