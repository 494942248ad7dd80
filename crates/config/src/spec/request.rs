//! What a request to `planwave serve` may set of a job: [`RequestOptions`], the spec's own
//! groups but the host's, read from the body's flat `"options"` with every problem named,
//! and made into the job's spec on the server's own [`HostOptions`].

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{
    HostOptions, JobOptions, JobSpec, LoopOptions, PlannerOptions, ResearchOptions, RunOptions,
    Work, text,
};

/// What a request may set of a job (`POST /api/runs`' `"options"`): everything but the
/// host's ([`HostOptions`], [`PlanCacheOptions`](super::PlanCacheOptions)), flat, each
/// option named as its flag with `-` written `_`. The goal's (`rounds`, `planner`) are for
/// a goal only.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
// Serde marks a flattened group's fields as taken only when the group has no flattened
// groups of its own: the goal's plain groups come first, and `run`, last, refuses every
// name left over (so there is no `deny_unknown_fields` here).
#[serde(default)]
pub struct RequestOptions {
    #[serde(flatten)]
    pub rounds: LoopOptions,
    #[serde(flatten)]
    pub planner: PlannerOptions,
    #[serde(flatten)]
    pub run: RunOptions,
}

/// The shortest retry backoff a request may set (ms): with none, a task's retries after a
/// provider's errors would follow each other at once, with the server's key.
pub const REQUEST_MIN_RETRY_BACKOFF_MS: u64 = 100;

fn retry_backoff_under_floor(ms: u64) -> Option<String> {
    (ms < REQUEST_MIN_RETRY_BACKOFF_MS).then(|| {
        format!(
            "options.retry_backoff_ms: at least {REQUEST_MIN_RETRY_BACKOFF_MS} in a request (got {ms}): it sets how soon the server's key calls the provider again"
        )
    })
}

impl RequestOptions {
    /// The request's options read from its JSON object, or every problem with them
    /// (`options.NAME: ...`, one per option).
    pub fn from_map(
        options: &serde_json::Map<String, serde_json::Value>,
    ) -> Result<Self, Vec<String>> {
        let o: RequestOptions = text::every_problem(options, "options.")?;
        let batch = &o.run.batch;
        let problems: Vec<String> = batch
            .timing_without_batch_api()
            .iter()
            .map(|name| format!("options.{name}: only with batch_api"))
            .chain(
                batch
                    .intervals_under_request_floor()
                    .into_iter()
                    .map(|p| format!("options.{p}")),
            )
            .chain(retry_backoff_under_floor(o.run.exec.retry_backoff_ms))
            .collect();
        if problems.is_empty() {
            Ok(o)
        } else {
            Err(problems)
        }
    }

    /// The job of `work` in `out` with these options on the host's own `host`; the goal's
    /// options refused (each named) when `work` runs a plan.
    pub fn job(self, work: Work, out: PathBuf, host: HostOptions) -> Result<JobSpec, Vec<String>> {
        let work = match work {
            Work::Goal {
                goal,
                research,
                stream_plan,
            } => Work::Goal {
                goal,
                research: ResearchOptions {
                    rounds: self.rounds,
                    planner: self.planner,
                    ..research
                },
                stream_plan,
            },
            Work::Plan { .. } => {
                let goal_only: Vec<String> =
                    [text::changed(&self.rounds), text::changed(&self.planner)]
                        .concat()
                        .into_iter()
                        .map(|name| format!("options.{name}: only for a goal (research)"))
                        .collect();
                if !goal_only.is_empty() {
                    return Err(goal_only);
                }
                work
            }
        };
        Ok(JobSpec {
            work,
            out,
            options: JobOptions {
                host,
                run: self.run,
                force: false,
            },
        })
    }
}
