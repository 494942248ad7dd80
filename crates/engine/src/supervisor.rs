//! The supervisor actor: the only owner of its run's scheduling state.
//!
//! It asks the pure [`Scheduler`] which tasks may start, spawns one linked [`Subagent`] per
//! ready task, and hears how each one ended: a [`SupervisorMsg::Ended`] report by message,
//! or, when a subagent panicked or stopped before reporting, a supervision event from
//! ractor (`handle_supervisor_evt`), which fails the task with the panic's message or the
//! stop's reason. Either way it records the outcome, journals it, and starts what became
//! ready. Nothing of its state is reachable from a subagent: no lock, no shared handle.
//!
//! It also takes a backlog of ready tasks in bounded turns (`Dispatch` self-messages),
//! journal acknowledgements (with a journal, a completion's dependents start from that
//! turn), plan rebuilds of a streamed plan (`Rebase`) and cancellation, and stops itself
//! when the run ends; ractor then stops any subagent still linked to it.
//!
//! [`Subagent`]: crate::subagent::Subagent

use std::collections::HashMap;
use std::sync::Arc;

use planwave_record::{CancelReason, Event, Preset, TaskRecord, TaskStatus};
use planwave_storage::JournalError;
use ractor::{Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use rustc_hash::FxHashMap;
use tokio::sync::oneshot;

use crate::integrator::IntegratorMsg;
use crate::scheduler::Scheduler;
use crate::shared::RunShared;
use crate::subagent::SubagentReport;
use crate::task_spans::TaskSpans;

mod children;
mod dispatch;
mod rebase;
mod settle;

pub use rebase::{Close, Rebase};

pub struct Supervisor;

pub enum SupervisorMsg {
    /// Start up to one batch of ready tasks (sent to itself).
    Dispatch,
    /// A subagent of plan generation `generation` reports how its task ended.
    Ended(u32, Box<SubagentReport>),
    /// The journal made task `index` (of the generation given) durable (or could not).
    Committed(u32, usize, Result<(), JournalError>),
    /// The plan grew or closed while running (a streamed plan): a new generation.
    Rebase(Box<Rebase>),
    /// Stop starting tasks, kill running subagents, and finish the run now.
    Cancel(CancelReason),
    /// The actor of task `index`'s subagent, while it is linked (for tests that stop or
    /// kill it from outside).
    #[cfg(test)]
    Child(usize, ractor::RpcReplyPort<Option<ActorCell>>),
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

/// A completion waiting for the journal's acknowledgement.
struct PendingCommit {
    /// None when no sink listens.
    event: Option<Event>,
    section: Arc<str>,
    /// The subagent could not write the file; the integrator tries again and reports.
    write: bool,
}

/// A linked subagent, until ractor tells the supervisor it has stopped.
struct Child {
    cell: ActorCell,
    /// The plan generation it started under and its task's index in that generation.
    generation: u32,
    index: usize,
}

/// The run's scheduling state, owned by the supervisor actor alone.
pub struct SupervisorState {
    shared: Arc<RunShared>,
    /// The supervisor itself: journal acknowledgements and further dispatch turns go to it,
    /// subagents report to it, and it stops itself when the run ends.
    me: ActorRef<SupervisorMsg>,
    sched: Scheduler,
    records: Vec<TaskRecord>,
    sections: Vec<Option<Arc<str>>>,
    /// Linked subagents by actor, so a supervision event names the task it ends.
    /// ractor's ids are sequential integers: FxHash, not SipHash.
    children: FxHashMap<ActorId, Child>,
    integrator: Option<ActorRef<IntegratorMsg>>,
    /// Taken when the run ends; dropped unsent (the supervisor panicked), the caller hears
    /// the run was lost.
    done: Option<oneshot::Sender<SupervisorOutcome>>,
    dispatch_queued: bool,
    retries: u64,
    cancelled: Option<CancelReason>,
    pending_commits: HashMap<usize, PendingCommit>,
    warnings: Vec<String>,
    spans: TaskSpans,
    /// When each ready task became ready (only when events are wanted), taken by its
    /// `task_started`.
    ready_at: Vec<Option<std::time::Instant>>,
    /// Completed sections not yet handed to the integrator (see `settle::hand_section`).
    held: Vec<(usize, Arc<str>, bool)>,
    /// The plan may still grow (streamed plan not closed).
    open: bool,
    /// How many times the plan was rebuilt; `maps[g]` takes generation `g`'s task indices
    /// to generation `g + 1`'s.
    generation: u32,
    maps: Vec<Vec<Option<usize>>>,
}

impl Actor for Supervisor {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = SupervisorArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<SupervisorMsg>,
        args: SupervisorArgs,
    ) -> Result<SupervisorState, ActorProcessingErr> {
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
            children: children::with_room(plan, args.shared.config.concurrency),
            integrator: args.integrator,
            done: Some(args.done),
            dispatch_queued: false,
            retries: 0,
            cancelled: None,
            pending_commits: HashMap::new(),
            warnings: Vec::new(),
            spans: TaskSpans::new(plan.len()),
            ready_at: if args.shared.wants_events() {
                vec![None; plan.len()]
            } else {
                Vec::new()
            },
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
        Ok(state)
    }

    async fn post_start(
        &self,
        myself: ActorRef<SupervisorMsg>,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        state.announce_ready();
        state.dispatch(&myself).await;
        state.finish_if_done();
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<SupervisorMsg>,
        msg: SupervisorMsg,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SupervisorMsg::Dispatch => state.dispatch_queued = false,
            SupervisorMsg::Ended(generation, report) => state.on_ended(generation, *report),
            SupervisorMsg::Committed(generation, index, result) => {
                if let Some(index) = state.current_index(generation, index) {
                    state.on_committed(index, result);
                }
            }
            SupervisorMsg::Rebase(rebase) => {
                if state.cancelled.is_none() {
                    // Held sections carry this generation's indices.
                    state.flush_held();
                    state.rebase(*rebase);
                }
            }
            SupervisorMsg::Cancel(reason) => {
                if state.cancelled.is_none() {
                    state.cancelled = Some(reason);
                    state.kill_children();
                    state.finish();
                }
                return Ok(());
            }
            #[cfg(test)]
            SupervisorMsg::Child(index, reply) => {
                let _ = reply.send(state.child_of(index));
                return Ok(());
            }
        }
        state.dispatch(&myself).await;
        Ok(())
    }

    /// How a linked subagent stopped. One that reported first is only forgotten; one that
    /// panicked or was stopped before it reported fails its task (a panic's message, or the
    /// stop's reason, is the task's error), so no task is lost and the run never waits for
    /// a report that cannot come.
    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<SupervisorMsg>,
        event: SupervisionEvent,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        let ended = match event {
            SupervisionEvent::ActorFailed(cell, err) => {
                state.child_died(cell.get_id(), format!("subagent panicked: {err}"))
            }
            SupervisionEvent::ActorTerminated(cell, last_state, reason) => {
                state.child_stopped(cell.get_id(), last_state, reason)
            }
            // Started, and process groups (which a run does not use).
            _ => false,
        };
        if ended {
            state.dispatch(&myself).await;
        }
        Ok(())
    }
}

impl SupervisorState {
    /// `task_ready` for every task that may start at the run's beginning.
    fn announce_ready(&mut self) {
        if !self.shared.wants_events() {
            return;
        }
        let plan = &self.shared.plan;
        let ready: Vec<usize> = (0..plan.len())
            .filter(|&i| {
                self.sched.status(i) == TaskStatus::Pending
                    && plan
                        .deps(i)
                        .iter()
                        .all(|&d| self.sched.status(d as usize) == TaskStatus::Completed)
            })
            .collect();
        self.announce(ready);
    }
}

#[cfg(test)]
mod tests;
