//! Jobs wait for a place under `--max-running` before they start: a batch of a thousand jobs
//! starts two (by default), not a thousand. A waiting job is `queued` in its live state and
//! can be cancelled (it then ends `cancelled` without having started).

use tokio::sync::OwnedSemaphorePermit;

use crate::live::LiveRun;
use crate::state::AppState;

/// Shown as the job's status until it starts.
pub const QUEUED: &str = "queued";

/// Marks `live` as waiting (before its id is handed out, so the first look shows it).
pub fn enqueue(live: &LiveRun) {
    live.state().status = Some(QUEUED.into());
}

/// Waits for `live`'s turn; `None` when it was cancelled (or the server stopped) first,
/// and the job is then finished as `cancelled`.
pub async fn wait_turn(state: &AppState, live: &LiveRun) -> Option<OwnedSemaphorePermit> {
    let permit = tokio::select! {
        biased;
        () = live.cancel.cancelled() => None,
        p = state.limits.running.clone().acquire_owned() => p.ok(),
    };
    match permit {
        Some(p) => {
            let mut s = live.state();
            if s.status.as_deref() == Some(QUEUED) {
                s.status = None;
            }
            Some(p)
        }
        None => {
            live.finish(Ok("cancelled".into()));
            None
        }
    }
}
