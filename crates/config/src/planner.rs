//! `[planner]`, `[prompts] lang` and their flags, into the planner's own [`PlannerConfig`].

use planwave_plan::Lang;
use planwave_plan::PlanFormat;
use planwave_planner::{Fallback, PlannerConfig};

use crate::SettingsError;
use crate::file::ConfigFile;
use crate::flags::Flags;

pub(crate) fn resolve(file: &ConfigFile, flags: &Flags) -> Result<PlannerConfig, SettingsError> {
    let lang = match flags.lang {
        Some(l) => Some(l),
        None => match file.prompts.lang.as_deref() {
            None | Some("auto") => None,
            Some(s) => Some(
                s.parse::<Lang>()
                    .map_err(|e| SettingsError::Invalid(format!("[prompts] lang: {e}")))?,
            ),
        },
    };
    let d = PlannerConfig::default();
    let planner = PlannerConfig {
        // The first plan is an attempt too: fewer than one would never plan.
        attempts: flags
            .planner_attempts
            .or(file.planner.attempts)
            .unwrap_or(d.attempts)
            .max(1),
        min_tasks: file.planner.min_tasks.unwrap_or(d.min_tasks),
        max_tasks: file.planner.max_tasks.unwrap_or(d.max_tasks),
        task_limit: flags
            .task_limit
            .or(file.planner.task_limit)
            .unwrap_or(d.task_limit),
        lang,
        format: format(file, flags)?,
        fallback: match file.planner.fallback.as_deref() {
            None => d.fallback,
            Some(s) => s
                .parse::<Fallback>()
                .map_err(|e| SettingsError::Invalid(format!("[planner] fallback: {e}")))?,
        },
        meta: flags.meta.iter().cloned().collect(),
        questions: !flags.no_questions,
        answers: flags.answers.clone(),
    };
    if planner.task_limit == 0 {
        return Err(SettingsError::Invalid(
            "[planner] task_limit must be at least 1".into(),
        ));
    }
    if planner.min_tasks > planner.max_tasks {
        return Err(SettingsError::Invalid(format!(
            "[planner] min_tasks {} is larger than max_tasks {}",
            planner.min_tasks, planner.max_tasks
        )));
    }
    Ok(planner)
}

/// The plan format the planner asks for: `--plan-format`, else `[planner] format`, else
/// research tasks. Also decides the schema sent as `response_format`.
pub(crate) fn format(file: &ConfigFile, flags: &Flags) -> Result<PlanFormat, SettingsError> {
    if let Some(f) = flags.plan_format {
        return Ok(f);
    }
    match file.planner.format.as_deref() {
        None | Some("tasks") | Some("research") => Ok(PlanFormat::Research),
        Some("steps") => Ok(PlanFormat::Steps),
        Some(other) => Err(SettingsError::Invalid(format!(
            "[planner] format: unknown plan format {other:?} (expected tasks or steps)"
        ))),
    }
}
