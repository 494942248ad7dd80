//! Plans given on the command line (`-` is stdin), read by the runner; warnings on stderr.

use std::path::Path;

use planwave_plan::ValidatedPlan;
use planwave_runner::ops::{InvalidInput, Stderr};

/// Reads, parses and validates a plan; any problem is an [`InvalidInput`] (exit 2).
pub fn load_plan(path: &Path) -> Result<ValidatedPlan, InvalidInput> {
    planwave_runner::ops::load_plan(path, &Stderr)
}
