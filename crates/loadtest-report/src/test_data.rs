//! What the report's tests draw: a workload and a sweep's outcome, as `planwave-loadtest`
//! hands them over.

use std::sync::Arc;

use planwave_loadtest::{
    DEFAULT_LATENCY, LoadReport, SaturationReport, SweepOutcome, WorkloadInfo,
};
use planwave_plan::{PlanSpec, ValidatedPlan};

/// The workload of `spec`, named `source`, on the in-process simulator at the default
/// latency.
pub(crate) fn workload(source: &str, spec: PlanSpec) -> WorkloadInfo {
    WorkloadInfo {
        plan: Arc::new(ValidatedPlan::new(spec).expect("a valid plan")),
        source: source.into(),
        model: "in-process simulator".into(),
        seed: 0,
        latency: DEFAULT_LATENCY,
        latency_file: None,
        latency_by_server: false,
    }
}

/// A sweep that ran `runs` of `w` to the end.
pub(crate) fn outcome(
    w: &WorkloadInfo,
    runs: Vec<LoadReport>,
    saturation: Option<SaturationReport>,
) -> SweepOutcome {
    SweepOutcome {
        runs,
        workload: Some(w.clone()),
        interrupted: false,
        saturation,
    }
}
