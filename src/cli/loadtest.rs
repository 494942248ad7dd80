//! `planwave loadtest`: the load tester's own command (`planwave_loadtest_cli`), its
//! clients traced like every other model call, its ending as this binary's exit code.

use planwave_loadtest::SweepStatus;
use planwave_loadtest_cli::LoadtestArgs;

use super::exit::{INTERRUPTED, OK, Outcome, PARTIAL};

pub async fn loadtest(a: LoadtestArgs) -> anyhow::Result<Outcome> {
    let status = planwave_loadtest_cli::loadtest(a, super::telemetry::traced).await?;
    Ok(Outcome(match status {
        SweepStatus::Interrupted => INTERRUPTED,
        SweepStatus::Completed => OK,
        SweepStatus::Partial => PARTIAL,
    }))
}
