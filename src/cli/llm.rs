//! How a command's option groups (the job spec's types, `planwave_config::spec`) become
//! settings: resolved with the environment and planwave.toml by `planwave_config`.

use planwave_config::spec::settings_of;
pub use planwave_config::spec::{FlagGroup, MetaOptions, PlannerOptions, ResearchOptions, Seed};
use planwave_config::{ProcessEnv, Settings};

use super::exit::InvalidInput;

/// The command's settings: its flags resolved with the environment and planwave.toml.
pub fn settings(groups: &[&dyn FlagGroup]) -> Result<Settings, InvalidInput> {
    settings_of(groups, &ProcessEnv).map_err(InvalidInput::from)
}
