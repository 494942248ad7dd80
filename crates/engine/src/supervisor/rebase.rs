//! A plan rebuilt under a running supervisor: a streamed plan grows as its tasks arrive, then
//! closes with the whole validated (perhaps repaired) plan. Each rebuild is a new generation:
//! the work done for tasks carried over keeps counting under their new index, subagents of
//! dropped tasks are stopped, and reports from an older generation are translated (or
//! dropped) on arrival. Only the streaming path sends rebases; a plain run never sees one.

use planwave_record::{EventKind, TaskRecord, TaskStatus};
use ractor::ActorProcessingErr;

use super::SupervisorState;
use super::references::References;
use crate::messages::{Close, Rebase};
use crate::scheduler::Scheduler;

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

    pub(super) async fn rebase(&mut self, r: Rebase) -> Result<(), ActorProcessingErr> {
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
                if matches!(
                    was,
                    TaskStatus::Completed | TaskStatus::Truncated | TaskStatus::Failed
                ) {
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
        // As a resumed run does: the result of each finished step that the new plan's
        // references name, the one its record kept if its section reads otherwise.
        self.results = References::for_plan(&self.shared.plan);
        for (j, s) in self.sections.iter().enumerate() {
            if let (Some(s), true) = (s, status[j].has_section()) {
                self.results.keep(j, self.records[j].result.as_deref(), s);
            }
        }
        self.announce_new(&carried);
        if let Some(close) = r.close {
            self.close(close, fates).await?;
        }
        self.finish_if_done();
        Ok(())
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
                TaskStatus::Completed | TaskStatus::Truncated => sched.preset_completed(&plan, j),
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

    /// The plan is final: the integrator starts, with the sections done so far, and the run
    /// may end.
    async fn close(&mut self, close: Close, fates: Fates) -> Result<(), ActorProcessingErr> {
        for (j, s) in self.sections.iter().enumerate() {
            if let (Some(text), true) = (s, self.records[j].status.has_section()) {
                // Written again under the same name: the integrator marks what is on disk.
                self.held.push((j, text.clone(), true));
            }
        }
        self.start_integrator().await?;
        self.open = false;
        self.shared.emit(EventKind::PlanCompleted {
            valid: close.valid,
            problems: close.problems,
            tasks: self.shared.plan.len(),
            kept: fates.kept,
            cancelled: fates.cancelled,
            discarded: fates.discarded,
        });
        Ok(())
    }
}
