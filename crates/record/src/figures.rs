//! Figures derived from a finished run's records (what `planwave show` tabulates): times
//! relative to the run's start, tokens per task and per role, why a task did not complete.

use chrono::{DateTime, Utc};

use crate::outcome::{RunResult, TaskRecord};

/// Milliseconds from `from` to `to` (negative when `to` is earlier).
fn ms_between(from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
    (to - from).num_microseconds().unwrap_or(0) as f64 / 1000.0
}

/// One role's model calls (`planner`, `subagent`, ...) and their tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RoleUsage {
    pub role: String,
    pub calls: usize,
    pub tokens_in: u64,
    /// Of `tokens_in`, those read from the provider's prompt cache.
    pub cached_in: u64,
    /// Completion and reasoning tokens.
    pub tokens_out: u64,
}

/// The task rows' sums.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskTotals {
    pub attempts: u32,
    pub tokens_in: u64,
    /// Of `tokens_in`, those read from the provider's prompt cache.
    pub cached_in: u64,
    /// Completion and reasoning tokens.
    pub tokens_out: u64,
}

impl TaskRecord {
    /// Start to finish, in ms, when the task both started and finished.
    pub fn duration_ms(&self) -> Option<f64> {
        Some(ms_between(self.started_at?, self.finished_at?))
    }

    /// Completion and reasoning tokens.
    pub fn tokens_out(&self) -> u64 {
        self.usage.completion_tokens + self.usage.reasoning_tokens
    }

    /// Why the task did not complete: the prerequisite that blocked it, or its error; `None`
    /// for a task that has neither.
    pub fn why_not_completed(&self) -> Option<String> {
        match (&self.blocked_by, &self.error) {
            (Some(b), _) => Some(format!("blocked by {b}")),
            (None, Some(e)) => Some(e.clone()),
            (None, None) => None,
        }
    }
}

impl RunResult {
    /// Milliseconds from the run's start to `t`.
    pub fn since_start_ms(&self, t: DateTime<Utc>) -> f64 {
        ms_between(self.started_at, t)
    }

    /// The whole run, start to finish, in ms (planning and writing included).
    pub fn wall_ms(&self) -> f64 {
        ms_between(self.started_at, self.finished_at)
    }

    /// Attempts and tokens summed over the tasks.
    pub fn task_totals(&self) -> TaskTotals {
        self.tasks
            .iter()
            .fold(TaskTotals::default(), |t, r| TaskTotals {
                attempts: t.attempts + r.attempts,
                tokens_in: t.tokens_in + r.usage.prompt_tokens,
                cached_in: t.cached_in + r.usage.cached_tokens,
                tokens_out: t.tokens_out + r.tokens_out(),
            })
    }

    /// Calls and tokens per role, roles in the order their first call finished.
    pub fn usage_by_role(&self) -> Vec<RoleUsage> {
        let mut roles: Vec<RoleUsage> = Vec::new();
        for c in &self.calls {
            let i = match roles.iter().position(|r| r.role == c.role) {
                Some(i) => i,
                None => {
                    roles.push(RoleUsage {
                        role: c.role.clone(),
                        calls: 0,
                        tokens_in: 0,
                        cached_in: 0,
                        tokens_out: 0,
                    });
                    roles.len() - 1
                }
            };
            roles[i].calls += 1;
            roles[i].tokens_in += c.prompt_tokens;
            roles[i].cached_in += c.cached_tokens;
            roles[i].tokens_out += c.completion_tokens + c.reasoning_tokens;
        }
        roles
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run.json as `run` writes it, cut down to what the figures read.
    const RUN: &str = r#"{
      "run_id": "00000000-0000-0000-0000-000000000001", "status": "partial",
      "started_at": "2026-11-27T10:00:00Z", "finished_at": "2026-11-27T10:00:12.500Z",
      "topic": "t", "llm": {"provider": "sim", "model": "m", "simulated": true},
      "stats": {"tasks": 3, "completed": 1, "failed": 1, "blocked": 1, "waves": 2,
        "critical_path": [], "makespan_ms": 0.0, "schedule": null, "concurrency": null,
        "retries": 1, "usage": {"prompt_tokens": 0, "completion_tokens": 0}},
      "tasks": [
        {"id": "1", "description": "a", "status": "completed", "wave": 0, "attempts": 1,
         "started_at": "2026-11-27T10:00:01Z", "finished_at": "2026-11-27T10:00:03.250Z",
         "error": null, "blocked_by": null, "context_from": [],
         "usage": {"prompt_tokens": 10, "completion_tokens": 5, "reasoning_tokens": 2,
                   "cached_tokens": 6}},
        {"id": "2", "description": "b", "status": "failed", "wave": 0, "attempts": 2,
         "started_at": "2026-11-27T10:00:01Z", "finished_at": null,
         "error": "timed out", "blocked_by": null, "context_from": [],
         "usage": {"prompt_tokens": 20, "completion_tokens": 1}},
        {"id": "3", "description": "c", "status": "blocked", "wave": 1, "attempts": 0,
         "error": "ignored", "blocked_by": "2", "context_from": []}],
      "calls": [
        {"role": "planner", "model": "m", "attempt": 1, "started_at": "2026-11-27T10:00:00Z",
         "duration_ms": 1.0, "prompt_tokens": 7, "completion_tokens": 3, "reasoning_tokens": 1,
         "outcome": "ok"},
        {"role": "subagent", "model": "m", "attempt": 1, "started_at": "2026-11-27T10:00:01Z",
         "duration_ms": 1.0, "prompt_tokens": 10, "completion_tokens": 5, "reasoning_tokens": 2,
         "cached_tokens": 6, "outcome": "ok"},
        {"role": "planner", "model": "m", "attempt": 2, "started_at": "2026-11-27T10:00:02Z",
         "duration_ms": 1.0, "prompt_tokens": 4, "completion_tokens": 2, "reasoning_tokens": 0,
         "outcome": "ok"}],
      "warnings": []
    }"#;

    fn run() -> RunResult {
        match serde_json::from_str(RUN) {
            Ok(r) => r,
            Err(e) => panic!("fixture: {e}"),
        }
    }

    #[test]
    fn times_are_relative_to_the_run_and_need_both_ends() {
        let r = run();
        assert_eq!(r.wall_ms(), 12_500.0);
        assert_eq!(r.tasks[0].duration_ms(), Some(2_250.0));
        assert_eq!(r.tasks[1].duration_ms(), None);
        assert_eq!(r.tasks[2].duration_ms(), None);
        assert_eq!(
            r.since_start_ms(r.tasks[0].started_at.unwrap_or(r.started_at)),
            1_000.0
        );
    }

    #[test]
    fn task_totals_count_reasoning_as_output() {
        assert_eq!(
            run().task_totals(),
            TaskTotals {
                attempts: 3,
                tokens_in: 30,
                cached_in: 6,
                tokens_out: 8
            }
        );
    }

    #[test]
    fn roles_keep_the_order_of_their_first_call() {
        let roles = run().usage_by_role();
        let row = |role: &str, calls, tokens_in, cached_in, tokens_out| RoleUsage {
            role: role.into(),
            calls,
            tokens_in,
            cached_in,
            tokens_out,
        };
        assert_eq!(
            roles,
            [row("planner", 2, 11, 0, 6), row("subagent", 1, 10, 6, 7)]
        );
    }

    #[test]
    fn a_blocked_task_names_its_prerequisite_before_any_error() {
        let r = run();
        assert_eq!(r.tasks[0].why_not_completed(), None);
        assert_eq!(r.tasks[1].why_not_completed().as_deref(), Some("timed out"));
        assert_eq!(
            r.tasks[2].why_not_completed().as_deref(),
            Some("blocked by 2")
        );
    }
}
