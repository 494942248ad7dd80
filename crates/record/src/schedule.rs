//! How a run let its tasks start, as its settings choose and `run.json` records it.

use serde::{Deserialize, Serialize};

/// When a task may start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Schedule {
    /// A task starts as soon as its own prerequisites are done.
    #[default]
    Dataflow,
    /// A barrier per wave: wave k+1 starts only when all of wave k is done. Kept to compare.
    Waves,
}

impl std::str::FromStr for Schedule {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "dataflow" => Ok(Schedule::Dataflow),
            "waves" => Ok(Schedule::Waves),
            other => Err(format!(
                "unknown schedule {other:?} (expected dataflow or waves)"
            )),
        }
    }
}

impl Schedule {
    pub fn as_str(self) -> &'static str {
        match self {
            Schedule::Dataflow => "dataflow",
            Schedule::Waves => "waves",
        }
    }
}
