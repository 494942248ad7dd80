//! Recent model-call times kept beside the plan cache (`DIR/call-times.json`): per model, the
//! durations of its last [`KEPT`] successful subagent calls, added as each run ends. `plan`
//! and `waves` estimate a plan's duration from a run directory beside the plan
//! ([`MedianCall::of_run`]), else from these (a fresh `plan` has no run beside it).
//!
//! Best effort, like the cache itself: a file that cannot be read counts as empty, and a
//! write that fails is the caller's warning. Writes are whole (temporary file, then rename)
//! and serialised within the process (a batch's jobs end concurrently); two processes ending
//! runs at the same moment may each miss the other's calls, which only thins the sample.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use planwave_record::CallRecord;
use serde::{Deserialize, Serialize};

use super::PlanCache;

/// The file's name in the cache directory (not an entry: eviction leaves it alone).
pub const CALL_TIMES_FILE: &str = "call-times.json";

/// Calls kept per model: recent enough to follow a model's current speed, enough for a
/// steady median.
const KEPT: usize = 50;

/// Files of another layout are read as empty (and replaced by the next write).
const VERSION: u32 = 1;

#[derive(Default, Serialize, Deserialize)]
struct CallTimes {
    planwave_call_times: u32,
    /// Per model, call durations in milliseconds, oldest first.
    models: BTreeMap<String, Vec<f64>>,
}

/// The median of a model's recorded call times.
#[derive(Clone, Debug, PartialEq)]
pub struct MedianCall {
    pub secs: f64,
    /// How many calls it is the median of.
    pub calls: usize,
    /// The file they were read from.
    pub path: PathBuf,
}

/// The calls whose durations say how long a task's call takes: subagents' that succeeded,
/// with a duration that makes sense.
fn timed(c: &CallRecord) -> bool {
    c.role == "subagent" && c.outcome == "ok" && c.duration_ms.is_finite() && c.duration_ms >= 0.0
}

impl MedianCall {
    /// The median of `ms`, durations in milliseconds read from `path`; `None` when empty.
    fn of(mut ms: Vec<f64>, path: PathBuf) -> Option<MedianCall> {
        ms.retain(|d| d.is_finite() && *d >= 0.0);
        if ms.is_empty() {
            return None;
        }
        ms.sort_by(f64::total_cmp);
        Some(MedianCall {
            secs: ms[ms.len() / 2] / 1000.0,
            calls: ms.len(),
            path,
        })
    }

    /// The median of the last `KEPT` successful subagent calls of the finished run in
    /// `dir` (its `run.json`); `None` when `dir` holds no finished run, or one without such
    /// calls.
    pub fn of_run(dir: &Path) -> Option<MedianCall> {
        let run = planwave_storage::read_run(dir).ok()?;
        let mut ms: Vec<f64> = run
            .calls
            .iter()
            .filter(|c| timed(c))
            .map(|c| c.duration_ms)
            .collect();
        let recent = ms.split_off(ms.len().saturating_sub(KEPT));
        MedianCall::of(recent, dir.join("run.json"))
    }
}

impl PlanCache {
    pub fn call_times_path(&self) -> PathBuf {
        self.dir.join(CALL_TIMES_FILE)
    }

    /// Adds the successful subagent calls of `calls` that started at or after
    /// `since_ms` (Unix milliseconds: a resumed run's record repeats the calls of earlier
    /// sessions, which were recorded then) to their models' times.
    pub fn record_call_times(&self, calls: &[CallRecord], since_ms: i64) -> std::io::Result<()> {
        let fresh: Vec<(&str, f64)> = calls
            .iter()
            .filter(|c| timed(c) && c.started_at.timestamp_millis() >= since_ms)
            .map(|c| (c.model.as_str(), c.duration_ms))
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        static WRITING: Mutex<()> = Mutex::new(());
        let _one_writer = WRITING.lock().unwrap_or_else(|p| p.into_inner());
        let mut times = self.read_call_times();
        for (model, ms) in fresh {
            let kept = times.models.entry(model.to_owned()).or_default();
            kept.push(ms);
            if kept.len() > KEPT {
                kept.drain(..kept.len() - KEPT);
            }
        }
        times.planwave_call_times = VERSION;
        let mut bytes = serde_json::to_vec_pretty(&times)?;
        bytes.push(b'\n');
        std::fs::create_dir_all(&self.dir)?;
        let (tmp, mut file) = self.new_temp("call-times")?;
        let written = file
            .write_all(&bytes)
            .and_then(|()| std::fs::rename(&tmp, self.call_times_path()));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    /// The median of `model`'s recorded call times; `None` when none are recorded.
    pub fn median_call(&self, model: &str) -> Option<MedianCall> {
        let ms = self.read_call_times().models.remove(model)?;
        MedianCall::of(ms, self.call_times_path())
    }

    fn read_call_times(&self) -> CallTimes {
        crate::input_size::read_input(&self.call_times_path())
            .ok()
            .and_then(|b| serde_json::from_slice::<CallTimes>(&b).ok())
            .filter(|t| t.planwave_call_times == VERSION)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(role: &str, model: &str, ms: f64, outcome: &str) -> CallRecord {
        serde_json::from_value(serde_json::json!({
            "role": role, "model": model, "attempt": 1,
            "started_at": "2026-11-27T10:00:00.000000Z", "duration_ms": ms,
            "prompt_tokens": 1, "completion_tokens": 1, "reasoning_tokens": 0,
            "outcome": outcome,
        }))
        .expect("a call record")
    }

    #[test]
    fn the_last_calls_of_each_model_are_kept_and_give_the_median() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cache = PlanCache {
            dir: dir.path().join("cache"),
            max_entries: 10,
        };
        assert_eq!(cache.median_call("m"), None);
        let calls: Vec<CallRecord> = (0..KEPT + 10)
            .map(|i| call("subagent", "m", i as f64 * 10.0, "ok"))
            .chain([
                call("planner", "m", 1e9, "ok"),
                call("subagent", "m", 1e9, "error"),
                call("subagent", "other", 400.0, "ok"),
            ])
            .collect();
        cache.record_call_times(&calls, 0).expect("recorded");
        // Calls 10..60 are kept (the oldest ten went); the planner's and the failed one
        // never count.
        let m = cache.median_call("m").expect("median");
        assert_eq!(m.calls, KEPT);
        assert_eq!(m.secs, 0.35);
        assert_eq!(cache.median_call("other").map(|m| m.secs), Some(0.4));
        // Calls from before `since` (an earlier session's) are not added again.
        let later = i64::MAX;
        cache
            .record_call_times(&[call("subagent", "third", 1.0, "ok")], later)
            .expect("nothing to record");
        assert_eq!(cache.median_call("third"), None);
        // Not an entry of the cache: eviction never takes it.
        assert!(!super::super::is_entry_name(CALL_TIMES_FILE));
    }
}
