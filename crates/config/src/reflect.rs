//! `[orchestrator]`, `[reflection]` and `--max-rounds`, into the reflective loop's own
//! [`LoopPolicy`]: how many rounds, when a round is good enough, and how much recovery a
//! failed task gets.

use planwave_orchestrator::LoopPolicy;

use crate::SettingsError;
use crate::file::ConfigFile;
use crate::flags::Flags;

/// The loop's defaults (the orchestrator has none of its own): five rounds, success at an
/// overall score of 80, three failed rounds in a row stop the loop, three step retries and
/// one replanning per round, every round reflected on, no step-level reflection, and an
/// hour for the whole loop (the reference `config.toml`'s values, except step-level
/// reflection: it adds a model call to every recovery, so it is asked for, not assumed).
pub const DEFAULT_LOOP_POLICY: LoopPolicy = LoopPolicy {
    max_rounds: 5,
    success_threshold: 80.0,
    max_consecutive_failures: 3,
    max_step_retries: 3,
    max_task_replanning_attempts: 1,
    auto_reflection: true,
    step_reflection: false,
    timeout: Some(std::time::Duration::from_secs(3600)),
};

pub(crate) fn resolve(file: &ConfigFile, flags: &Flags) -> Result<LoopPolicy, SettingsError> {
    let (o, r) = (&file.orchestrator, &file.reflection);
    let d = DEFAULT_LOOP_POLICY;
    // The file's value is checked even when `--max-rounds` replaces it: a bad file is an
    // error whatever the command line says.
    let file_rounds = o.max_reflection_rounds.unwrap_or(d.max_rounds);
    if file_rounds == 0 {
        return Err(SettingsError::Invalid(
            "[orchestrator] max_reflection_rounds = 0: expected at least 1 round".into(),
        ));
    }
    let max_rounds = flags.max_rounds.unwrap_or(file_rounds);
    if max_rounds == 0 {
        return Err(SettingsError::setting(
            "--max-rounds",
            "0: expected at least 1 round",
        ));
    }
    let success_threshold = o.success_threshold.unwrap_or(d.success_threshold);
    if !(0.0..=100.0).contains(&success_threshold) {
        return Err(SettingsError::Invalid(format!(
            "[orchestrator] success_threshold = {success_threshold}: expected a score from 0 to 100"
        )));
    }
    let max_consecutive_failures = o
        .max_consecutive_failures
        .unwrap_or(d.max_consecutive_failures);
    if max_consecutive_failures == 0 {
        return Err(SettingsError::Invalid(
            "[orchestrator] max_consecutive_failures = 0: expected at least 1".into(),
        ));
    }
    Ok(LoopPolicy {
        max_rounds,
        success_threshold,
        max_consecutive_failures,
        max_step_retries: r.max_step_retries.unwrap_or(d.max_step_retries),
        max_task_replanning_attempts: r
            .max_task_replanning_attempts
            .unwrap_or(d.max_task_replanning_attempts),
        auto_reflection: o.enable_auto_reflection.unwrap_or(d.auto_reflection),
        step_reflection: r.enable_step_level_reflection.unwrap_or(d.step_reflection),
        timeout: crate::secs::file_secs("[orchestrator] task_timeout_secs", o.task_timeout_secs)?
            .or(d.timeout),
    })
}
