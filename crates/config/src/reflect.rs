//! The reflective loop's settings (seed 001's `[orchestrator]` and `[reflection]` tables):
//! how many rounds, when a round is good enough, and how much recovery a failed task gets.

use serde::Deserialize;

use crate::ConfigError;

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OrchestratorSection {
    /// Rounds of plan -> run -> evaluate -> reflect, the first included.
    pub max_reflection_rounds: Option<u32>,
    /// `is_successful` and `overall_score` at least this (0-100) ends the loop.
    pub success_threshold: Option<f64>,
    /// This many rounds in a row with failed tasks ends the loop.
    pub max_consecutive_failures: Option<u32>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReflectionSection {
    /// `retry_step` passes per round for tasks that failed on transient errors.
    pub max_step_retries: Option<u32>,
    /// `replan_from_failure` / `complete_replan` passes per round.
    pub max_task_replanning_attempts: Option<u32>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ReflectSettings {
    pub max_rounds: u32,
    pub success_threshold: f64,
    pub max_consecutive_failures: u32,
    pub max_step_retries: u32,
    pub max_task_replanning_attempts: u32,
}

impl Default for ReflectSettings {
    /// The seed's defaults (`max_reflection_rounds = 5`, `success_threshold = 80.0`,
    /// `max_step_retries = 3`, `max_task_replanning_attempts = 1`).
    fn default() -> Self {
        ReflectSettings {
            max_rounds: 5,
            success_threshold: 80.0,
            max_consecutive_failures: 3,
            max_step_retries: 3,
            max_task_replanning_attempts: 1,
        }
    }
}

pub(crate) fn resolve(
    o: &OrchestratorSection,
    r: &ReflectionSection,
) -> Result<ReflectSettings, ConfigError> {
    let d = ReflectSettings::default();
    let max_rounds = o.max_reflection_rounds.unwrap_or(d.max_rounds);
    if max_rounds == 0 {
        return Err(ConfigError::Invalid(
            "[orchestrator] max_reflection_rounds = 0: expected at least 1 round".into(),
        ));
    }
    let success_threshold = o.success_threshold.unwrap_or(d.success_threshold);
    if !(0.0..=100.0).contains(&success_threshold) {
        return Err(ConfigError::Invalid(format!(
            "[orchestrator] success_threshold = {success_threshold}: expected a score from 0 to 100"
        )));
    }
    let max_consecutive_failures = o
        .max_consecutive_failures
        .unwrap_or(d.max_consecutive_failures);
    if max_consecutive_failures == 0 {
        return Err(ConfigError::Invalid(
            "[orchestrator] max_consecutive_failures = 0: expected at least 1".into(),
        ));
    }
    Ok(ReflectSettings {
        max_rounds,
        success_threshold,
        max_consecutive_failures,
        max_step_retries: r.max_step_retries.unwrap_or(d.max_step_retries),
        max_task_replanning_attempts: r
            .max_task_replanning_attempts
            .unwrap_or(d.max_task_replanning_attempts),
    })
}
