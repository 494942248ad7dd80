//! The supervisor's children: subagents, registered when spawned and forgotten when ractor
//! says they stopped, and the integrator. How a child ended is read from ractor's event
//! alone: a subagent that stopped with the reason [`REPORTED`] sent its report (a message,
//! which may still be queued behind the event: ractor delivers supervision events first);
//! any other end fails its task.

use planwave_plan::ValidatedPlan;
use ractor::{ActorCell, ActorId};
use rustc_hash::FxHashMap;

use super::{Child, Ending, SupervisorState};
use crate::error::EngineError;
use crate::messages::{REPORTED, SupervisorMsg, TaskFailure};

/// How a child ended, as ractor tells it.
pub(super) enum End {
    /// It panicked, with this message.
    Panicked(String),
    /// It stopped, with this reason (`killed` for a kill).
    Stopped(Option<String>),
}

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
            task: Some((generation, index)),
        };
        self.children.insert(child.cell.get_id(), child);
    }

    /// A child ended. Whether a task ended with it.
    pub(super) fn child_ended(&mut self, id: ActorId, end: End) -> bool {
        if self.integrator.as_ref().is_some_and(|i| i.get_id() == id) {
            self.integrator_ended(end);
            return false;
        }
        let Some(child) = self.children.remove(&id) else {
            return false;
        };
        self.settle_if_quiet();
        let failure = match end {
            End::Stopped(Some(reason)) if reason == REPORTED => return false,
            End::Panicked(message) => format!("subagent panicked: {message}"),
            End::Stopped(reason) => format!(
                "subagent actor ended before reporting: {}",
                reason.as_deref().unwrap_or("stopped")
            ),
        };
        // Killed on purpose (cancellation, a rebuilt plan): its task is settled already.
        let Some((generation, index)) = child.task else {
            return false;
        };
        match self.current_index(generation, index) {
            Some(index) => self.fail_unreported(index, TaskFailure::Crashed(failure)),
            None => false, // its task was dropped by a rebuilt plan: no failure of anything
        }
    }

    /// The integrator ended before it answered: the run cannot have its report, so it
    /// stops here, with the error for the caller (completed tasks are in the journal).
    fn integrator_ended(&mut self, end: End) {
        self.integrator = None;
        if self.ending == Ending::Done {
            return;
        }
        self.failure = Some(match end {
            End::Panicked(message) => EngineError::Panicked {
                actor: "integrator",
                message,
            },
            End::Stopped(_) => EngineError::Lost("integrator"),
        });
        match self.ending {
            Ending::Running => self.finish(),
            // Waiting for subagents: `on_settled` answers with the failure.
            Ending::Settling => {}
            Ending::Integrating => self.answer_failure(),
            Ending::Done => {}
        }
    }

    /// Once every task has ended, the supervisor waits for its subagents to stop before it
    /// goes on: asked of itself, so what stopped subagents sent before their stop events (the
    /// calls of a killed one) is handled first.
    pub(super) fn settle_if_quiet(&mut self) {
        if self.ending == Ending::Settling && self.children.is_empty() {
            let _ = self.me.send_message(SupervisorMsg::Settled);
        }
    }

    /// Kills every linked subagent (the run is cancelled). Their tasks stay as they are (a
    /// running one becomes pending when the run ends); the run waits for their stops.
    pub(super) fn kill_children(&mut self) {
        for child in self.children.values_mut() {
            child.task = None;
            child.cell.kill();
        }
    }

    /// Kills the subagents whose task `map` drops (a rebuilt plan), before the generation
    /// moves on: their endings would map to no task of the new plan.
    pub(super) fn kill_dropped(&mut self, map: &[Option<usize>]) {
        let mut children = std::mem::take(&mut self.children);
        for child in children.values_mut() {
            let kept = child
                .task
                .and_then(|(generation, index)| self.current_index(generation, index))
                .and_then(|i| map.get(i).copied().flatten())
                .is_some();
            if !kept && child.task.is_some() {
                child.task = None;
                child.cell.kill();
            }
        }
        self.children = children;
    }

    #[cfg(test)]
    pub(super) fn child_of(&self, index: usize) -> Option<ActorCell> {
        self.children
            .values()
            .find(|c| c.task.and_then(|(g, i)| self.current_index(g, i)) == Some(index))
            .map(|c| c.cell.clone())
    }
}
