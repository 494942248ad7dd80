//! The end of a run, in the supervisor: once its subagents have stopped, the integrator
//! writes the summary and the report, and the caller gets everything at once.

use std::sync::Arc;

use planwave_plan::ValidatedPlan;
use planwave_record::{RunStats, TaskRecord, TaskStatus};
use ractor::{Actor, ActorProcessingErr};

use super::{Ending, SupervisorOutcome, SupervisorState};
use crate::config::RunConfig;
use crate::error::EngineError;
use crate::integrator::{Integrator, IntegratorArgs};
use crate::messages::{FinishRequest, Integration, IntegratorMsg};

impl SupervisorState {
    /// Starts the integrator, linked: its panic reaches `handle_supervisor_evt`. Sections
    /// held until now go to it.
    pub(super) async fn start_integrator(&mut self) -> Result<(), ActorProcessingErr> {
        let args = IntegratorArgs {
            shared: self.shared.clone(),
            supervisor: self.me.clone(),
        };
        match Actor::spawn_linked(None, Integrator, args, self.me.get_cell()).await {
            Ok((integrator, _join)) => {
                self.integrator = Some(integrator);
                self.flush_held();
            }
            Err(e) => {
                self.failure = Some(EngineError::Spawn {
                    actor: "integrator",
                    reason: e.to_string(),
                });
                self.finish();
            }
        }
        Ok(())
    }

    /// Every subagent has stopped: the integrator gets the records, or the caller the
    /// failure (or, for a streamed plan that never closed, the records alone).
    pub(super) fn on_settled(&mut self) {
        if self.ending != Ending::Settling {
            return;
        }
        if self.failure.is_some() {
            self.answer_failure();
            return;
        }
        if self.cancelled.is_some() {
            // Interrupted work is not a failure: it stays pending so a resume runs it.
            for rec in self
                .records
                .iter_mut()
                .filter(|r| r.status == TaskStatus::Running)
            {
                rec.status = TaskStatus::Pending;
                rec.error = Some("cancelled".into());
            }
        }
        // The scheduling makespan: first dispatch to last task settled, before integration.
        let makespan_ms = self.started.elapsed().as_secs_f64() * 1000.0;
        let mut stats = run_stats(
            &self.shared.plan,
            &self.records,
            &self.shared.config,
            makespan_ms,
        );
        stats.retries = self.retries;
        let Some(integrator) = self.integrator.clone() else {
            self.answer(None, stats);
            return;
        };
        // Shared with the integrator for the report, not deep-copied (10,000 records are a
        // few MB); it lets go of them before it answers.
        let records = Arc::new(std::mem::take(&mut self.records));
        let request = FinishRequest {
            records: records.clone(),
            stats: stats.clone(),
            span: tracing::info_span!(target: "planwave::engine", parent: &self.shared.span, "integrate"),
            stopped: self.cancelled,
            cancel: self.cancel.clone(),
        };
        self.integrating = Some(records);
        self.stats = Some(stats);
        self.ending = Ending::Integrating;
        let _ = integrator.send_message(IntegratorMsg::Finish(Box::new(request)));
    }

    pub(super) fn on_integrated(&mut self, mut integration: Integration) {
        if self.ending != Ending::Integrating {
            return;
        }
        if let Some(records) = self.integrating.take() {
            self.records = Arc::try_unwrap(records).unwrap_or_else(|shared| (*shared).clone());
        }
        self.calls.append(&mut integration.calls);
        let stats = self.stats.take().unwrap_or_default();
        self.answer(Some(integration), stats);
    }

    /// The caller's answer: the run's outcome. The supervisor then stops, and with it any
    /// child still linked.
    fn answer(&mut self, integration: Option<Integration>, stats: RunStats) {
        // Reports and killed subagents brought their calls in no particular order: in the
        // order they ended, as a log reads.
        self.calls.sort_by_key(|c| {
            c.started_at + chrono::Duration::microseconds((c.duration_ms * 1000.0) as i64)
        });
        let outcome = SupervisorOutcome {
            records: std::mem::take(&mut self.records),
            sections: std::mem::take(&mut self.sections),
            stats,
            cancelled: self.cancelled,
            warnings: std::mem::take(&mut self.warnings),
            calls: std::mem::take(&mut self.calls),
            integration,
        };
        self.send(Ok(outcome));
    }

    /// The run's failure for the caller (an actor of its machinery failed).
    pub(super) fn answer_failure(&mut self) {
        if let Some(failure) = self.failure.take() {
            self.send(Err(failure));
        }
    }

    fn send(&mut self, result: Result<SupervisorOutcome, EngineError>) {
        self.ending = Ending::Done;
        if let Some(done) = self.done.take() {
            let _ = done.send(result);
        }
        self.me.stop(None);
    }
}

/// Counts, usage and the plan's shape, before integration adds the summary's usage.
pub(crate) fn run_stats(
    plan: &ValidatedPlan,
    records: &[TaskRecord],
    config: &RunConfig,
    makespan_ms: f64,
) -> RunStats {
    let count = |s: TaskStatus| records.iter().filter(|r| r.status == s).count();
    let mut usage = planwave_record::Usage::default();
    for r in records {
        usage += r.usage;
    }
    RunStats {
        tasks: plan.len(),
        completed: count(TaskStatus::Completed),
        failed: count(TaskStatus::Failed),
        blocked: count(TaskStatus::Blocked),
        truncated: count(TaskStatus::Truncated),
        optional_failed: records
            .iter()
            .filter(|r| r.optional && r.status == TaskStatus::Failed)
            .count(),
        waves: plan.waves().len(),
        critical_path: plan
            .critical_path()
            .iter()
            .map(|&i| plan.id(i as usize).clone())
            .collect(),
        makespan_ms,
        schedule: Some(config.schedule),
        concurrency: config.concurrency,
        retries: 0,
        transport_retries: std::collections::BTreeMap::new(),
        usage,
        cost: None,
    }
}
