//! What the commands that run jobs (`run`, `research`, `resume`, `batch`, `plan`) share on
//! the way into the runner: the model client and prompts from the settings (traced, its
//! line on stderr). The option groups themselves are the job spec's
//! (`planwave_config::spec`), parsed here by clap.

use planwave_config::Settings;
pub use planwave_config::spec::JobOptions;
use planwave_runner::ops::{CtrlC, InvalidInput, Resources, Stderr};
use planwave_runner::ops::{JobIo, StreamFor};
use planwave_sim::SimConfig;

use super::progress::Terminal;

/// The model client and prompts the settings ask for; nothing is started yet.
pub trait Prepare {
    fn resources(&self, settings: &Settings) -> anyhow::Result<Resources>;
}

/// The model client and prompts the settings ask for, with the simulator's `sim`.
pub fn resources(settings: &Settings, sim: SimConfig) -> anyhow::Result<Resources> {
    Ok(Resources::prepare(
        settings,
        sim,
        super::telemetry::traced,
        &Stderr,
    )?)
}

impl Prepare for JobOptions {
    fn resources(&self, settings: &Settings) -> anyhow::Result<Resources> {
        let sim = self
            .sim_config(settings.run.seed)
            .map_err(InvalidInput::from)?;
        resources(settings, sim)
    }
}

/// What a command lends the runner's operations: the terminal's view, notes on stderr,
/// Ctrl-C, the `--events` stream; the run's fields go on the root span.
pub fn io<'a>(
    watch: &'a Terminal,
    stream: StreamFor<'a>,
    interrupt: &CtrlC,
    quiet: bool,
) -> JobIo<'a> {
    JobIo {
        watch,
        notes: &Stderr,
        cancel: interrupt.token(),
        stream,
        quiet,
        root_span: true,
    }
}
