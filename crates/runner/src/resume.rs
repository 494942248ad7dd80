//! Going on from a journal: which tasks an earlier attempt durably completed (kept, never
//! run again) and the `run_resumed` record. Shared by `resume DIR` and by a batch job that
//! ran before (a crash, Ctrl-C).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use planwave_plan::ValidatedPlan;
use planwave_record::{Event, EventKind, EventSink, Preset};
use planwave_storage::{Journal, Replay, RunDir, RunLock};

use crate::{InvalidInput, Notes, RunnerError, load_plan, lock_run_dir};

/// The tasks `replay` shows durably completed for `plan` (with notes on completions not
/// trusted), recorded in `events` as a `run_resumed` event.
pub fn resume_presets(
    replay: &Replay,
    plan: &ValidatedPlan,
    out: &RunDir,
    events: &Journal,
    run_id: uuid::Uuid,
) -> (Vec<Preset>, Vec<String>) {
    let (preset, notes) = replay.presets(plan, out);
    events.emit(&Event::now(EventKind::RunResumed {
        run_id,
        completed: preset.len(),
        pending: plan.len() - preset.len(),
    }));
    (preset, notes)
}

/// A run directory, locked, ready to go on from its journal.
pub struct Resumed {
    pub out: RunDir,
    pub plan: Arc<ValidatedPlan>,
    pub run_id: uuid::Uuid,
    /// The tasks kept from earlier attempts.
    pub preset: Vec<Preset>,
    pub events: Arc<Journal>,
    _lock: RunLock,
}

/// The run directory `dir` names, checked to hold a plan: a run that stopped before its
/// plan was ready has nothing to resume.
pub fn resumable_dir(dir: &Path) -> Result<PathBuf, InvalidInput> {
    let canonical = dir.canonicalize().map_err(|e| {
        InvalidInput::one(
            dir.display().to_string(),
            format!("cannot open the run directory: {e}"),
        )
    })?;
    if !canonical.join("events.jsonl").is_file() && !canonical.join("invocation.json").is_file() {
        return Err(InvalidInput::one(
            canonical.display().to_string(),
            "is not a planwave run directory (it has no events.jsonl); nothing to resume",
        ));
    }
    if !canonical.join("plan.json").is_file() {
        return Err(InvalidInput::one(
            canonical.display().to_string(),
            "no plan.json: the run stopped before its plan was ready; start it again",
        ));
    }
    Ok(canonical)
}

/// Locks `out` (a directory [`resumable_dir`] accepted, as the front end opened it: a queue
/// worker's mirrors its files), reads its plan and journal, and reopens the journal with the
/// resume recorded, its lines also stored in `mirror` (a queue worker's stream). Completions
/// that cannot be trusted are noted (`resume: ...`).
pub fn resume_opened(
    out: RunDir,
    notes: &dyn Notes,
    mirror: Option<Arc<dyn planwave_storage::JournalMirror>>,
) -> crate::Result<Resumed> {
    let dir = out.root().to_path_buf();
    let dir = dir.as_path();
    let lock = lock_run_dir(&out)?;
    let plan = Arc::new(load_plan(&dir.join("plan.json"), notes)?);
    let replay = Replay::read(&out.path_no_links("events.jsonl")?)
        .map_err(|e| InvalidInput::one(dir.display().to_string(), e.to_string()))?;
    let run_id = replay
        .run_id
        .ok_or_else(|| RunnerError::message("the journal names no run"))?;
    for line in &replay.garbage_lines {
        notes.note(&format!(
            "resume: {}/events.jsonl line {line} is not a JSON event (damaged; skipped)",
            dir.display()
        ));
    }
    let temps = out.remove_leftover_temps();
    if temps > 0 {
        notes.note(&format!(
            "resume: removed {temps} temporary file(s) an interrupted write left"
        ));
    }
    let events = crate::open_journal_mirrored(&out, "events.jsonl", run_id, mirror)?;
    let (preset, kept_notes) = resume_presets(&replay, &plan, &out, &events, run_id);
    for n in kept_notes {
        notes.note(&format!("resume: {n}"));
    }
    Ok(Resumed {
        out,
        plan,
        run_id,
        preset,
        events,
        _lock: lock,
    })
}
