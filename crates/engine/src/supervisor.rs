//! The run's scheduling state and the supervisor actor that owns its lifetime.
//!
//! The state (which task may start, the records, the sections) sits behind one mutex shared
//! by the supervisor and the subagents: a subagent that ends settles its own outcome and
//! starts the subagents its completion made ready, itself, instead of reporting to the
//! supervisor and waiting for it to start them. Along a chain, each step is then one task
//! woken (the next subagent) instead of three (a report, ractor's start and end notices to
//! the supervisor, and the next subagent), and the tasks completions make ready are started
//! on whichever worker the completing subagents run, not all by one actor.
//!
//! The supervisor actor starts the first tasks, takes a backlog of ready tasks in bounded
//! turns (`Dispatch` self-messages), applies journal acknowledgements (with a journal, a
//! completion's dependents start from that turn), plan rebuilds and cancellation, and is
//! stopped when the run ends. Subagents are not linked to it: each one turns its own ending
//! (a report, a panic, being dropped) into exactly one outcome (see `subagent`), and the
//! supervisor kills running ones through [`SupervisorState`]'s registry.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use planwave_record::{CancelReason, Event, Preset, TaskRecord, TaskStatus};
use planwave_storage::JournalError;
use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef};
use tokio::sync::oneshot;

use crate::integrator::IntegratorMsg;
use crate::scheduler::Scheduler;
use crate::shared::RunShared;
use crate::task_spans::TaskSpans;

mod dispatch;
mod rebase;
mod settle;

pub use dispatch::Ending;
pub(crate) use dispatch::{crash, died, task_ended};
pub use rebase::{Close, Rebase};

pub struct Supervisor;

pub enum SupervisorMsg {
    /// Start up to one batch of ready tasks (sent to itself).
    Dispatch,
    /// The journal made task `index` (of the generation given) durable (or could not).
    Committed(u32, usize, Result<(), JournalError>),
    /// The plan grew or closed while running (a streamed plan): a new generation.
    Rebase(Box<Rebase>),
    /// Stop starting tasks, kill running subagents, and finish the run now.
    Cancel(CancelReason),
    /// Kills task `index`'s subagent without cancelling anything (it ends unsettled); replies
    /// whether it was registered.
    #[cfg(test)]
    Kill(usize, ractor::RpcReplyPort<bool>),
}

pub struct SupervisorArgs {
    pub shared: Arc<RunShared>,
    /// `None` while a streamed plan is open: the integrator comes with the final plan.
    pub integrator: Option<ActorRef<IntegratorMsg>>,
    pub done: oneshot::Sender<SupervisorOutcome>,
    pub preset: Vec<Preset>,
    /// The plan may still grow: the run does not end when its tasks have, only once a
    /// closing [`Rebase`] has come.
    pub open: bool,
}

/// The run as the supervisor saw it end.
#[derive(Debug)]
pub struct SupervisorOutcome {
    pub records: Vec<TaskRecord>,
    pub sections: Vec<Option<Arc<str>>>,
    pub retries: u64,
    /// Set when the run was cancelled; unfinished tasks are left `pending`.
    pub cancelled: Option<CancelReason>,
    /// Completions the journal could not make durable (a resume runs those tasks again).
    pub warnings: Vec<String>,
}

/// The run's scheduling state, shared by the supervisor and every subagent.
pub type Core = Arc<Mutex<SupervisorState>>;

/// The state, even after a panic elsewhere left the lock poisoned: whoever takes it next
/// must still be able to end the run (see [`crash`]).
pub(crate) fn lock(core: &Core) -> MutexGuard<'_, SupervisorState> {
    core.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A completion waiting for the journal's acknowledgement.
struct PendingCommit {
    /// None when no sink listens.
    event: Option<Event>,
    section: Arc<str>,
    /// The subagent could not write the file; the integrator tries again and reports.
    write: bool,
}

pub struct SupervisorState {
    shared: Arc<RunShared>,
    /// The supervisor actor: journal acknowledgements and further dispatch turns go to it,
    /// and it is stopped when the run ends.
    me: ActorRef<SupervisorMsg>,
    sched: Scheduler,
    records: Vec<TaskRecord>,
    sections: Vec<Option<Arc<str>>>,
    /// Running subagents by task (this generation's indices), to kill on cancellation or
    /// when a rebuilt plan drops their task.
    children: Vec<Option<ActorCell>>,
    integrator: Option<ActorRef<IntegratorMsg>>,
    done: Option<oneshot::Sender<SupervisorOutcome>>,
    dispatch_queued: bool,
    retries: u64,
    cancelled: Option<CancelReason>,
    pending_commits: HashMap<usize, PendingCommit>,
    warnings: Vec<String>,
    spans: TaskSpans,
    /// Completed sections not yet handed to the integrator (see [`SupervisorState::hand_section`]).
    held: Vec<(usize, Arc<str>, bool)>,
    /// The plan may still grow (streamed plan not closed).
    open: bool,
    /// How many times the plan was rebuilt; `maps[g]` takes generation `g`'s task indices
    /// to generation `g + 1`'s.
    generation: u32,
    maps: Vec<Vec<Option<usize>>>,
}

/// The supervisor actor's own state: its handle on the shared one.
pub struct SupervisorHandle {
    core: Core,
}

impl Drop for SupervisorHandle {
    /// However the supervisor ends (stopped after the run, or a panic in one of its turns),
    /// a run not yet finished is abandoned: the waiting caller hears it was lost instead of
    /// waiting on subagents that may never end it.
    fn drop(&mut self) {
        lock(&self.core).abandon();
    }
}

impl Actor for Supervisor {
    type Msg = SupervisorMsg;
    type State = SupervisorHandle;
    type Arguments = SupervisorArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<SupervisorMsg>,
        args: SupervisorArgs,
    ) -> Result<SupervisorHandle, ActorProcessingErr> {
        let plan = &args.shared.plan;
        let records = (0..plan.len())
            .map(|i| TaskRecord::pending(plan, i))
            .collect();
        let mut state = SupervisorState {
            sched: Scheduler::new(
                plan,
                args.shared.config.schedule,
                args.shared.config.concurrency,
            ),
            shared: args.shared.clone(),
            me: myself,
            records,
            sections: vec![None; plan.len()],
            children: vec![None; plan.len()],
            integrator: args.integrator,
            done: Some(args.done),
            dispatch_queued: false,
            retries: 0,
            cancelled: None,
            pending_commits: HashMap::new(),
            warnings: Vec::new(),
            spans: TaskSpans::new(plan.len()),
            held: Vec::with_capacity(settle::HELD_SECTIONS),
            open: args.open,
            generation: 0,
            maps: Vec::new(),
        };
        for mut p in args.preset {
            // Checked again: a resumed run's kept sections are flagged as a first run's are.
            p.record.warnings = crate::quality::section_warnings(&p.section);
            state.retries += u64::from(p.record.attempts.saturating_sub(1));
            state.sched.preset_completed(&args.shared.plan, p.index);
            state.to_integrator(IntegratorMsg::Section {
                index: p.index,
                text: p.section.clone(),
                write: false,
            });
            state.sections[p.index] = Some(p.section);
            state.records[p.index] = p.record;
        }
        Ok(SupervisorHandle {
            core: Arc::new(Mutex::new(state)),
        })
    }

    async fn post_start(
        &self,
        _myself: ActorRef<SupervisorMsg>,
        handle: &mut SupervisorHandle,
    ) -> Result<(), ActorProcessingErr> {
        lock(&handle.core).announce_ready();
        dispatch::dispatch(&handle.core).await;
        lock(&handle.core).finish_if_done();
        Ok(())
    }

    async fn handle(
        &self,
        _myself: ActorRef<SupervisorMsg>,
        msg: SupervisorMsg,
        handle: &mut SupervisorHandle,
    ) -> Result<(), ActorProcessingErr> {
        let core = &handle.core;
        match msg {
            SupervisorMsg::Dispatch => {
                // The subagents of the previous turn get this worker first (they queue behind
                // it). Back to back, the turns started a 10,000-task backlog faster than two
                // workers ran it, and every subagent waiting to run held its memory: 60 %
                // more page faults for a wide zero-latency run. A subagent that starts a
                // model call yields at once, so turns are not held up by slow models.
                tokio::task::yield_now().await;
                lock(core).dispatch_queued = false;
            }
            SupervisorMsg::Committed(generation, index, result) => {
                let mut state = lock(core);
                let Some(index) = state.current_index(generation, index) else {
                    return Ok(());
                };
                state.on_committed(index, result);
            }
            SupervisorMsg::Rebase(rebase) => {
                let mut state = lock(core);
                if state.cancelled.is_none() {
                    // Held sections carry this generation's indices.
                    state.flush_held();
                    state.rebase(*rebase);
                }
            }
            SupervisorMsg::Cancel(reason) => {
                let mut state = lock(core);
                if state.cancelled.is_none() {
                    state.cancelled = Some(reason);
                    for cell in state.children.iter_mut().filter_map(Option::take) {
                        cell.kill();
                    }
                    state.finish();
                }
                return Ok(());
            }
            #[cfg(test)]
            SupervisorMsg::Kill(index, reply) => {
                let state = lock(core);
                let child = state.children.get(index).and_then(Option::as_ref);
                if let Some(cell) = child {
                    cell.kill();
                }
                let _ = reply.send(child.is_some());
                return Ok(());
            }
        }
        dispatch::dispatch(core).await;
        Ok(())
    }
}

impl SupervisorState {
    /// `task_ready` for every task that may start at the run's beginning.
    fn announce_ready(&self) {
        if !self.shared.wants_events() {
            return;
        }
        let plan = &self.shared.plan;
        let ready = (0..plan.len()).filter(|&i| {
            self.sched.status(i) == TaskStatus::Pending
                && plan
                    .deps(i)
                    .iter()
                    .all(|&d| self.sched.status(d as usize) == TaskStatus::Completed)
        });
        self.announce(ready);
    }
}

#[cfg(test)]
mod tests;
