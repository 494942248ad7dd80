//! `--batch-api` with `[llm.batch]`: whether model calls go through the provider's Batch API,
//! and its linger and poll intervals (flags first, then the file, then the defaults).

use std::time::Duration;

use planwave_llm::batch::BatchConfig;

use crate::SettingsError;
use crate::file::ConfigFile;
use crate::flags::Flags;
use crate::settings::LlmChoice;

/// The Batch API's settings when `--batch-api` is given; the price table is told so its
/// estimate takes the batch discount.
pub(crate) fn resolve(
    file: &ConfigFile,
    flags: &Flags,
    llm: &LlmChoice,
) -> Result<Option<BatchConfig>, SettingsError> {
    let b = &file.llm.batch;
    let d = BatchConfig::default();
    // The file's values are checked even when a flag replaces them or the API is off.
    let linger = b.linger_ms.map(Duration::from_millis);
    let poll = crate::secs::file_secs("[llm.batch] poll_secs", b.poll_secs)?;
    let poll_max = crate::secs::file_secs("[llm.batch] poll_max_secs", b.poll_max_secs)?;
    if !flags.batch_api {
        return Ok(None);
    }
    if matches!(llm, LlmChoice::Sim) {
        return Err(SettingsError::setting(
            "--batch-api",
            "needs an OpenAI-compatible server (--llm-base-url and --model, or [llm] in planwave.toml); the built-in simulator has no Batch API (`planwave sim-llm serve` has)",
        ));
    }
    Ok(Some(BatchConfig {
        linger: flags.batch_linger.or(linger).unwrap_or(d.linger),
        poll: flags.batch_poll.or(poll).unwrap_or(d.poll),
        poll_max: flags.batch_poll_max.or(poll_max).unwrap_or(d.poll_max),
        ..d
    }))
}
