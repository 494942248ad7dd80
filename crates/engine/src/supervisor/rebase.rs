//! A plan rebuilt under a running supervisor: a streamed plan grows as its tasks arrive, then
//! closes with the whole validated (perhaps repaired) plan. Each rebuild is a new generation:
//! the work done for tasks carried over keeps counting under their new index, subagents of
//! dropped tasks are stopped, and reports from an older generation are translated (or
//! dropped) on arrival. Only the streaming path sends rebases; a plain run never sees one.

use std::sync::Arc;

use planwave_record::{EventKind, TaskRecord, TaskStatus};
use ractor::ActorRef;

use super::SupervisorState;
use crate::integrator::IntegratorMsg;
use crate::scheduler::Scheduler;
use crate::shared::RunShared;

/// The next plan of a running supervisor.
pub struct Rebase {
    /// The run's shared state for the new plan (its plan, section files and results).
    pub shared: Arc<RunShared>,
    /// For each task of the current plan, its index in the new one; `None` drops it (a
    /// running subagent is stopped, a finished one's work is discarded).
    pub map: Vec<Option<usize>>,
    /// Set when the plan is final: the integrator for it, and the whole plan's validity
    /// for the `plan_completed` event. The run may end once its tasks have.
    pub close: Option<Close>,
}

pub struct Close {
    pub integrator: ActorRef<IntegratorMsg>,
    pub valid: bool,
    pub problems: Vec<String>,
}

/// What happened to the tasks of the old plan.
#[derive(Default)]
struct Fates {
    kept: Vec<planwave_plan::TaskId>,
    cancelled: Vec<planwave_plan::TaskId>,
    discarded: Vec<planwave_plan::TaskId>,
}

impl SupervisorState {
    /// Task `index` of plan generation `generation`, in the current plan.
    pub(super) fn current_index(&self, generation: u32, index: usize) -> Option<usize> {
        let mut i = index;
        for g in generation..self.generation {
            i = self.maps.get(g as usize)?.get(i).copied().flatten()?;
        }
        Some(i)
    }

    pub(super) fn rebase(&mut self, r: Rebase) {
        let old = self.shared.plan.clone();
        let new = r.shared.plan.clone();
        let mut fates = Fates::default();
        self.stop_dropped(&r.map, &mut fates);
        let mut records: Vec<_> = (0..new.len())
            .map(|j| TaskRecord::pending(&new, j))
            .collect();
        let mut sections = vec![None; new.len()];
        let mut carried = vec![false; new.len()];
        let mut status = vec![TaskStatus::Pending; new.len()];
        for (i, to) in r.map.iter().enumerate() {
            let was = self.sched.status(i);
            let Some(j) = *to else {
                if matches!(was, TaskStatus::Completed | TaskStatus::Failed) {
                    fates.discarded.push(old.id(i).clone());
                }
                continue;
            };
            carried[j] = true;
            // A blocked task is blocked again below if its failed ancestor still is one.
            if was == TaskStatus::Blocked {
                continue;
            }
            let mut rec = std::mem::replace(&mut self.records[i], TaskRecord::pending(&old, i));
            rec.wave = new.wave(j);
            records[j] = rec;
            sections[j] = self.sections[i].take();
            status[j] = was;
            if r.close.is_some() && was != TaskStatus::Pending {
                fates.kept.push(new.id(j).clone());
            }
        }
        self.pending_commits = std::mem::take(&mut self.pending_commits)
            .into_iter()
            .filter_map(|(i, p)| r.map.get(i).copied().flatten().map(|j| (j, p)))
            .collect();
        self.spans.remap(&r.map, new.len());
        self.remap_ready_at(&r.map, new.len());
        self.shared = r.shared;
        self.records = records;
        self.sections = sections;
        self.maps.push(r.map);
        self.generation += 1;
        self.replay(&status);
        for (j, s) in self.sections.iter().enumerate() {
            if let (Some(s), TaskStatus::Completed) = (s, status[j]) {
                // As a resumed run does: the result of a finished step for later
                // references, the one its record kept if its section reads otherwise.
                let kept = self.records[j].result.as_deref();
                self.shared
                    .results
                    .keep(j, || planwave_record::read_result(kept, s));
            }
        }
        self.announce_new(&carried);
        if let Some(close) = r.close {
            self.close(close, fates);
        }
        self.finish_if_done();
    }

    /// The ready times of tasks still waiting, under their new indices.
    fn remap_ready_at(&mut self, map: &[Option<usize>], len: usize) {
        if self.ready_at.is_empty() {
            return;
        }
        let mut ready_at = vec![None; len];
        for (at, to) in self.ready_at.iter().zip(map) {
            if let (Some(at), Some(j)) = (at, to) {
                ready_at[*j] = Some(*at);
            }
        }
        self.ready_at = ready_at;
    }

    /// Kills the subagents of dropped tasks; the others keep working under their new index.
    fn stop_dropped(&mut self, map: &[Option<usize>], fates: &mut Fates) {
        self.kill_dropped(map);
        for (i, to) in map.iter().enumerate() {
            // Its ending maps to no task of the new plan: no failure of anything.
            if to.is_none() && self.sched.status(i) == TaskStatus::Running {
                fates.cancelled.push(self.shared.plan.id(i).clone());
            }
        }
    }

    /// A fresh scheduler for the current plan, told what already happened to each task.
    fn replay(&mut self, status: &[TaskStatus]) {
        let plan = self.shared.plan.clone();
        let config = &self.shared.config;
        let mut sched = Scheduler::new(&plan, config.schedule, config.concurrency);
        for (j, s) in status.iter().enumerate() {
            match s {
                TaskStatus::Completed => sched.preset_completed(&plan, j),
                TaskStatus::Running => sched.mark_running(j),
                TaskStatus::Failed => {
                    sched.mark_running(j);
                    if plan.task(j).optional {
                        sched.fail_optional(&plan, j);
                    } else {
                        for b in sched.fail(&plan, j) {
                            self.block(b, j);
                        }
                    }
                }
                TaskStatus::Pending | TaskStatus::Blocked => {}
            }
        }
        self.sched = sched;
    }

    fn block(&mut self, b: usize, by: usize) {
        let plan = self.shared.plan.clone();
        let rec = &mut self.records[b];
        if rec.status == TaskStatus::Blocked {
            return;
        }
        rec.status = TaskStatus::Blocked;
        rec.blocked_by = Some(plan.id(by).clone());
        self.spans
            .blocked(&self.shared, b, &plan.id(by).to_string());
        self.shared.emit(EventKind::TaskBlocked {
            task: plan.id(b).clone(),
            blocked_by: plan.id(by).clone(),
        });
    }

    /// `task_ready` for the tasks new in this plan that can start.
    fn announce_new(&mut self, carried: &[bool]) {
        let new: Vec<usize> = (0..carried.len())
            .filter(|&j| !carried[j] && self.sched.is_ready(j))
            .collect();
        self.announce(new);
    }

    /// The plan is final: the integrator gets the sections done so far, and the run may end.
    fn close(&mut self, close: Close, fates: Fates) {
        for (j, s) in self.sections.iter().enumerate() {
            if let (Some(text), TaskStatus::Completed) = (s, self.records[j].status) {
                // Written again under the same name: the integrator marks what is on disk.
                let _ = close.integrator.send_message(IntegratorMsg::Section {
                    index: j,
                    text: text.clone(),
                    write: true,
                });
            }
        }
        self.integrator = Some(close.integrator);
        self.open = false;
        self.shared.emit(EventKind::PlanCompleted {
            valid: close.valid,
            problems: close.problems,
            tasks: self.shared.plan.len(),
            kept: fates.kept,
            cancelled: fates.cancelled,
            discarded: fates.discarded,
        });
    }
}
