//! The estimated duration `plan` and `waves` print: waves × a per-wave time, the median of
//! the recent subagent calls in a run directory's `run.json` when there is one beside the
//! plan, else of the subagent model's recent calls recorded beside the plan cache, else a
//! stated default. A rough figure for a person deciding whether to start, not a promise:
//! tasks of a wave run in parallel, so a wave takes about one call.

use std::path::Path;

use planwave_runner::PlanCache;

/// Seconds per wave without measurements to go by.
const DEFAULT_WAVE_SECS: f64 = 30.0;

/// How many of the latest calls the median is taken over.
const RECENT_CALLS: usize = 50;

/// Where else call times may come from: the plan cache the settings name, and the model
/// whose times count (the one subagents would use).
pub struct CacheTimes<'a> {
    pub cache: &'a PlanCache,
    pub model: &'a str,
}

/// `estimated duration: ...` for a plan of `waves` waves, measured from `dir/run.json`, else
/// from the plan cache's call times, saying which source it used.
pub fn line(waves: usize, dir: Option<&Path>, cached: Option<CacheTimes<'_>>) -> String {
    let from_run = dir.and_then(|d| {
        let run_json = d.join("run.json");
        median_call_secs(&run_json).map(|(secs, n)| {
            let why = format!(
                "the median of {n} recent model calls in {}",
                run_json.display()
            );
            (secs, why)
        })
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

/// The median duration (seconds) of the latest successful subagent calls, and how many.
fn median_call_secs(run_json: &Path) -> Option<(f64, usize)> {
    let text = std::fs::read_to_string(run_json).ok()?;
    let run: serde_json::Value = serde_json::from_str(&text).ok()?;
    let mut ms: Vec<f64> = run["calls"]
        .as_array()?
        .iter()
        .filter(|c| c["role"] == "subagent" && c["outcome"] == "ok")
        .filter_map(|c| c["duration_ms"].as_f64())
        .filter(|d| d.is_finite() && *d >= 0.0)
        .collect();
    if ms.is_empty() {
        return None;
    }
    let recent = ms.split_off(ms.len().saturating_sub(RECENT_CALLS));
    let mut recent = recent;
    recent.sort_by(f64::total_cmp);
    Some((recent[recent.len() / 2] / 1000.0, recent.len()))
}

fn human(secs: f64) -> String {
    let s = secs.round() as u64;
    match s {
        0..60 => format!("{secs:.1} s"),
        60..3600 => format!("{}m {:02}s", s / 60, s % 60),
        _ => format!("{}h {:02}m", s / 3600, (s % 3600) / 60),
    }
}
