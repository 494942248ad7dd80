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
        process_spec: process_spec(file)?,
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

/// The longest process specification read from `[planner] process_spec_file`: it is sent
/// with every planning request, so a file named by mistake (a log, a data set) is refused
/// rather than paid for in every prompt.
pub const MAX_PROCESS_SPEC_BYTES: u64 = 64 * 1024;

/// `[planner] process_spec` (text) or `process_spec_file` (a file), trimmed; `None` when
/// neither is given or the text is blank.
fn process_spec(file: &ConfigFile) -> Result<Option<String>, SettingsError> {
    let p = &file.planner;
    let text = match (&p.process_spec, &p.process_spec_file) {
        (Some(_), Some(_)) => {
            return Err(SettingsError::Invalid(
                "[planner] process_spec and process_spec_file: give one of them".into(),
            ));
        }
        (Some(text), None) => text.clone(),
        (None, Some(path)) => read_spec_file(&file.relative(path))?,
        (None, None) => return Ok(None),
    };
    let text = text.trim();
    Ok((!text.is_empty()).then(|| text.to_owned()))
}

fn read_spec_file(path: &std::path::Path) -> Result<String, SettingsError> {
    use std::io::Read;
    let invalid = |why: String| {
        SettingsError::Invalid(format!(
            "[planner] process_spec_file {}: {why}",
            path.display()
        ))
    };
    let f = std::fs::File::open(path).map_err(|e| invalid(e.to_string()))?;
    let mut bytes = Vec::new();
    // One byte over the cap tells a file that is too long from one exactly at it.
    f.take(MAX_PROCESS_SPEC_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| invalid(e.to_string()))?;
    if bytes.len() as u64 > MAX_PROCESS_SPEC_BYTES {
        return Err(invalid(format!(
            "longer than {MAX_PROCESS_SPEC_BYTES} bytes; the planning prompt carries all of it"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        invalid(format!(
            "not UTF-8 text (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        ))
    })
}
