//! The record of one model call, as every run file keeps it (`run.json` `calls[]`): made by
//! the engine for subagents and the integrator, and by the planner's ask-with-repair loop
//! for the planner, evaluator and reflector.

use chrono::{DateTime, Utc};
use planwave_plan::TaskId;
use serde::{Deserialize, Serialize};

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
    /// `ok` or `error`.
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl CallRecord {
    pub fn usage(&self) -> Usage {
        Usage {
            prompt_tokens: self.prompt_tokens,
            completion_tokens: self.completion_tokens,
            reasoning_tokens: self.reasoning_tokens,
        }
    }
}
