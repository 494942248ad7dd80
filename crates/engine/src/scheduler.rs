//! Which task may start next: the pure bookkeeping behind the supervisor.
//!
//! Kept out of the actor so the dataflow and wave-barrier rules, the concurrency cap and the
//! blocking of descendants can be tested without a runtime.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use planwave_plan::ValidatedPlan;
use planwave_record::{Schedule, TaskStatus};

#[derive(Debug, Clone)]
pub struct Scheduler {
    schedule: Schedule,
    cap: usize,
    status: Vec<TaskStatus>,
    /// Prerequisites of each task not yet completed.
    waiting_on: Vec<u32>,
    /// Tasks whose prerequisites are done, oldest wave first, then plan order.
    ready: BinaryHeap<Reverse<(u32, u32)>>,
    /// Non-terminal tasks left in each wave (for the barrier).
    wave_left: Vec<u32>,
    /// Under `Schedule::Waves`, the wave now allowed to run.
    open_wave: u32,
    in_flight: usize,
    terminal: usize,
}

impl Scheduler {
    /// `cap` of `None` means unlimited.
    pub fn new(plan: &ValidatedPlan, schedule: Schedule, cap: Option<usize>) -> Scheduler {
        let n = plan.len();
        let mut wave_left = vec![0u32; plan.waves().len()];
        let mut ready = BinaryHeap::new();
        let mut waiting_on = Vec::with_capacity(n);
        for i in 0..n {
            wave_left[plan.wave(i) as usize] += 1;
            let deps = plan.deps(i).len() as u32;
            waiting_on.push(deps);
            if deps == 0 {
                ready.push(Reverse((plan.wave(i), i as u32)));
            }
        }
        Scheduler {
            schedule,
            cap: cap.unwrap_or(usize::MAX).max(1),
            status: vec![TaskStatus::Pending; n],
            waiting_on,
            ready,
            wave_left,
            open_wave: 0,
            in_flight: 0,
            terminal: 0,
        }
    }

    /// Restores a task finished in an earlier run (resume): it counts as completed without
    /// running. Call before dispatching anything.
    pub fn preset_completed(&mut self, plan: &ValidatedPlan, i: usize) {
        self.ready.retain(|Reverse((_, t))| *t as usize != i);
        // Pretend it ran: the usual completion path releases its dependents.
        self.status[i] = TaskStatus::Running;
        self.in_flight += 1;
        self.complete(plan, i);
    }

    /// Marks a task running without it having been picked by [`Scheduler::next_task`]: a
    /// subagent that was already at work when the plan it belongs to was rebuilt (a streamed
    /// plan growing or closing).
    pub fn mark_running(&mut self, i: usize) {
        self.ready.retain(|Reverse((_, t))| *t as usize != i);
        self.status[i] = TaskStatus::Running;
        self.in_flight += 1;
    }

    /// Whether task `i` waits for nothing but a slot.
    pub fn is_ready(&self, i: usize) -> bool {
        self.status[i] == TaskStatus::Pending && self.waiting_on[i] == 0
    }

    pub fn status(&self, i: usize) -> TaskStatus {
        self.status[i]
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    pub fn ready_len(&self) -> usize {
        self.ready.len()
    }

    /// True when every task is completed, failed or blocked.
    pub fn is_done(&self) -> bool {
        self.terminal == self.status.len()
    }

    /// Whether [`Scheduler::next_task`] would start a task now: one is ready, under the cap
    /// and the barrier. Ready tasks held back by either wait for a task to end, not for
    /// another dispatch turn.
    pub fn can_start(&self) -> bool {
        self.in_flight < self.cap
            && self.ready.peek().is_some_and(|Reverse((wave, _))| {
                self.schedule != Schedule::Waves || *wave <= self.open_wave
            })
    }

    /// The next task to start, if the cap, the barrier and the graph allow one. It is marked
    /// running.
    pub fn next_task(&mut self) -> Option<usize> {
        if !self.can_start() {
            return None;
        }
        let Reverse((_, i)) = self.ready.pop()?;
        self.status[i as usize] = TaskStatus::Running;
        self.in_flight += 1;
        Some(i as usize)
    }

    /// Marks a running task completed; returns the tasks that became ready because of it.
    pub fn complete(&mut self, plan: &ValidatedPlan, i: usize) -> Vec<usize> {
        if !self.finish(plan, i, TaskStatus::Completed) {
            return Vec::new();
        }
        self.release(plan, i)
    }

    /// Marks a running optional step failed; its dependents go on as if it had completed
    /// (an optional step never blocks the plan). Returns the tasks that became ready because
    /// of it.
    pub fn fail_optional(&mut self, plan: &ValidatedPlan, i: usize) -> Vec<usize> {
        if !self.finish(plan, i, TaskStatus::Failed) {
            return Vec::new();
        }
        self.release(plan, i)
    }

    /// One prerequisite fewer for each dependent of `i`; the ones left with none are ready.
    fn release(&mut self, plan: &ValidatedPlan, i: usize) -> Vec<usize> {
        let mut newly = Vec::new();
        for &d in plan.dependents(i) {
            let d = d as usize;
            self.waiting_on[d] -= 1;
            if self.waiting_on[d] == 0 && self.status[d] == TaskStatus::Pending {
                self.ready.push(Reverse((plan.wave(d), d as u32)));
                newly.push(d);
            }
        }
        newly
    }

    /// Marks a running task failed and blocks every descendant not yet finished; returns them.
    pub fn fail(&mut self, plan: &ValidatedPlan, i: usize) -> Vec<usize> {
        if !self.finish(plan, i, TaskStatus::Failed) {
            return Vec::new();
        }
        let mut blocked = Vec::new();
        let mut stack: Vec<u32> = plan.dependents(i).to_vec();
        while let Some(d) = stack.pop() {
            let d = d as usize;
            // A descendant cannot be running (its ancestor never completed), so pending is
            // the only state to block; terminal ones were blocked by another failure already.
            if self.status[d] != TaskStatus::Pending {
                continue;
            }
            self.status[d] = TaskStatus::Blocked;
            self.terminal += 1;
            self.leave_wave(plan.wave(d));
            blocked.push(d);
            stack.extend_from_slice(plan.dependents(d));
        }
        blocked.sort_unstable();
        blocked
    }

    fn finish(&mut self, plan: &ValidatedPlan, i: usize, status: TaskStatus) -> bool {
        if self.status[i] != TaskStatus::Running {
            return false;
        }
        self.status[i] = status;
        self.in_flight -= 1;
        self.terminal += 1;
        self.leave_wave(plan.wave(i));
        true
    }

    fn leave_wave(&mut self, wave: u32) {
        self.wave_left[wave as usize] -= 1;
        while (self.open_wave as usize) < self.wave_left.len()
            && self.wave_left[self.open_wave as usize] == 0
        {
            self.open_wave += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use planwave_plan::{PlanSpec, TaskId, TaskSpec};

    use super::*;

    fn plan(edges: &[(i64, &[i64])]) -> ValidatedPlan {
        let tasks = edges
            .iter()
            .map(|(id, deps)| {
                TaskSpec::new(
                    *id,
                    format!("task {id}"),
                    deps.iter().map(|d| TaskId::Int(*d)).collect(),
                )
            })
            .collect();
        ValidatedPlan::new(PlanSpec {
            topic: "t".into(),
            tasks,
            ..Default::default()
        })
        .expect("valid test plan")
    }

    fn drain(s: &mut Scheduler) -> Vec<usize> {
        std::iter::from_fn(|| s.next_task()).collect()
    }

    #[test]
    fn dataflow_releases_a_task_when_its_own_prerequisites_finish() {
        // 1 -> 3, 2 -> 4: task 3 must not wait for the unrelated task 2.
        let p = plan(&[(1, &[]), (2, &[]), (3, &[1]), (4, &[2])]);
        let mut s = Scheduler::new(&p, Schedule::Dataflow, None);
        assert_eq!(drain(&mut s), vec![0, 1]);
        assert_eq!(s.complete(&p, 0), vec![2]);
        assert_eq!(s.next_task(), Some(2));
    }

    #[test]
    fn waves_hold_the_next_wave_until_the_whole_wave_is_done() {
        let p = plan(&[(1, &[]), (2, &[]), (3, &[1]), (4, &[2])]);
        let mut s = Scheduler::new(&p, Schedule::Waves, None);
        assert_eq!(drain(&mut s), vec![0, 1]);
        s.complete(&p, 0);
        assert_eq!(s.next_task(), None, "wave 1 waits for task 2");
        s.complete(&p, 1);
        assert_eq!(drain(&mut s), vec![2, 3]);
    }

    #[test]
    fn cap_limits_in_flight_and_oldest_wave_goes_first() {
        let p = plan(&[(1, &[]), (2, &[1]), (3, &[]), (4, &[]), (5, &[])]);
        let mut s = Scheduler::new(&p, Schedule::Dataflow, Some(2));
        assert_eq!(drain(&mut s), vec![0, 2]);
        s.complete(&p, 0); // task 2 (wave 1) is ready but waits behind wave-0 tasks 4 and 5
        assert_eq!(drain(&mut s), vec![3]);
        s.complete(&p, 2);
        assert_eq!(drain(&mut s), vec![4]);
        s.complete(&p, 3);
        assert_eq!(drain(&mut s), vec![1]);
    }

    #[test]
    fn nothing_can_start_at_the_cap_or_behind_the_barrier_though_tasks_are_ready() {
        let p = plan(&[(1, &[]), (2, &[]), (3, &[]), (4, &[1])]);
        let mut capped = Scheduler::new(&p, Schedule::Dataflow, Some(2));
        assert!(capped.can_start());
        assert_eq!(drain(&mut capped), vec![0, 1]);
        assert_eq!(capped.ready_len(), 1, "task 3 is ready");
        assert!(!capped.can_start(), "but the cap holds it");
        capped.complete(&p, 0);
        assert!(capped.can_start());

        let mut waves = Scheduler::new(&p, Schedule::Waves, None);
        assert_eq!(drain(&mut waves), vec![0, 1, 2]);
        waves.complete(&p, 0);
        assert_eq!(waves.ready_len(), 1, "task 4 is ready");
        assert!(!waves.can_start(), "but wave 0 is still running");
        waves.complete(&p, 1);
        waves.complete(&p, 2);
        assert!(waves.can_start());
    }

    #[test]
    fn failure_blocks_all_descendants_and_only_them() {
        let p = plan(&[(1, &[]), (2, &[1]), (3, &[2]), (4, &[]), (5, &[4, 3])]);
        let mut s = Scheduler::new(&p, Schedule::Dataflow, None);
        assert_eq!(drain(&mut s), vec![0, 3]);
        assert_eq!(s.fail(&p, 0), vec![1, 2, 4]);
        assert!(!s.is_done());
        assert!(
            s.complete(&p, 3).is_empty(),
            "task 5 is blocked, never ready"
        );
        assert!(s.is_done());
        assert_eq!(s.status(4), TaskStatus::Blocked);
    }

    #[test]
    fn a_failed_optional_step_releases_its_dependents() {
        let p = plan(&[(1, &[]), (2, &[1]), (3, &[2])]);
        let mut s = Scheduler::new(&p, Schedule::Dataflow, None);
        assert_eq!(s.next_task(), Some(0));
        assert_eq!(
            s.fail_optional(&p, 0),
            vec![1],
            "task 2 runs although 1 failed"
        );
        assert_eq!(s.status(0), TaskStatus::Failed);
        assert_eq!(s.next_task(), Some(1));
        assert_eq!(s.complete(&p, 1), vec![2]);
        assert_eq!(s.next_task(), Some(2));
        s.complete(&p, 2);
        assert!(s.is_done());
    }

    #[test]
    fn barrier_opens_when_the_rest_of_a_wave_is_blocked() {
        let p = plan(&[(1, &[]), (2, &[1]), (3, &[]), (4, &[3]), (5, &[2, 4])]);
        let mut s = Scheduler::new(&p, Schedule::Waves, None);
        assert_eq!(drain(&mut s), vec![0, 2]);
        s.complete(&p, 2);
        assert_eq!(s.next_task(), None);
        assert_eq!(s.fail(&p, 0), vec![1, 4]);
        assert_eq!(
            drain(&mut s),
            vec![3],
            "wave 1 opens: task 2 is blocked, task 4 may run"
        );
    }

    #[test]
    fn preset_completed_releases_dependents() {
        let p = plan(&[(1, &[]), (2, &[1])]);
        let mut s = Scheduler::new(&p, Schedule::Dataflow, None);
        s.preset_completed(&p, 0);
        assert_eq!(drain(&mut s), vec![1]);
        assert_eq!(s.in_flight(), 1);
    }
}
