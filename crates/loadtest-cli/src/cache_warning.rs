//! The warning of a run whose prompts the server served from its prefix cache although the
//! workload did not ask for sharing: its TTFT describes the cache, not the server. Said on
//! stderr and kept in the run's figures (JSON, HTML).

use planwave_loadtest::SweepOutcome;
use planwave_runner::eprintln;

use crate::flags::LoadtestArgs;

/// The likely cause, from what the workload was made of.
fn cause(a: &LoadtestArgs) -> &'static str {
    if a.dataset.is_some() {
        "the --dataset's prompts repeat or share a long prefix; give more distinct prompts, or --input-tokens"
    } else if a.input_tokens.is_some() || a.trace.is_some() {
        "the prompts are short next to the chat template the server caches for every request; give longer --input-tokens"
    } else {
        "planwave's own task prompts share their instructions; give --input-tokens for distinct synthetic prompts"
    }
}

/// Warns about every run past the threshold, unless the workload asked for a shared prefix
/// or is multi-turn (whose turns re-send their conversation, as real sessions do).
pub(crate) fn warn(a: &LoadtestArgs, outcome: &mut SweepOutcome) {
    let w = &a.workload;
    if a.shared_prefix.is_some() || w.multi_turn || w.turns.is_some() {
        return;
    }
    for r in &mut outcome.runs {
        let run = r.label.clone().unwrap_or_else(|| r.schedule.clone());
        let Some(cache) = r.serving.as_mut().map(|s| &mut s.cache) else {
            continue;
        };
        if !cache.mostly_cached() {
            continue;
        }
        let share = cache.cached_share.unwrap_or_default() * 100.0;
        let text = format!(
            "{share:.0} % of the prompt tokens were served from the server's prefix cache, and the workload did not ask for sharing (--shared-prefix): TTFT describes the cache, not the server. Likely cause: {}",
            cause(a)
        );
        eprintln!("planwave loadtest: warning: {run}: {text}");
        cache.warning = Some(text);
    }
}
