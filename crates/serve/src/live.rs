//! A run this server is executing: its cancellation token, its event log, and its state as
//! the engine reports it (the `run.json` shape before `run.json` exists).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use chrono::{DateTime, Utc};
use planwave_llm::PriceTable;
use planwave_plan::{TaskId, ValidatedPlan};
use planwave_record::Usage;
use planwave_record::{Event, EventKind, EventSink, TaskRecord, TaskStatus};
use planwave_runner::ops::{Watch, Watcher};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::log::EventLog;

/// What a live run is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// `research` before its first plan is ready.
    Planning,
    Running,
    /// The job returned; the run directory has its final files.
    Done,
}

pub struct LiveRun {
    pub id: String,
    pub dir: PathBuf,
    pub cancel: CancellationToken,
    pub log: Arc<EventLog>,
    /// The job's price table, so the running cost is the one `run.json` will record.
    prices: PriceTable,
    state: Mutex<LiveState>,
}

pub struct LiveState {
    pub phase: Phase,
    pub research: bool,
    pub started_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    pub plan: Option<Arc<ValidatedPlan>>,
    pub records: Vec<TaskRecord>,
    index: HashMap<TaskId, usize>,
    /// Model calls of the current execution so far, by task (planner calls have none).
    pub calls: HashMap<TaskId, Vec<Value>>,
    pub usage: Usage,
    /// Usage so far by model: what the price table needs for the running cost.
    by_model: BTreeMap<String, Usage>,
    /// Why the job failed, when it did (shown instead of a status).
    pub error: Option<String>,
    /// The final status once the job returned.
    pub status: Option<String>,
    /// The provider batch the run last heard of (`--batch-api`): id, state, counts.
    provider_batch: Option<Value>,
}

impl LiveRun {
    pub fn new(
        id: String,
        dir: PathBuf,
        research: bool,
        log: EventLog,
        cancel: CancellationToken,
        prices: PriceTable,
    ) -> Arc<LiveRun> {
        Arc::new(LiveRun {
            id,
            dir,
            cancel,
            log: Arc::new(log),
            prices,
            state: Mutex::new(LiveState {
                phase: if research {
                    Phase::Planning
                } else {
                    Phase::Running
                },
                research,
                started_at: Utc::now(),
                finished_at: None,
                plan: None,
                records: Vec::new(),
                index: HashMap::new(),
                calls: HashMap::new(),
                usage: Usage::default(),
                provider_batch: None,
                by_model: BTreeMap::new(),
                error: None,
                status: None,
            }),
        })
    }

    pub fn state(&self) -> MutexGuard<'_, LiveState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn is_done(&self) -> bool {
        self.state().phase == Phase::Done
    }

    /// [`LiveRun::is_done`] for a caller holding the state.
    pub fn is_done_locked(&self, s: &LiveState) -> bool {
        s.phase == Phase::Done
    }

    /// The job returned (`status` from its outcome, or `error`); the log is complete.
    pub fn finish(&self, status: Result<String, String>) {
        {
            let mut s = self.state();
            s.phase = Phase::Done;
            s.finished_at = Some(Utc::now());
            match status {
                Ok(st) => s.status = Some(st),
                Err(e) => {
                    s.status = Some("error".into());
                    s.error = Some(e);
                }
            }
        }
        self.log.finish();
    }

    /// The live state in the shape of `run.json` (`tasks[]`, `stats`), plus `live`,
    /// `elapsed_ms` and `eta_ms` (remaining tasks at the pace so far).
    pub fn snapshot(&self) -> Value {
        self.state_json(true)
    }

    /// [`LiveRun::snapshot`] without `tasks[]`: what the runs list needs, cheap for a
    /// 10,000-task run.
    pub fn summary(&self) -> Value {
        self.state_json(false)
    }

    fn state_json(&self, tasks: bool) -> Value {
        let s = self.state();
        let now = s.finished_at.unwrap_or_else(Utc::now);
        let elapsed_ms = (now - s.started_at).num_milliseconds().max(0) as f64;
        let count = |st: TaskStatus| s.records.iter().filter(|r| r.status == st).count();
        let (completed, failed, blocked, running) = (
            count(TaskStatus::Completed),
            count(TaskStatus::Failed),
            count(TaskStatus::Blocked),
            count(TaskStatus::Running),
        );
        let ended = completed + failed + blocked;
        let left = s.records.len().saturating_sub(ended);
        let eta_ms = (ended > 0 && left > 0 && s.phase != Phase::Done)
            .then(|| elapsed_ms / ended as f64 * left as f64);
        let status = match (&s.status, s.phase) {
            (Some(st), _) => st.clone(),
            (None, Phase::Planning) => "planning".into(),
            (None, _) => "running".into(),
        };
        let mut v = json!({
            "id": self.id,
            "live": s.phase != Phase::Done,
            "kind": if s.research { "research" } else { "run" },
            "status": status,
            "error": s.error,
            "topic": s.plan.as_ref().map(|p| p.spec().topic.clone()),
            "started_at": planwave_record::timefmt::format(&s.started_at),
            "finished_at": s.finished_at.as_ref().map(planwave_record::timefmt::format),
            "elapsed_ms": elapsed_ms,
            "eta_ms": eta_ms,
            "provider_batch": s.provider_batch,
            "stats": {
                "tasks": s.records.len(),
                "completed": completed,
                "failed": failed,
                "blocked": blocked,
                "running": running,
                "waves": s.plan.as_ref().map_or(0, |p| p.waves().len()),
                "usage": s.usage,
                // Priced the way the engine prices `run.json`'s calls (null without prices).
                "cost": self.prices.estimate(s.by_model.iter().map(|(m, u)| (m.as_str(), *u))),
            },
        });
        if tasks {
            v["tasks"] = json!(s.records);
        }
        v
    }

    fn open_plan(&self, plan: &Arc<ValidatedPlan>) {
        let mut s = self.state();
        s.phase = Phase::Running;
        s.records = (0..plan.len()).map(|i| pending_record(plan, i)).collect();
        s.index = (0..plan.len()).map(|i| (plan.id(i).clone(), i)).collect();
        s.calls.clear();
        s.plan = Some(plan.clone());
    }

    fn apply(&self, ev: &Event) {
        let mut s = self.state();
        let s = &mut *s;
        let at = |s: &mut LiveState, task: &TaskId| s.index.get(task).copied();
        match &ev.kind {
            EventKind::TaskStarted { task, .. } => {
                if let Some(i) = at(s, task) {
                    let r = &mut s.records[i];
                    r.status = TaskStatus::Running;
                    r.started_at.get_or_insert(ev.ts);
                    r.attempts = r.attempts.max(1);
                }
            }
            EventKind::TaskRetry { task, attempt, .. } => {
                if let Some(i) = at(s, task) {
                    s.records[i].attempts = attempt + 1;
                }
            }
            EventKind::TaskCompleted {
                task,
                attempts,
                usage,
                section_file,
                ..
            } => {
                if let Some(i) = at(s, task) {
                    let r = &mut s.records[i];
                    r.status = TaskStatus::Completed;
                    r.attempts = *attempts;
                    r.finished_at = Some(ev.ts);
                    r.usage = *usage;
                    r.section_file.clone_from(section_file);
                }
            }
            EventKind::TaskFailed {
                task,
                attempts,
                error,
            } => {
                if let Some(i) = at(s, task) {
                    let r = &mut s.records[i];
                    r.status = TaskStatus::Failed;
                    r.attempts = *attempts;
                    r.finished_at = Some(ev.ts);
                    r.error = Some(error.clone());
                }
            }
            EventKind::TaskBlocked {
                task,
                blocked_by,
                reason,
            } => {
                if let Some(i) = at(s, task) {
                    blocked(&mut s.records[i], task, blocked_by, reason);
                }
            }
            EventKind::LlmCall {
                task,
                role,
                model,
                attempt,
                duration_ms,
                usage,
                error,
            } => {
                s.usage += *usage;
                *s.by_model.entry(model.clone()).or_default() += *usage;
                if let Some(task) = task {
                    s.calls.entry(task.clone()).or_default().push(json!({
                        "role": role, "model": model, "attempt": attempt,
                        "duration_ms": duration_ms, "usage": usage, "error": error,
                    }));
                }
            }
            EventKind::ToolCall {
                task,
                tool,
                server,
                attempt,
                duration_ms,
                outcome,
                error,
            } => {
                if let Some(i) = at(s, task) {
                    s.records[i]
                        .tool_calls
                        .push(planwave_record::ToolCallRecord {
                            tool: tool.clone(),
                            server: server.clone(),
                            attempt: *attempt,
                            args: Value::Null,
                            duration_ms: *duration_ms,
                            outcome: outcome.clone(),
                            output: None,
                            error: error.clone(),
                        });
                }
            }
            EventKind::ProviderBatch { .. } => s.provider_batch = provider_batch(&ev.kind),
            _ => {}
        }
    }
}

/// A `provider_batch` event as the run's JSON shows it (`--batch-api`).
fn provider_batch(kind: &EventKind) -> Option<Value> {
    let EventKind::ProviderBatch {
        batch_id,
        state,
        total,
        completed,
        failed,
        calls,
    } = kind
    else {
        return None;
    };
    Some(json!({
        "id": batch_id, "state": state, "total": total, "completed": completed, "failed": failed,
        "calls": calls,
    }))
}

/// The engine's pending record, titled as the run page shows tasks.
fn pending_record(plan: &ValidatedPlan, i: usize) -> TaskRecord {
    TaskRecord {
        description: plan.task(i).title().to_owned(),
        ..TaskRecord::pending(plan, i)
    }
}

/// The runner's [`Watch`] for a live run: each execution's events update its state.
pub struct LiveWatch(pub Arc<LiveRun>);

struct LiveView(Arc<LiveRun>);

impl EventSink for LiveView {
    fn emit(&self, event: &Event) {
        self.0.apply(event);
    }
}

impl Watcher for LiveView {}

impl Watch for LiveWatch {
    fn open(&self, plan: &Arc<ValidatedPlan>) -> Arc<dyn Watcher> {
        self.0.open_plan(plan);
        Arc::new(LiveView(self.0.clone()))
    }
}

/// A task's record once it is blocked: by a failed prerequisite, or (the budget spent) by
/// nothing but the reason.
fn blocked(r: &mut TaskRecord, task: &TaskId, by: &TaskId, reason: &Option<String>) {
    r.status = TaskStatus::Blocked;
    r.blocked_by = (by != task).then(|| by.clone());
    r.error.clone_from(reason);
}
