//! Exit codes and how errors are printed.

use std::process::ExitCode;

pub const OK: u8 = 0;
pub const OTHER: u8 = 1;
pub const INVALID: u8 = 2;
pub const PARTIAL: u8 = 3;
/// The run's `--deadline` passed; it can be resumed.
pub const DEADLINE: u8 = 4;
/// The goal is too vague to plan and no answers were given: the planner's questions are in
/// `run.json` (status `needs_input`); answer them with `--answers FILE`.
pub const NEEDS_INPUT: u8 = 5;
/// The budget (`--max-tokens-total`, `--max-cost`) was spent; resuming with a larger one
/// goes on.
pub const BUDGET: u8 = 6;
pub const INTERRUPTED: u8 = 130;
/// Stopped by SIGTERM (128 + 15), after the same clean stop as Ctrl-C.
pub const TERMINATED: u8 = 143;

/// How a command ended when it did not fail outright.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome(pub u8);

/// Bad input: printed one problem per line, exit 2.
pub use planwave_runner::ops::InvalidInput;

pub fn report(result: anyhow::Result<Outcome>) -> ExitCode {
    match result {
        // Every command reports a stop as INTERRUPTED; which signal it was is known here.
        Ok(Outcome(INTERRUPTED)) if planwave_runner::ops::terminated() => {
            ExitCode::from(TERMINATED)
        }
        Ok(Outcome(code)) => ExitCode::from(code),
        Err(err) => {
            // A setting or option that makes no sense is bad input too, wherever it surfaced.
            let from_settings = err
                .downcast_ref::<planwave_config::SettingsError>()
                .map(|e| InvalidInput::from(e.clone()));
            let invalid = err.downcast_ref::<InvalidInput>().or_else(|| {
                err.downcast_ref::<planwave_runner::ops::RunnerError>()
                    .and_then(planwave_runner::ops::RunnerError::invalid_input)
            });
            if let Some(q) = err
                .downcast_ref::<planwave_runner::ops::RunnerError>()
                .and_then(planwave_runner::ops::RunnerError::questions)
            {
                planwave_runner::term::err(
                    "needs_input: the goal needs clarifying before it can be planned:",
                );
                for (i, q) in q.iter().enumerate() {
                    planwave_runner::term::err(&format!("  {}. {q}", i + 1));
                }
                return ExitCode::from(NEEDS_INPUT);
            }
            if let Some(inv) = invalid.or(from_settings.as_ref()) {
                for p in &inv.problems {
                    eprintln!("{}: {p}", inv.source_name);
                }
                return ExitCode::from(INVALID);
            }
            eprintln!("error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::from(OTHER)
        }
    }
}
