//! Starting subagents. A batch of startable tasks is taken under the lock; their actors are
//! spawned outside it, by the supervisor or by the subagent whose ending made them ready,
//! and then registered so a cancellation or a plan rebuild can kill them.

use planwave_record::{EventKind, TaskStatus};
use ractor::{Actor, ActorCell};

use super::{Core, SupervisorMsg, SupervisorState, lock};
use crate::subagent::{Subagent, SubagentArgs, SubagentReport};
use crate::timefmt;

/// How a subagent ended.
pub enum Ending {
    /// It reported (a section or why its task failed).
    Report(Box<SubagentReport>),
    /// It died without a report: a panic, or its actor stopped before it reported.
    Died { index: usize, error: String },
}

impl SupervisorState {
    /// Marks up to `max` startable tasks running and returns what their subagents start
    /// with. Whatever more could start is left to the supervisor's next turn (queued here), so
    /// whoever is dispatching (a subagent ending) gets on with its own ending.
    fn take_ready(&mut self, core: &Core, max: usize) -> Vec<SubagentArgs> {
        let mut batch = Vec::new();
        if self.done.is_none() || self.cancelled.is_some() {
            return batch;
        }
        let plan = self.shared.plan.clone();
        while batch.len() < max {
            let Some(index) = self.sched.next_task() else {
                break;
            };
            let prior: Vec<(usize, std::sync::Arc<str>)> = plan
                .deps(index)
                .iter()
                .filter_map(|&d| self.sections[d as usize].clone().map(|s| (d as usize, s)))
                .collect();
            let rec = &mut self.records[index];
            rec.status = TaskStatus::Running;
            rec.started_at = Some(timefmt::now());
            rec.context_from = prior.iter().map(|(d, _)| plan.id(*d).clone()).collect();
            let span = self.spans.start(&self.shared, index, &rec.context_from);
            if self.shared.wants_events() {
                self.shared.emit(EventKind::TaskStarted {
                    task: plan.id(index).clone(),
                    wave: plan.wave(index),
                    description: plan.task(index).title().to_owned(),
                    tool: plan.task(index).tool.clone(),
                });
            }
            batch.push(SubagentArgs {
                shared: self.shared.clone(),
                index,
                prior,
                core: core.clone(),
                span,
                generation: self.generation,
            });
        }
        self.queue_dispatch();
        batch
    }

    /// Asks the supervisor for a dispatch turn, when a task can start now and none is queued.
    pub(super) fn queue_dispatch(&mut self) {
        // Only when a task can start now: ready tasks held back by the cap or the wave barrier
        // wait for a task to end, and a turn queued for them found nothing to start and queued
        // the next (a busy loop at the cap: 100 % of a core while the model was thinking).
        if !self.dispatch_queued
            && self.done.is_some()
            && self.cancelled.is_none()
            && self.sched.can_start()
        {
            self.dispatch_queued = true;
            let _ = self.me.send_message(SupervisorMsg::Dispatch);
        }
    }

    /// The subagents of a batch taken in generation `generation`, as their spawns went. A
    /// task may have moved on meanwhile: settled already (its subagent is done), dropped by a
    /// rebuilt plan, or the run ended; only a task still running keeps its subagent here.
    fn register(&mut self, generation: u32, started: Vec<(usize, Result<ActorCell, String>)>) {
        for (index, spawned) in started {
            let current = self.current_index(generation, index);
            match (spawned, current) {
                (Ok(cell), Some(i)) if self.done.is_some() => {
                    if self.sched.status(i) == TaskStatus::Running {
                        self.children[i] = Some(cell);
                    }
                }
                (Ok(cell), _) => cell.kill(),
                (Err(e), Some(i)) if self.done.is_some() => {
                    self.fail_unreported(i, format!("could not start subagent: {e}"));
                }
                (Err(_), _) => {}
            }
        }
        // A failed optional step releases its dependents.
        self.queue_dispatch();
    }
}

/// One dispatch turn: starts up to a batch of the tasks that can start.
pub(super) async fn dispatch(core: &Core) {
    let (batch, generation) = {
        let mut state = lock(core);
        let max = state.shared.config.dispatch_batch.max(1);
        (state.take_ready(core, max), state.generation)
    };
    start(core, generation, batch).await;
}

/// Spawns the subagents of a batch (without the lock: ractor runs each one's `pre_start`
/// here) and registers them. Whether there were any.
async fn start(core: &Core, generation: u32, batch: Vec<SubagentArgs>) -> bool {
    if batch.is_empty() {
        return false;
    }
    let mut started = Vec::with_capacity(batch.len());
    for args in batch {
        let index = args.index;
        let spawned = Actor::spawn(None, Subagent, args)
            .await
            .map(|(child, _join)| child.get_cell())
            .map_err(|e| e.to_string());
        started.push((index, spawned));
    }
    lock(core).register(generation, started);
    true
}

/// A subagent's ending, told by the subagent itself: its task's outcome is settled, and as
/// many tasks as that outcome made ready are started here, by the ending subagent (along a
/// chain, the next step without a turn of the supervisor). Not more: tasks that were ready
/// before (a wide plan's backlog) are the supervisor's to start in its bounded turns; taken
/// by every ending subagent as well, they all started at once and each one's memory was
/// held for the whole run (twice the page faults of a 10,000-task wide run). Whether it
/// started any.
pub(crate) async fn task_ended(core: &Core, generation: u32, ending: Ending) -> bool {
    let (batch, current) = {
        let mut state = lock(core);
        let before = state.sched.ready_len();
        state.on_ended(generation, ending);
        let made_ready = state.sched.ready_len().saturating_sub(before);
        let max = made_ready.min(state.shared.config.dispatch_batch.max(1));
        (state.take_ready(core, max), state.generation)
    };
    start(core, current, batch).await
}

/// A subagent's ending where nothing can wait (its state dropped without a report): settled
/// now, and what it made ready left to the supervisor's next turn.
pub(crate) fn died(core: &Core, generation: u32, index: usize, error: String) {
    let mut state = lock(core);
    state.on_ended(generation, Ending::Died { index, error });
    state.queue_dispatch();
}

/// A panic in the run's own bookkeeping, caught on a subagent's task: the state may be half
/// updated, so the run is abandoned (the caller hears the supervisor was lost, as when the
/// supervisor itself panicked) rather than trusted to end.
pub(crate) fn crash(core: &Core, why: String) {
    let mut state = lock(core);
    tracing::error!("run abandoned: {why}");
    state.abandon();
    state.me.stop(Some(why));
}
