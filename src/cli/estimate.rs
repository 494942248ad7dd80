//! The estimated duration `plan` and `waves` print: waves × a per-wave time, the median of
//! the recent subagent calls in a run directory's `run.json` when there is one beside the
//! plan, else of the subagent model's recent calls recorded beside the plan cache, else a
//! stated default. A rough figure for a person deciding whether to start, not a promise:
//! tasks of a wave run in parallel, so a wave takes about one call.

use std::path::Path;

use planwave_runner::ops::{MedianCall, PlanCache};

/// Seconds per wave without measurements to go by.
const DEFAULT_WAVE_SECS: f64 = 30.0;

/// Where else call times may come from: the plan cache the settings name, and the model
/// whose times count (the one subagents would use).
pub struct CacheTimes<'a> {
    pub cache: &'a PlanCache,
    pub model: &'a str,
}

/// `estimated duration: ...` for a plan of `waves` waves, measured from the run in `dir` (the
/// plan's directory) when it holds one, else from the plan cache's call times, saying which
/// source it used.
pub fn line(waves: usize, dir: Option<&Path>, cached: Option<CacheTimes<'_>>) -> String {
    let from_run = dir.and_then(MedianCall::of_run).map(|m| {
        let why = format!(
            "the median of {} recent model calls in {}",
            m.calls,
            m.path.display()
        );
        (m.secs, why)
    });
    let measured = from_run.or_else(|| {
        let c = cached?;
        let m = c.cache.median_call(c.model)?;
        let why = format!(
            "the median of {} recent calls of {} in the plan cache's {}",
            m.calls,
            c.model,
            m.path.display()
        );
        Some((m.secs, why))
    });
    let (per_wave, why) = measured.unwrap_or_else(|| {
        (
            DEFAULT_WAVE_SECS,
            "a default: no recent model calls to measure".to_owned(),
        )
    });
    format!(
        "estimated duration: {} ({waves} waves × {per_wave:.1} s per wave, {why})\n",
        human(waves as f64 * per_wave)
    )
}

fn human(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..60 => format!("{secs:.1} s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}
