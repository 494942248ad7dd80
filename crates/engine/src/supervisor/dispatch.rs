//! Starting subagents: the supervisor takes a batch of startable tasks from the scheduler,
//! marks them running, and spawns each one's subagent linked to itself.

use planwave_record::{EventKind, TaskStatus};
use ractor::{Actor, ActorRef};

use super::{Ending, SupervisorState};
use crate::messages::{SupervisorMsg, TaskFailure};
use crate::subagent::{Subagent, SubagentArgs};
use planwave_record::timefmt;

impl SupervisorState {
    /// Marks up to `max` startable tasks running and returns what their subagents start
    /// with. Whatever more could start is left to a later turn (queued here), so reports and
    /// acknowledgements are taken between the batches of a large backlog.
    fn take_ready(&mut self, max: usize) -> Vec<SubagentArgs> {
        let mut batch = Vec::new();
        if self.ending != Ending::Running {
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
                let waited = self.ready_at.get_mut(index).and_then(|t| t.take());
                self.shared.emit(EventKind::TaskStarted {
                    task: plan.id(index).clone(),
                    wave: plan.wave(index),
                    description: plan.task(index).title().to_owned(),
                    tool: plan.task(index).tool.clone(),
                    waited: waited.map(|at| at.elapsed()),
                });
            }
            batch.push(SubagentArgs {
                shared: self.shared.clone(),
                index,
                prior,
                results: self.results.for_task(&plan, index),
                supervisor: self.me.clone(),
                span,
                generation: self.generation,
            });
        }
        self.queue_dispatch();
        batch
    }

    /// Asks itself for a dispatch turn, when a task can start now and none is queued.
    pub(super) fn queue_dispatch(&mut self) {
        // Only when a task can start now: ready tasks held back by the cap or the wave barrier
        // wait for a task to end, and a turn queued for them found nothing to start and queued
        // the next (a busy loop at the cap: 100 % of a core while the model was thinking).
        if !self.dispatch_queued && self.ending == Ending::Running && self.sched.can_start() {
            self.dispatch_queued = true;
            let _ = self.me.send_message(SupervisorMsg::Dispatch);
        }
    }

    /// One dispatch turn: spawns, linked to the supervisor, the subagents of up to a batch
    /// of the tasks that can start. ractor runs each one's (trivial) `pre_start` here.
    pub(super) async fn dispatch(&mut self, myself: &ActorRef<SupervisorMsg>) {
        let max = self.shared.config.dispatch_batch.max(1);
        let batch = self.take_ready(max);
        if batch.is_empty() {
            return;
        }
        let generation = self.generation;
        for args in batch {
            let index = args.index;
            match Actor::spawn_linked(None, Subagent, args, myself.get_cell()).await {
                Ok((child, _join)) => self.register(child.get_cell(), generation, index),
                Err(e) => {
                    let failure = TaskFailure::Crashed(format!("could not start subagent: {e}"));
                    self.fail_unreported(index, failure);
                }
            }
        }
        // A failed optional step releases its dependents.
        self.queue_dispatch();
    }
}
