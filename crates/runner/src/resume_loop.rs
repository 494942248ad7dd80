//! `planwave resume` of a `research`: where its loop stood, read back from `rounds/<k>/`.
//! Rounds with a `round.json` are finished and rebuilt from their files; the first round
//! without one is the interrupted round: if it has a plan, it runs on with the tasks its
//! journal shows completed kept, else it is planned again. The loop then goes on to its stop
//! condition.

use std::path::Path;

use planwave_orchestrator::{Evaluation, LoopStart, PassRecord, RoundRecord};
use planwave_record::{RoundTag, RunResult};
use planwave_storage::{Replay, RunDir};
use serde::Deserialize;

use crate::error::Context;
use crate::resume::resume_presets;
use crate::rounds::RoundsDriver;
use crate::{InvalidInput, Notes, load_plan, open_journal};

/// The round numbers under `DIR/rounds/`, ascending.
fn round_numbers(top: &RunDir) -> crate::Result<Vec<u32>> {
    let dir = top.path("rounds")?;
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut out: Vec<u32> = std::fs::read_dir(&dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// The loop's run id, from the first round's journal: every round and the stream share it.
pub fn run_id(top: &RunDir) -> crate::Result<Option<uuid::Uuid>> {
    for k in round_numbers(top)? {
        let journal = top.path(&format!("rounds/{k}/events.jsonl"))?;
        if journal.is_file() {
            let replay = Replay::read(&journal)
                .map_err(|e| InvalidInput::one(journal.display().to_string(), e.to_string()))?;
            if replay.run_id.is_some() {
                return Ok(replay.run_id);
            }
        }
    }
    Ok(None)
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> crate::Result<T> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    Ok(serde_json::from_slice(&bytes)
        .map_err(|e| InvalidInput::one(path.display().to_string(), e.to_string()))?)
}

/// `round.json`: the round's record as the loop wrote it (its result is `run.json`).
#[derive(Deserialize)]
struct SavedRound {
    round: u32,
    status: planwave_record::RunStatus,
    passes: Vec<PassRecord>,
    overall_score: Option<f64>,
    correctness: Option<f64>,
    is_successful: Option<bool>,
    should_replan: Option<bool>,
    evaluation_id: Option<String>,
    reflection_id: Option<String>,
}

/// A finished round rebuilt from `rounds/<k>/`.
fn finished_round(dir: &Path, saved: SavedRound) -> crate::Result<RoundRecord> {
    let result: RunResult = read_json(&dir.join("run.json"))?;
    let evaluation = if dir.join("evaluation.json").is_file() {
        let kept: serde_json::Value = read_json(&dir.join("evaluation.json"))?;
        serde_json::from_value::<Evaluation>(kept["evaluation"].clone()).ok()
    } else {
        None
    };
    Ok(RoundRecord {
        round: saved.round,
        status: saved.status,
        passes: saved.passes,
        overall_score: saved.overall_score,
        correctness: saved.correctness,
        is_successful: saved.is_successful,
        should_replan: saved.should_replan,
        evaluation_id: saved.evaluation_id,
        reflection_id: saved.reflection_id,
        evaluation,
        result,
    })
}

/// Where the interrupted loop stood. `driver` gets the resumed round's journal (with the
/// `run_resumed` line) and what it needs to keep that round's books.
pub fn loop_start(
    top: &RunDir,
    driver: &mut RoundsDriver<'_>,
    notes: &dyn Notes,
) -> crate::Result<LoopStart> {
    let mut start = LoopStart::default();
    for k in round_numbers(top)? {
        let dir = top.path(&format!("rounds/{k}"))?;
        if k != start.rounds.len() as u32 + 1 {
            notes.note(&format!(
                "resume: rounds/{k} does not follow the rounds before it; ignored"
            ));
            break;
        }
        let saved = dir.join("round.json");
        if saved.is_file() {
            let record = finished_round(&dir, read_json(&saved)?)?;
            driver.seed_attempts(k, &dir);
            let summary = dir.join("reflection-summary.json");
            start.note = if summary.is_file() {
                let v: serde_json::Value = read_json(&summary)?;
                v["summary"].as_str().map(str::to_owned)
            } else {
                None
            };
            start.rounds.push(record);
            continue;
        }
        // The interrupted round: without a plan it is planned again from the start.
        if dir.join("plan.json").is_file() {
            let out = driver.round_dir(k)?;
            let plan = load_plan(&dir.join("plan.json"), notes)?;
            let replay = Replay::read(&out.path_no_links("events.jsonl")?)
                .map_err(|e| InvalidInput::one(dir.display().to_string(), e.to_string()))?;
            let run_id = driver.setup.run_id;
            let journal = open_journal(&out, "events.jsonl", run_id)?;
            let (preset, kept) = resume_presets(&replay, &plan, &out, &journal, run_id);
            for n in kept {
                notes.note(&format!("resume: round {k}: {n}"));
            }
            notes.note(&format!(
                "resuming round {k}: {} of {} tasks already completed",
                preset.len(),
                plan.len()
            ));
            driver.seed_attempts(k, &dir);
            driver.seed_round(RoundTag { round: k, pass: 1 }, journal, &dir);
            start.resume = Some((plan, preset));
        }
        break;
    }
    Ok(start)
}
