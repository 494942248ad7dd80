//! The figures of a session workload per turn number: how TTFT, ITL, end-to-end latency
//! and the prompt grow with the conversation.

use planwave_plan::ValidatedPlan;
use serde::{Deserialize, Serialize};

use super::percentiles::Percentiles;
use super::serving::CallRecord;
use crate::workload::sessions::SessionMap;

/// The figures of one turn number over every conversation: how the context grows.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TurnFigures {
    pub turn: u32,
    pub requests: usize,
    pub ok: usize,
    pub cancelled: usize,
    /// Prompt tokens per successful request (the whole conversation so far).
    pub prompt_tokens: Percentiles,
    pub output_tokens: Percentiles,
    pub ttft_ms: Percentiles,
    /// Gaps between consecutive content chunks of the turn's streamed answers, pooled.
    #[serde(default)]
    pub itl_ms: Percentiles,
    pub e2e_ms: Percentiles,
}

/// Per turn number, the figures of the workload's requests (subagent calls).
pub(crate) fn turn_figures(
    plan: &ValidatedPlan,
    calls: &[CallRecord],
    map: &SessionMap,
) -> Vec<TurnFigures> {
    let most = map.turn.iter().copied().max().unwrap_or(0) as usize;
    let mut by_turn: Vec<Vec<&CallRecord>> = vec![Vec::new(); most];
    for c in calls.iter().filter(|c| c.role == "subagent") {
        if let Some(turn) = c
            .task
            .as_deref()
            .and_then(|id| plan.index_of_key(id))
            .and_then(|i| map.turn.get(i))
        {
            by_turn[*turn as usize - 1].push(c);
        }
    }
    by_turn
        .into_iter()
        .enumerate()
        .map(|(k, calls)| {
            let ok: Vec<&&CallRecord> = calls.iter().filter(|c| c.outcome == "ok").collect();
            TurnFigures {
                turn: k as u32 + 1,
                requests: calls.len(),
                ok: ok.len(),
                cancelled: calls.iter().filter(|c| c.outcome == "cancelled").count(),
                prompt_tokens: Percentiles::of(ok.iter().map(|c| c.prompt_tokens as f64).collect()),
                output_tokens: Percentiles::of(ok.iter().map(|c| c.output_tokens as f64).collect()),
                ttft_ms: Percentiles::of(ok.iter().filter_map(|c| c.ttft_ms).collect()),
                itl_ms: Percentiles::of(ok.iter().flat_map(|c| c.itl_ms.iter().copied()).collect()),
                e2e_ms: Percentiles::of(ok.iter().map(|c| c.e2e_ms).collect()),
            }
        })
        .collect()
}
