//! `[validate]`: the custom validator's command, into [`ValidatorSettings`].

use std::path::PathBuf;
use std::time::Duration;

use crate::SettingsError;
use crate::file::ConfigFile;
use crate::secs::file_secs;
use crate::settings::ValidatorSettings;

pub(crate) fn resolve(file: &ConfigFile) -> Result<Option<ValidatorSettings>, SettingsError> {
    let v = &file.validate;
    let timeout = file_secs("[validate] timeout_secs", v.timeout_secs)?.unwrap_or(DEFAULT_TIMEOUT);
    let Some(command) = &v.command else {
        return Ok(None);
    };
    let Some((program, args)) = command.split_first() else {
        return Err(SettingsError::Invalid(
            "[validate] command is empty: give the program and its arguments, [\"prog\", \"arg\"]"
                .into(),
        ));
    };
    if program.trim().is_empty() {
        return Err(SettingsError::Invalid(
            "[validate] command: the program's name is empty".into(),
        ));
    }
    // A program named by a path (`./check.py`, `tools/check`) is found from the config
    // file's directory, as other paths in it are; a bare name is looked up on PATH.
    let program = if program.contains('/') {
        file.relative(std::path::Path::new(program))
    } else {
        PathBuf::from(program)
    };
    Ok(Some(ValidatorSettings {
        program,
        args: args.to_vec(),
        timeout,
    }))
}

/// How long a validator may take for one plan unless `timeout_secs` says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
