//! The supervisor actor: owns a run, starts one subagent per ready task, and turns every
//! subagent ending (report, panic, kill) into exactly one task outcome.
//!
//! Dispatch happens in bounded batches through `Dispatch` self-messages, so completions and
//! supervision events keep draining while thousands of tasks become ready at once.

use std::collections::HashMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use rustc_hash::FxHashMap;
use tokio::sync::oneshot;

use crate::event::{Event, EventKind};
use crate::integrator::IntegratorMsg;
use crate::journal::JournalError;
use crate::outcome::{CancelReason, FailureKind, TaskRecord, TaskStatus};
use crate::scheduler::Scheduler;
use crate::shared::RunShared;
use crate::subagent::{DONE, Subagent, SubagentArgs, SubagentReport};
use crate::task_spans::TaskSpans;
use crate::timefmt;

mod rebase;

pub use rebase::{Close, Rebase};

pub struct Supervisor;

pub enum SupervisorMsg {
    /// Start up to one batch of ready tasks (sent to itself).
    Dispatch,
    /// A subagent's report; the number is the plan generation it was started in (see
    /// [`SupervisorMsg::Rebase`]), its report's index is that generation's.
    Finished(u32, Box<SubagentReport>),
    /// The journal made task `index` (of the generation given) durable (or could not).
    Committed(u32, usize, Result<(), JournalError>),
    /// The plan grew or closed while running (a streamed plan): a new generation.
    Rebase(Box<Rebase>),
    /// Stop starting tasks, kill running subagents, and finish the run now.
    Cancel(CancelReason),
}

/// Tasks finished in an earlier attempt of this run (resume): not run again.
#[derive(Debug, Clone)]
pub struct Preset {
    pub index: usize,
    pub record: TaskRecord,
    pub section: Arc<str>,
}

pub struct SupervisorArgs {
    pub shared: Arc<RunShared>,
    /// `None` while a streamed plan is open: the integrator comes with the final plan.
    pub integrator: Option<ActorRef<IntegratorMsg>>,
    pub done: oneshot::Sender<SupervisorOutcome>,
    pub preset: Vec<Preset>,
    /// The plan may still grow: the run does not end when its tasks have, only once a
    /// closing [`Rebase`] has come.
    pub open: bool,
}

/// The run as the supervisor saw it end.
#[derive(Debug)]
pub struct SupervisorOutcome {
    pub records: Vec<TaskRecord>,
    pub sections: Vec<Option<Arc<str>>>,
    pub retries: u64,
    /// Set when the run was cancelled; unfinished tasks are left `pending`.
    pub cancelled: Option<CancelReason>,
    /// Completions the journal could not make durable (a resume runs those tasks again).
    pub warnings: Vec<String>,
}

/// A completion waiting for the journal's acknowledgement.
struct PendingCommit {
    /// None when no sink listens.
    event: Option<Event>,
    section: Arc<str>,
    /// The subagent could not write the file; the integrator tries again and reports.
    write: bool,
}

pub struct SupervisorState {
    shared: Arc<RunShared>,
    sched: Scheduler,
    records: Vec<TaskRecord>,
    sections: Vec<Option<Arc<str>>>,
    /// Running subagents by actor. Keyed by ractor's own sequential ids, never by anything a
    /// model or client chose, so the fast non-keyed hash is safe here (SipHash was ~1 k
    /// instructions per task between this map and ractor's).
    children: FxHashMap<ActorId, usize>,
    integrator: Option<ActorRef<IntegratorMsg>>,
    done: Option<oneshot::Sender<SupervisorOutcome>>,
    dispatch_queued: bool,
    retries: u64,
    cancelled: Option<CancelReason>,
    pending_commits: HashMap<usize, PendingCommit>,
    warnings: Vec<String>,
    spans: TaskSpans,
    /// Completed sections not yet handed to the integrator (see [`SupervisorState::hand_section`]).
    held: Vec<(usize, Arc<str>, bool)>,
    /// The plan may still grow (streamed plan not closed).
    open: bool,
    /// How many times the plan was rebuilt; `maps[g]` takes generation `g`'s task indices
    /// to generation `g + 1`'s.
    generation: u32,
    maps: Vec<Vec<Option<usize>>>,
}

impl Actor for Supervisor {
    type Msg = SupervisorMsg;
    type State = SupervisorState;
    type Arguments = SupervisorArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<SupervisorMsg>,
        args: SupervisorArgs,
    ) -> Result<SupervisorState, ActorProcessingErr> {
        let plan = &args.shared.plan;
        let records = (0..plan.len())
            .map(|i| TaskRecord::pending(plan, i))
            .collect();
        let mut state = SupervisorState {
            sched: Scheduler::new(
                plan,
                args.shared.config.schedule,
                args.shared.config.concurrency,
            ),
            shared: args.shared.clone(),
            records,
            sections: vec![None; plan.len()],
            children: FxHashMap::with_capacity_and_hasher(
                plan.len()
                    .min(args.shared.config.concurrency.unwrap_or(usize::MAX))
                    .min(1 << 16),
                Default::default(),
            ),
            integrator: args.integrator,
            done: Some(args.done),
            dispatch_queued: false,
            retries: 0,
            cancelled: None,
            pending_commits: HashMap::new(),
            warnings: Vec::new(),
            spans: TaskSpans::new(plan.len()),
            held: Vec::new(),
            open: args.open,
            generation: 0,
            maps: Vec::new(),
        };
        for p in args.preset {
            state.retries += u64::from(p.record.attempts.saturating_sub(1));
            state.sched.preset_completed(&args.shared.plan, p.index);
            state.to_integrator(IntegratorMsg::Section {
                index: p.index,
                text: p.section.clone(),
                write: false,
            });
            state.sections[p.index] = Some(p.section);
            state.records[p.index] = p.record;
        }
        Ok(state)
    }

    async fn post_start(
        &self,
        myself: ActorRef<SupervisorMsg>,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        let plan = state.shared.plan.clone();
        let wanted = state.shared.wants_events();
        for i in 0..plan.len() {
            if wanted
                && state.sched.status(i) == TaskStatus::Pending
                && plan
                    .deps(i)
                    .iter()
                    .all(|&d| state.sched.status(d as usize) == TaskStatus::Completed)
            {
                state.shared.emit(EventKind::TaskReady {
                    task: plan.id(i).clone(),
                    wave: plan.wave(i),
                });
            }
        }
        state.queue_dispatch(&myself);
        state.finish_if_done(&myself);
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<SupervisorMsg>,
        msg: SupervisorMsg,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            SupervisorMsg::Dispatch => {
                state.dispatch_queued = false;
                state.dispatch_batch(&myself).await;
            }
            SupervisorMsg::Finished(generation, mut report) => {
                // A task dropped when the plan was rebuilt: its work no longer counts.
                let Some(index) = state.current_index(generation, report.index) else {
                    return Ok(());
                };
                report.index = index;
                if generation < state.generation
                    && let Ok(section) = &report.result
                {
                    // Its subagent kept its result for the plan it started under; later
                    // references read the current plan's.
                    state.shared.results.keep(index, || {
                        serde_json::from_str(section)
                            .unwrap_or_else(|_| serde_json::Value::String(section.to_string()))
                    });
                }
                state.on_report(&myself, *report);
                state.dispatch_now(&myself).await;
            }
            SupervisorMsg::Committed(generation, index, result) => {
                let Some(index) = state.current_index(generation, index) else {
                    return Ok(());
                };
                state.on_committed(&myself, index, result);
                state.dispatch_now(&myself).await;
            }
            SupervisorMsg::Rebase(rebase) => {
                if state.cancelled.is_none() {
                    // Held sections carry this generation's indices.
                    state.flush_held();
                    state.rebase(&myself, *rebase);
                    state.dispatch_now(&myself).await;
                }
            }
            SupervisorMsg::Cancel(reason) => {
                if state.cancelled.is_none() {
                    state.cancelled = Some(reason);
                    for cell in myself.get_children() {
                        cell.kill();
                    }
                    state.finish(&myself);
                }
            }
        }
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<SupervisorMsg>,
        event: SupervisionEvent,
        state: &mut SupervisorState,
    ) -> Result<(), ActorProcessingErr> {
        // Never let a child's end stop the supervisor (ractor's default): each ending becomes a
        // task outcome by policy instead.
        match event {
            SupervisionEvent::ActorFailed(cell, err) => {
                if let Some(index) = state.children.remove(&cell.get_id()) {
                    state.fail_unreported(&myself, index, format!("subagent panicked: {err}"));
                }
            }
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                if let Some(index) = state.children.remove(&cell.get_id()) {
                    // A subagent that reported stops with DONE and its report is already in
                    // the mailbox; any other ending means it died without one.
                    if reason.as_deref() != Some(DONE) && state.cancelled.is_none() {
                        let why = reason.unwrap_or_else(|| "stopped".into());
                        state.fail_unreported(
                            &myself,
                            index,
                            format!("subagent actor ended before reporting ({why})"),
                        );
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

impl SupervisorState {
    fn to_integrator(&self, msg: IntegratorMsg) {
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
    fn hand_section(&mut self, index: usize, text: Arc<str>, write: bool) {
        if self.integrator.is_none() {
            return; // an open streamed plan: the closing rebase hands over every section
        }
        // Without a run directory there is nothing to write (`write` then only says that no
        // file was written): held like the rest.
        if write && self.shared.output.is_some() {
            self.flush_held();
            self.to_integrator(IntegratorMsg::Section { index, text, write });
            return;
        }
        self.held.push((index, text, write));
        if self.held.len() >= HELD_SECTIONS {
            self.flush_held();
        }
    }

    fn flush_held(&mut self) {
        for (index, text, write) in std::mem::take(&mut self.held) {
            self.to_integrator(IntegratorMsg::Section { index, text, write });
        }
    }

    fn queue_dispatch(&mut self, myself: &ActorRef<SupervisorMsg>) {
        // Only when a task can start now: ready tasks held back by the cap or the wave barrier
        // wait for a task to end, and a turn queued for them found nothing to start and queued
        // the next (a busy loop at the cap: 100 % of a core while the model was thinking).
        if !self.dispatch_queued && self.cancelled.is_none() && self.sched.can_start() {
            self.dispatch_queued = true;
            let _ = myself.send_message(SupervisorMsg::Dispatch);
        }
    }

    /// Starts tasks a completion just made ready in the same turn, instead of behind every
    /// report already queued in the mailbox (the dispatch latency's tail). Still one batch at
    /// most; the rest goes through `Dispatch` as before.
    async fn dispatch_now(&mut self, myself: &ActorRef<SupervisorMsg>) {
        if self.done.is_some() && self.sched.can_start() {
            self.dispatch_batch(myself).await;
        }
    }

    async fn dispatch_batch(&mut self, myself: &ActorRef<SupervisorMsg>) {
        let plan = self.shared.plan.clone();
        for _ in 0..self.shared.config.dispatch_batch.max(1) {
            if self.cancelled.is_some() {
                return;
            }
            let Some(index) = self.sched.next_task() else {
                break;
            };
            let prior: Vec<(usize, Arc<str>)> = plan
                .deps(index)
                .iter()
                .filter_map(|&d| self.sections[d as usize].clone().map(|s| (d as usize, s)))
                .collect();
            let rec = &mut self.records[index];
            rec.status = TaskStatus::Running;
            rec.started_at = Some(timefmt::now());
            rec.context_from = prior.iter().map(|(d, _)| plan.id(*d).clone()).collect();
            let span = self.spans.start(&self.shared, index, &rec.context_from);
            if self.shared.wants_events() {
                self.shared.emit(EventKind::TaskStarted {
                    task: plan.id(index).clone(),
                    wave: plan.wave(index),
                    description: plan.task(index).title().to_owned(),
                    tool: plan.task(index).tool.clone(),
                });
            }
            let args = SubagentArgs {
                shared: self.shared.clone(),
                index,
                prior,
                supervisor: myself.clone(),
                span,
                generation: self.generation,
            };
            match Actor::spawn_linked(None, Subagent, args, myself.get_cell()).await {
                Ok((child, _join)) => {
                    self.children.insert(child.get_id(), index);
                }
                Err(e) => {
                    self.fail_unreported(myself, index, format!("could not start subagent: {e}"))
                }
            }
        }
        self.queue_dispatch(myself);
    }

    fn on_report(&mut self, myself: &ActorRef<SupervisorMsg>, report: SubagentReport) {
        let index = report.index;
        if self.sched.status(index) != TaskStatus::Running {
            return; // already settled (e.g. cancelled)
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
        let duration_ms = duration_ms(rec.started_at, report.finished_at);
        match report.result {
            Ok(section) => {
                let (section_file, section_hash, write) = match report.written {
                    Some(Ok(hash)) => (
                        Some(self.shared.section_files[index].clone()),
                        Some(hash),
                        false,
                    ),
                    _ => (None, None, true),
                };
                let journaled = section_hash.is_some().then(|| section.clone());
                let kind = |body: Option<Arc<str>>| EventKind::TaskCompleted {
                    task: plan.id(index).clone(),
                    attempts: report.attempts,
                    duration_ms,
                    usage: report.usage,
                    section_file: section_file.clone(),
                    section_hash: section_hash.clone(),
                    section: body,
                    preview: Some(crate::event::preview(&section)),
                };
                // The task counts as completed (dependents start, progress shows it) only
                // once the journal has it on disk.
                if self.shared.journal.is_some() {
                    let me = myself.clone();
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
                    // Nothing to wait for: settle now instead of a round trip through the
                    // mailbox, which would queue behind every report already waiting there
                    // and delay the dependents' dispatch.
                    let event = self.shared.sink.enabled().then(|| Event::now(kind(None)));
                    let pending = PendingCommit {
                        event,
                        section,
                        write,
                    };
                    self.settle_completed(myself, index, pending, Ok(()));
                }
                return;
            }
            Err(error) => self.settle_failure(
                index,
                report.attempts,
                error,
                report.failure_kind.unwrap_or(FailureKind::Fatal),
            ),
        }
        self.queue_dispatch(myself);
        self.finish_if_done(myself);
    }

    fn on_committed(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        index: usize,
        result: Result<(), JournalError>,
    ) {
        if let Some(p) = self.pending_commits.remove(&index) {
            self.settle_completed(myself, index, p, result);
        }
    }

    /// A completion the journal has (or could not make) durable: the task is completed, its
    /// dependents become ready.
    fn settle_completed(
        &mut self,
        myself: &ActorRef<SupervisorMsg>,
        index: usize,
        p: PendingCommit,
        result: Result<(), JournalError>,
    ) {
        if self.sched.status(index) != TaskStatus::Running || self.done.is_none() {
            return; // the run already ended (cancelled); the journal has it for a resume
        }
        let plan = self.shared.plan.clone();
        if let Err(e) = result {
            self.warnings.push(format!(
                "task {}: completion not journaled ({e}); a resume would run it again",
                plan.id(index)
            ));
        }
        let rec = &mut self.records[index];
        rec.status = TaskStatus::Completed;
        rec.round = self.shared.config.round;
        self.spans.completed(index, rec.attempts, rec.usage);
        if let Some(event) = p.event {
            self.shared.publish(event);
        }
        self.hand_section(index, p.section.clone(), p.write);
        // A streamed plan may have grown while this completion waited for the journal: the
        // new plan's references can name this task, and its subagent kept the result only for
        // the plan it started under (a no-op unless some reference needs it, and the
        // subagent's own result wins when it is there).
        self.shared.results.keep_missing(index, || {
            serde_json::from_str(&p.section)
                .unwrap_or_else(|_| serde_json::Value::String(p.section.to_string()))
        });
        self.sections[index] = Some(p.section);
        let ready = self.sched.complete(&plan, index);
        if self.shared.wants_events() {
            for ready in ready {
                self.shared.emit(EventKind::TaskReady {
                    task: plan.id(ready).clone(),
                    wave: plan.wave(ready),
                });
            }
        }
        self.queue_dispatch(myself);
        self.finish_if_done(myself);
    }

    /// A subagent that died without reporting (panic, kill, spawn failure).
    fn fail_unreported(&mut self, myself: &ActorRef<SupervisorMsg>, index: usize, error: String) {
        if self.sched.status(index) != TaskStatus::Running {
            return;
        }
        let rec = &mut self.records[index];
        rec.finished_at = Some(timefmt::now());
        let attempts = rec.attempts.max(1);
        rec.attempts = attempts;
        self.settle_failure(index, attempts, error, FailureKind::Crashed);
        self.queue_dispatch(myself);
        self.finish_if_done(myself);
    }

    fn settle_failure(&mut self, index: usize, attempts: u32, error: String, kind: FailureKind) {
        let plan = self.shared.plan.clone();
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
            // Seed 004: an optional step's failure blocks nothing.
            let ready = self.sched.fail_optional(&plan, index);
            if self.shared.wants_events() {
                for ready in ready {
                    self.shared.emit(EventKind::TaskReady {
                        task: plan.id(ready).clone(),
                        wave: plan.wave(ready),
                    });
                }
            }
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

    fn finish_if_done(&mut self, myself: &ActorRef<SupervisorMsg>) {
        if !self.open && self.sched.is_done() {
            self.finish(myself);
        }
    }

    fn finish(&mut self, myself: &ActorRef<SupervisorMsg>) {
        if let Some(done) = self.done.take() {
            // Before `done`: whoever receives it asks the integrator for the report next.
            self.flush_held();
            if self.cancelled.is_some() {
                self.spans.cancel_open();
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
            let outcome = SupervisorOutcome {
                records: std::mem::take(&mut self.records),
                sections: std::mem::take(&mut self.sections),
                retries: self.retries,
                cancelled: self.cancelled,
                warnings: std::mem::take(&mut self.warnings),
            };
            let _ = done.send(outcome);
            myself.stop(None);
        }
    }
}

/// Sections held for the integrator before they are handed over together.
const HELD_SECTIONS: usize = 256;

fn duration_ms(start: Option<DateTime<Utc>>, end: DateTime<Utc>) -> f64 {
    start
        .map(|s| (end - s).num_microseconds().unwrap_or(0) as f64 / 1000.0)
        .unwrap_or(0.0)
}

#[cfg(test)]
mod tests {
    use planwave_llm::sim::{Latency, SimConfig, SimProvider};
    use planwave_plan::{PlanSpec, TaskSpec, ValidatedPlan};

    use super::*;
    use crate::run::{RunRequest, execute};

    /// More completions than one batch of held sections (two full batches and a part): the
    /// integrator still gets every section, so the report has each one whole.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_report_has_every_section_when_they_reach_the_integrator_in_batches() {
        let n = 2 * HELD_SECTIONS + 37;
        let tasks = (0..n)
            .map(|i| TaskSpec::new(format!("t{i}").as_str(), format!("topic part {i}"), vec![]))
            .collect();
        let plan = Arc::new(
            ValidatedPlan::new(PlanSpec {
                topic: "batches".into(),
                tasks,
                ..PlanSpec::default()
            })
            .expect("valid"),
        );
        let provider = SimProvider::new(SimConfig {
            latency: Latency::from_mean(0.0, 0.0),
            ..SimConfig::default()
        });
        let result = execute(RunRequest::in_memory(plan, Arc::new(provider)))
            .await
            .expect("ran");
        assert_eq!(result.stats.completed, n);
        assert_eq!(result.sections.len(), n);
        for (i, s) in result.sections.iter().enumerate() {
            let s = s.as_deref().expect("a section");
            assert!(
                result.report.contains(s.trim()),
                "section of t{i} missing from the report"
            );
        }
    }
}
