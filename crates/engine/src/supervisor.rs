//! The supervisor actor: the root of its run's supervision tree and the only owner of the
//! run's facts (scheduling state, records, sections, results for later references, model
//! calls).
//!
//! It asks the pure [`Scheduler`] which tasks may start and spawns one linked [`Subagent`]
//! per ready task, handing it what it reads (its prerequisites' sections, the results its
//! references name). It hears how each one ended: a [`SupervisorMsg::Ended`] report by
//! message, or, when a subagent panicked or was killed before reporting, a supervision event
//! from ractor (`handle_supervisor_evt`), which fails the task with the panic's message or
//! the stop's reason. Either way it records the outcome, journals it, and starts what became
//! ready. The integrator is its child too: its panic arrives the same way and ends the run
//! with an error. Nothing of its state is reachable from another actor.
//!
//! When every task has ended (or the run is cancelled) it waits for its subagents to stop,
//! asks the integrator for the report, and hands the caller everything at once; then it
//! stops, and ractor stops any child still linked to it.
//!
//! [`Subagent`]: crate::subagent::Subagent

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use planwave_record::CallRecord;
use planwave_record::{CancelReason, Event, Preset, RunStats, TaskRecord, TaskStatus};
use ractor::{Actor, ActorCell, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use rustc_hash::FxHashMap;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::error::EngineError;
use crate::messages::{Integration, IntegratorMsg, SupervisorMsg};
use crate::scheduler::Scheduler;
use crate::shared::RunShared;
use crate::task_spans::TaskSpans;

mod children;
mod dispatch;
mod ending;
mod rebase;
mod references;
mod settle;

use references::References;
#[cfg(test)]
pub(crate) use settle::{HELD_SECTIONS, PANIC_WHILE_SETTLING};

pub(crate) struct Supervisor;

pub(crate) struct SupervisorArgs {
    pub shared: Arc<RunShared>,
    pub done: oneshot::Sender<Result<SupervisorOutcome, EngineError>>,
    pub preset: Vec<Preset>,
    /// The plan may still grow (a streamed plan): the run does not end when its tasks have,
    /// only once a closing rebase has come, which also starts the integrator.
    pub open: bool,
    /// When the run started: its makespan runs from here to the last task settled.
    pub started: Instant,
    /// The caller's cancellation, for a stop that comes during integration.
    pub cancel: CancellationToken,
}

/// The run as the supervisor saw it end.
#[derive(Debug)]
pub(crate) struct SupervisorOutcome {
    pub records: Vec<TaskRecord>,
    pub sections: Vec<Option<Arc<str>>>,
    /// Counts, usage and the plan's shape, before integration adds the summary's usage.
    pub stats: RunStats,
    /// Set when the run was cancelled; unfinished tasks are left `pending`.
    pub cancelled: Option<CancelReason>,
    /// Completions the journal could not make durable (a resume runs those tasks again).
    pub warnings: Vec<String>,
    /// Every model call of the run, the summary's included, in the order they ended.
    pub calls: Vec<CallRecord>,
    /// `None` when the run ended before its plan closed (a streamed plan), so it never had an
    /// integrator.
    pub integration: Option<Integration>,
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
    /// The plan generation it started under and its task's index in that generation; `None`
    /// once it was killed (the run was cancelled, or a rebuilt plan dropped its task): its
    /// stop fails nothing, but the run still waits for it (its calls may be on their way).
    task: Option<(u32, usize)>,
}

/// Where the run is, once its tasks stop mattering one by one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    /// Tasks are running or may still start.
    Running,
    /// Every task has ended (or the run was cancelled): waiting for subagents to stop.
    Settling,
    /// The integrator is writing the summary and the report.
    Integrating,
    /// The caller has its answer.
    Done,
}

/// The run's state, owned by the supervisor actor alone.
pub(crate) struct SupervisorState {
    shared: Arc<RunShared>,
    /// The supervisor itself: journal acknowledgements and further dispatch turns go to it,
    /// subagents report to it, and it stops itself when the run ends.
    me: ActorRef<SupervisorMsg>,
    sched: Scheduler,
    records: Vec<TaskRecord>,
    sections: Vec<Option<Arc<str>>>,
    /// Results of completed tasks that later tool steps reference.
    results: References,
    /// The run's model calls, as reports (and killed subagents) bring them.
    calls: Vec<CallRecord>,
    /// Linked subagents by actor, so a supervision event names the task it ends.
    /// ractor's ids are sequential integers: FxHash, not SipHash.
    children: FxHashMap<ActorId, Child>,
    /// `None` while a streamed plan is open: the closing rebase starts it.
    integrator: Option<ActorRef<IntegratorMsg>>,
    /// Taken when the caller is answered; dropped unsent (the supervisor panicked), the
    /// caller hears the run was lost.
    done: Option<oneshot::Sender<Result<SupervisorOutcome, EngineError>>>,
    ending: Ending,
    /// An actor of the run's machinery failed: the run ends with this error.
    failure: Option<EngineError>,
    started: Instant,
    cancel: CancellationToken,
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
    /// The records handed to the integrator, until it answers.
    integrating: Option<Arc<Vec<TaskRecord>>>,
    stats: Option<RunStats>,
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
            results: References::for_plan(plan),
            calls: Vec::with_capacity(plan.len() + 1),
            shared: args.shared.clone(),
            me: myself,
            records,
            sections: vec![None; plan.len()],
            children: children::with_room(plan, args.shared.config.concurrency),
            integrator: None,
            done: Some(args.done),
            ending: Ending::Running,
            failure: None,
            started: args.started,
            cancel: args.cancel,
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
            integrating: None,
            stats: None,
        };
        for mut p in args.preset {
            // Checked again: a resumed run's kept sections are flagged as a first run's are.
            p.record.warnings = crate::quality::section_warnings(&p.section);
            state.retries += u64::from(p.record.attempts.saturating_sub(1));
            state.sched.preset_completed(&args.shared.plan, p.index);
            // The result its step's first pass gave, for later references.
            state
                .results
                .keep(p.index, p.record.result.as_deref(), &p.section);
            // Held until the integrator has started (`post_start`).
            state.held.push((p.index, p.section.clone(), false));
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
        if !state.open {
            state.start_integrator().await?;
        }
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
            SupervisorMsg::Calls(calls) => state.calls.extend(calls),
            SupervisorMsg::Committed(generation, index, result) => {
                if let Some(index) = state.current_index(generation, index) {
                    state.on_committed(index, result);
                }
            }
            SupervisorMsg::Rebase(rebase) => {
                if state.ending == Ending::Running {
                    // Held sections carry this generation's indices.
                    state.flush_held();
                    state.rebase(*rebase).await?;
                }
            }
            SupervisorMsg::Cancel(reason) => {
                if state.ending == Ending::Running {
                    state.cancelled = Some(reason);
                    state.finish();
                }
                return Ok(());
            }
            SupervisorMsg::Settled => {
                state.on_settled();
                return Ok(());
            }
            SupervisorMsg::Integrated(integration) => {
                state.on_integrated(*integration);
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

    /// How a child stopped. A subagent that reported first is only forgotten; one that
    /// panicked or was killed before it reported fails its task (a panic's message, or the
    /// stop's reason, is the task's error), so no task is lost and the run never waits for
    /// a report that cannot come. The integrator's end, before it answered, ends the run
    /// with an error.
    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<SupervisorMsg>,
        event: SupervisionEvent,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        let ended = match event {
            SupervisionEvent::ActorFailed(cell, err) => {
                state.child_ended(cell.get_id(), children::End::Panicked(err.to_string()))
            }
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                state.child_ended(cell.get_id(), children::End::Stopped(reason))
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
