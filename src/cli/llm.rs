//! How a command's option groups (the job spec's types, `planwave_config::spec`) become
//! settings: resolved with the environment and planwave.toml by `planwave_config`.

use planwave_config::spec::settings_of;
pub use planwave_config::spec::{FlagGroup, MetaOptions, PlanCacheOptions, PlannerOptions, Seed};
use planwave_config::{Flags, ProcessEnv, Settings};

use super::exit::InvalidInput;

/// `--max-rounds` of a command that has no other research option group (`worker`, `batch`).
pub struct MaxRounds(pub Option<u32>);

impl FlagGroup for MaxRounds {
    fn add_to(&self, flags: &mut Flags) {
        flags.max_rounds = self.0;
    }
}

/// The command's settings: its flags resolved with the environment and planwave.toml.
pub fn settings(groups: &[&dyn FlagGroup]) -> Result<Settings, InvalidInput> {
    settings_of(groups, &ProcessEnv).map_err(InvalidInput::from)
}
