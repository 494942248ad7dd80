//! The supervisor's linked subagents: registered when spawned, forgotten when ractor says
//! they stopped. A subagent that stopped without its report having been sent fails its
//! task here; one whose report was sent is only forgotten (the report, a message, may still
//! be queued behind the supervision event, which ractor delivers first).

use planwave_plan::ValidatedPlan;
use ractor::actor::messages::BoxedState;
use ractor::{ActorCell, ActorId};
use rustc_hash::FxHashMap;

use super::{Child, SupervisorState};
use crate::subagent::SubagentState;

/// The map of linked subagents, with room for as many as are expected at once: the widest
/// wave of the plan, at most the concurrency cap. Grown while dispatching, it was rehashed
/// into a fresh table each time it doubled, inside the supervisor's turn (at 10,000 in
/// flight, 7,168 entries moved into a new 800 KB table, fresh memory whose page faults the
/// turn also paid), and every dispatch behind that turn waited. A plan whose tasks overlap
/// across waves may still grow it, rarely.
pub(super) fn with_room(
    plan: &ValidatedPlan,
    concurrency: Option<usize>,
) -> FxHashMap<ActorId, Child> {
    let widest = plan.waves().iter().map(Vec::len).max().unwrap_or(0);
    let room = concurrency.map_or(widest, |cap| cap.min(widest));
    FxHashMap::with_capacity_and_hasher(room, Default::default())
}

impl SupervisorState {
    pub(super) fn register(&mut self, cell: ActorCell, generation: u32, index: usize) {
        let child = Child {
            cell,
            generation,
            index,
        };
        self.children.insert(child.cell.get_id(), child);
    }

    /// A subagent failed (it panicked): its task fails with `error`, unless its report was
    /// already settled. Whether a task ended.
    pub(super) fn child_died(&mut self, id: ActorId, error: String) -> bool {
        let Some(child) = self.children.remove(&id) else {
            return false; // already forgotten: killed on cancellation or a rebuilt plan
        };
        match self.current_index(child.generation, child.index) {
            Some(index) => self.fail_unreported(index, error),
            None => false, // its task was dropped by a rebuilt plan: no failure of anything
        }
    }

    /// A subagent stopped: after sending its report (its last state says so), or before, in
    /// which case its task fails with the stop's reason (`killed` for a kill). Whether a
    /// task ended.
    pub(super) fn child_stopped(
        &mut self,
        id: ActorId,
        last_state: Option<BoxedState>,
        reason: Option<String>,
    ) -> bool {
        let reported = last_state
            .and_then(|mut s| s.take::<SubagentState>().ok())
            .is_some_and(|s| s.reported());
        if reported {
            self.children.remove(&id);
            return false;
        }
        let why = reason.unwrap_or_else(|| "stopped".into());
        self.child_died(id, format!("subagent actor ended before reporting: {why}"))
    }

    /// Kills every linked subagent (the run is cancelled); their stop events find nothing.
    pub(super) fn kill_children(&mut self) {
        for (_, child) in self.children.drain() {
            child.cell.kill();
        }
    }

    /// Kills the subagents whose task `map` drops (a rebuilt plan), before the generation
    /// moves on: their endings would map to no task of the new plan.
    pub(super) fn kill_dropped(&mut self, map: &[Option<usize>]) {
        let mut children = std::mem::take(&mut self.children);
        children.retain(|_, child| {
            let kept = self
                .current_index(child.generation, child.index)
                .and_then(|i| map.get(i).copied().flatten())
                .is_some();
            if !kept {
                child.cell.kill();
            }
            kept
        });
        self.children = children;
    }

    #[cfg(test)]
    pub(super) fn child_of(&self, index: usize) -> Option<ActorCell> {
        self.children
            .values()
            .find(|c| self.current_index(c.generation, c.index) == Some(index))
            .map(|c| c.cell.clone())
    }
}
