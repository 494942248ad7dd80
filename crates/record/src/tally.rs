//! What a run's events add up to while it goes on (a progress view's counts): tasks
//! settled, failed and blocked, tokens spent, the tasks running, and the time left at the
//! rate so far.

use std::collections::BTreeMap;

use planwave_plan::TaskId;

use crate::event::EventKind;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tally {
    pub failed: usize,
    pub blocked: usize,
    /// Tasks settled: completed, failed or blocked.
    pub settled: usize,
    /// Tokens of every model call so far (all roles, failed calls included).
    pub tokens: u64,
    /// Tasks running, by id, with the title given when each started.
    pub running: BTreeMap<String, String>,
}

impl Tally {
    /// Counts one event in; `title` names a task that starts. Returns whether the event is
    /// one a tally counts (task starts, retries and endings, model calls).
    pub fn count(&mut self, kind: &EventKind, title: impl FnOnce(&TaskId) -> String) -> bool {
        match kind {
            EventKind::TaskStarted { task, .. } => {
                self.running.insert(task.to_string(), title(task));
            }
            EventKind::LlmCall { usage, .. } => self.tokens += usage.total(),
            EventKind::TaskCompleted { task, .. } => {
                self.running.remove(&task.to_string());
                self.settled += 1;
            }
            EventKind::TaskRetry { .. } => {}
            EventKind::TaskFailed { task, .. } => {
                self.running.remove(&task.to_string());
                self.failed += 1;
                self.settled += 1;
            }
            EventKind::TaskBlocked { .. } => {
                self.blocked += 1;
                self.settled += 1;
            }
            _ => return false,
        }
        true
    }

    /// Seconds left for `total` tasks at the rate so far, `elapsed_secs` in: none before the
    /// first task settles or once all have.
    pub fn eta_secs(&self, total: usize, elapsed_secs: f64) -> Option<f64> {
        (self.settled > 0 && self.settled < total)
            .then(|| elapsed_secs / self.settled as f64 * (total - self.settled) as f64)
    }
}

#[cfg(test)]
mod tests {
    use crate::Usage;

    use super::*;

    fn id(n: i64) -> TaskId {
        TaskId::Int(n)
    }

    #[test]
    fn tasks_run_and_settle_and_tokens_add_up() {
        let mut t = Tally::default();
        let started = |n| EventKind::TaskStarted {
            task: id(n),
            wave: 0,
            description: String::new(),
            tool: None,
            waited: None,
        };
        assert!(t.count(&started(1), |task| format!("title {task}")));
        assert!(t.count(&started(2), |_| "two".into()));
        assert_eq!(t.running.get("1").map(String::as_str), Some("title 1"));
        let call = EventKind::LlmCall {
            task: Some(id(1)),
            role: "subagent".into(),
            model: "m".into(),
            attempt: 1,
            duration_ms: 1.0,
            usage: Usage::new(10, 4, 1),
            error: None,
        };
        assert!(t.count(&call, |_| unreachable!()));
        let failed = EventKind::TaskFailed {
            task: id(2),
            attempts: 2,
            error: "boom".into(),
        };
        assert!(t.count(&failed, |_| unreachable!()));
        let blocked = EventKind::TaskBlocked {
            task: id(3),
            blocked_by: id(2),
            reason: None,
        };
        assert!(t.count(&blocked, |_| unreachable!()));
        let ready = EventKind::TaskReady {
            task: id(4),
            wave: 1,
        };
        assert!(!t.count(&ready, |_| unreachable!()), "not counted");
        assert_eq!((t.failed, t.blocked, t.settled, t.tokens), (1, 1, 2, 15));
        assert_eq!(t.running.keys().collect::<Vec<_>>(), ["1"]);
    }

    #[test]
    fn the_time_left_is_the_rate_so_far_over_the_tasks_left() {
        let mut t = Tally::default();
        assert_eq!(t.eta_secs(4, 10.0), None, "nothing settled yet");
        t.settled = 1;
        assert_eq!(t.eta_secs(4, 10.0), Some(30.0));
        t.settled = 4;
        assert_eq!(t.eta_secs(4, 10.0), None, "all settled");
    }
}
