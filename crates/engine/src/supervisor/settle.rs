//! How a subagent's ending becomes its task's outcome: records, events, the journal's
//! acknowledgement, the sections handed to the integrator, and the end of the run.

use chrono::{DateTime, Utc};
use planwave_record::{Event, EventKind, SectionWarning, TaskStatus};
use planwave_storage::JournalError;

use super::{Ending, PendingCommit, SupervisorState};
use crate::messages::{IntegratorMsg, SubagentReport, SupervisorMsg, TaskFailure};
use planwave_record::timefmt;

/// Sections held for the integrator before they are handed over together.
pub(crate) const HELD_SECTIONS: usize = 256;

/// A task with this description makes the engine's own settling of its report panic.
#[cfg(test)]
pub(crate) const PANIC_WHILE_SETTLING: &str = "panic while settling";

impl SupervisorState {
    pub(super) fn to_integrator(&self, msg: IntegratorMsg) {
        if let Some(i) = &self.integrator {
            let _ = i.send_message(msg);
        }
    }

    /// A completed section for the integrator, which only reads the sections when the run
    /// ends. Sent one by one, each send woke the integrator's task in the same turn as the
    /// dependents' spawn (a second task made ready in one turn of a tokio worker displaces
    /// the first from the worker's LIFO slot, which also signals the other worker). Held
    /// sections go out together (one wake-up per batch): when the batch is full, before a
    /// section that still has to be written, before a rebase renumbers tasks, and before the
    /// run ends.
    fn hand_section(&mut self, index: usize, text: std::sync::Arc<str>, write: bool) {
        if self.integrator.is_none() {
            return; // an open streamed plan: the closing rebase hands over every section
        }
        // Without a run directory there is nothing to write (`write` then only says that no
        // file was written): held like the rest.
        if write && self.shared.output.is_some() {
            self.flush_held();
            self.to_integrator(IntegratorMsg::Sections(vec![(index, text, write)]));
            return;
        }
        self.held.push((index, text, write));
        if self.held.len() >= HELD_SECTIONS {
            self.flush_held();
        }
    }

    pub(super) fn flush_held(&mut self) {
        if !self.held.is_empty() && self.integrator.is_some() {
            let held = std::mem::replace(&mut self.held, Vec::with_capacity(HELD_SECTIONS));
            self.to_integrator(IntegratorMsg::Sections(held));
        }
    }

    /// A subagent of plan generation `generation` reported how its task ended.
    pub(super) fn on_ended(&mut self, generation: u32, mut report: SubagentReport) {
        // Whatever became of its task, the calls were made in this run.
        self.calls.append(&mut report.calls);
        if self.ending != Ending::Running {
            return; // the run is ending (cancelled): its tasks are as they were
        }
        // A task dropped when the plan was rebuilt: its work no longer counts.
        let Some(index) = self.current_index(generation, report.index) else {
            return;
        };
        report.index = index;
        self.on_report(report);
    }

    fn on_report(&mut self, report: SubagentReport) {
        let index = report.index;
        if self.sched.status(index) != TaskStatus::Running {
            return; // already settled (e.g. cancelled)
        }
        // A fault in the run's own bookkeeping, injected (the state is half updated here).
        #[cfg(test)]
        if self.shared.plan.task(index).description == PANIC_WHILE_SETTLING {
            panic!("injected: settling {index}");
        }
        self.retries += u64::from(report.attempts.saturating_sub(1));
        let plan = self.shared.plan.clone();
        let rec = &mut self.records[index];
        rec.attempts = report.attempts;
        rec.finished_at = Some(report.finished_at);
        rec.usage = report.usage;
        rec.context_cut = report.context_cut;
        rec.tool_calls = report.tool_calls;
        rec.empty_refs = report.empty_refs;
        rec.warnings = report.warnings;
        rec.result = report.kept_result;
        let duration_ms = duration_ms(rec.started_at, report.finished_at);
        let section = match report.result {
            Ok(section) => section,
            Err(failure) => {
                self.settle_failure(index, report.attempts, failure);
                self.finish_if_done();
                return;
            }
        };
        let (section_file, section_hash, write) = match report.written {
            Some(Ok(hash)) => (
                Some(self.shared.section_files[index].clone()),
                Some(hash),
                false,
            ),
            _ => (None, None, true),
        };
        let journaled = section_hash.is_some().then(|| section.clone());
        let result = self.records[index].result.clone();
        let truncated = self.records[index]
            .warnings
            .iter()
            .any(SectionWarning::is_truncated);
        let kind = |body: Option<std::sync::Arc<str>>| EventKind::TaskCompleted {
            task: plan.id(index).clone(),
            attempts: report.attempts,
            duration_ms,
            usage: report.usage,
            section_file: section_file.clone(),
            section_hash: section_hash.clone(),
            section: body,
            preview: Some(planwave_record::preview(&section)),
            result: result.clone(),
            truncated,
        };
        // The task counts as completed (dependents start, progress shows it) only once the
        // journal has it on disk.
        if self.shared.journal.is_some() {
            let me = self.me.clone();
            let generation = self.generation;
            let journaled = self.shared.emit_durable(
                kind(journaled),
                Box::new(move |r| {
                    let _ = me.send_message(SupervisorMsg::Committed(generation, index, r));
                }),
            );
            let event = self.shared.sink.enabled().then_some(journaled);
            let pending = PendingCommit {
                event,
                section,
                write,
            };
            self.pending_commits.insert(index, pending);
        } else {
            // Nothing to wait for: settle now.
            let event = self.shared.sink.enabled().then(|| Event::now(kind(None)));
            let pending = PendingCommit {
                event,
                section,
                write,
            };
            self.settle_completed(index, pending, Ok(()));
        }
    }

    pub(super) fn on_committed(&mut self, index: usize, result: Result<(), JournalError>) {
        if let Some(p) = self.pending_commits.remove(&index) {
            self.settle_completed(index, p, result);
        }
    }

    /// A completion the journal has (or could not make) durable: the task is completed, its
    /// dependents become ready.
    fn settle_completed(
        &mut self,
        index: usize,
        p: PendingCommit,
        result: Result<(), JournalError>,
    ) {
        if self.sched.status(index) != TaskStatus::Running || self.ending != Ending::Running {
            return; // the run is ending (cancelled); the journal has it for a resume
        }
        let plan = self.shared.plan.clone();
        if let Err(e) = result {
            self.warnings.push(format!(
                "task {}: completion not journaled ({e}); a resume would run it again",
                plan.id(index)
            ));
        }
        let rec = &mut self.records[index];
        rec.status = if rec.warnings.iter().any(SectionWarning::is_truncated) {
            TaskStatus::Truncated
        } else {
            TaskStatus::Completed
        };
        rec.round = self.shared.config.round;
        self.spans.completed(index, rec.attempts, rec.usage);
        if let Some(event) = p.event {
            self.shared.publish(event);
        }
        self.hand_section(index, p.section.clone(), p.write);
        // For later references (only when one names this task).
        self.results
            .keep(index, self.records[index].result.as_deref(), &p.section);
        self.sections[index] = Some(p.section);
        let ready = self.sched.complete(&plan, index);
        self.announce(ready);
        self.finish_if_done();
    }

    /// A subagent that ended without reporting (panic, stop, kill, spawn failure). Whether
    /// its task was still running (and so ended here).
    pub(super) fn fail_unreported(&mut self, index: usize, failure: TaskFailure) -> bool {
        if self.sched.status(index) != TaskStatus::Running || self.ending != Ending::Running {
            return false;
        }
        let rec = &mut self.records[index];
        rec.finished_at = Some(timefmt::now());
        let attempts = rec.attempts.max(1);
        rec.attempts = attempts;
        self.settle_failure(index, attempts, failure);
        self.finish_if_done();
        true
    }

    fn settle_failure(&mut self, index: usize, attempts: u32, failure: TaskFailure) {
        let plan = self.shared.plan.clone();
        let kind = failure.kind();
        let error = failure.into_message();
        let rec = &mut self.records[index];
        rec.status = TaskStatus::Failed;
        rec.error = Some(error.clone());
        rec.failure_kind = Some(kind);
        self.spans.failed(index, attempts, &error);
        self.shared.emit(EventKind::TaskFailed {
            task: plan.id(index).clone(),
            attempts,
            error,
        });
        if plan.task(index).optional {
            // An optional step's failure blocks nothing: its dependents run without it.
            let ready = self.sched.fail_optional(&plan, index);
            self.announce(ready);
            return;
        }
        let failed_id = plan.id(index).clone();
        for b in self.sched.fail(&plan, index) {
            let rec = &mut self.records[b];
            rec.status = TaskStatus::Blocked;
            rec.blocked_by = Some(failed_id.clone());
            self.spans.blocked(&self.shared, b, &failed_id.to_string());
            self.shared.emit(EventKind::TaskBlocked {
                task: plan.id(b).clone(),
                blocked_by: failed_id.clone(),
            });
        }
    }

    /// `task_ready` for tasks that just became ready, and when (their `task_started` says
    /// how long they waited).
    pub(super) fn announce(&mut self, ready: impl IntoIterator<Item = usize>) {
        if !self.shared.wants_events() {
            return;
        }
        let plan = &self.shared.plan;
        let now = std::time::Instant::now();
        for i in ready {
            if let Some(at) = self.ready_at.get_mut(i) {
                *at = Some(now);
            }
            self.shared.emit(EventKind::TaskReady {
                task: plan.id(i).clone(),
                wave: plan.wave(i),
            });
        }
    }

    pub(super) fn finish_if_done(&mut self) {
        if !self.open && self.sched.is_done() {
            self.finish();
        }
    }

    /// No task starts any more: cancelled (running subagents are killed), an actor of the
    /// run failed, or every task has ended. The run goes on once every subagent has stopped
    /// (`on_settled`).
    pub(super) fn finish(&mut self) {
        if self.ending != Ending::Running {
            return;
        }
        self.ending = Ending::Settling;
        self.flush_held();
        if self.cancelled.is_some() || self.failure.is_some() {
            self.spans.cancel_open();
            self.kill_children();
        }
        self.settle_if_quiet();
    }
}

fn duration_ms(start: Option<DateTime<Utc>>, end: DateTime<Utc>) -> f64 {
    start
        .map(|s| (end - s).num_microseconds().unwrap_or(0) as f64 / 1000.0)
        .unwrap_or(0.0)
}
