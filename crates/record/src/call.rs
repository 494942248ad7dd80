//! The record of one model call, as every run file keeps it (`run.json` `calls[]`): made by
//! the engine for subagents and the integrator, and by the planner's ask-with-repair loop
//! for the planner, evaluator and reflector.

use chrono::{DateTime, Utc};
use planwave_plan::TaskId;
use serde::{Deserialize, Serialize};

use crate::usage::is_zero;
use crate::{Usage, timefmt};

/// One model call of a run (any role), as recorded in `run.json` `calls[]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    pub role: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<TaskId>,
    pub model: String,
    pub attempt: u32,
    #[serde(serialize_with = "timefmt::serialize")]
    pub started_at: DateTime<Utc>,
    pub duration_ms: f64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub reasoning_tokens: u64,
    /// Of `prompt_tokens`, those read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_tokens: u64,
    /// Of `prompt_tokens`, those written to the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// `ok` or `error`.
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl CallRecord {
    /// A call that ended: its tokens from `usage`, its outcome from `error`; no task (set
    /// `task` for a task's call).
    pub fn ended(
        role: &str,
        model: String,
        attempt: u32,
        started_at: DateTime<Utc>,
        duration_ms: f64,
        usage: &Usage,
        error: Option<String>,
    ) -> CallRecord {
        let mut record = CallRecord {
            role: role.to_owned(),
            task: None,
            model,
            attempt,
            started_at,
            duration_ms,
            prompt_tokens: 0,
            completion_tokens: 0,
            reasoning_tokens: 0,
            cached_tokens: 0,
            cache_write_tokens: 0,
            outcome: if error.is_some() { "error" } else { "ok" }.into(),
            error,
        };
        record.set_usage(usage);
        record
    }

    pub fn usage(&self) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            reasoning_tokens: self.reasoning_tokens,
            cached_tokens: self.cached_tokens,
            cache_write_tokens: self.cache_write_tokens,
        }
    }

    /// Sets the token counts from `usage`.
    pub fn set_usage(&mut self, usage: &Usage) {
        self.prompt_tokens = usage.prompt_tokens;
        self.completion_tokens = usage.completion_tokens;
        self.reasoning_tokens = usage.reasoning_tokens;
        self.cached_tokens = usage.cached_tokens;
        self.cache_write_tokens = usage.cache_write_tokens;
    }
}
