//! The option groups of the commands that execute plans are the job spec's
//! (`planwave_config::spec`); here only the names other commands (`loadtest`) import.

pub use planwave_config::spec::{ScheduleArg, read_latency_file};
