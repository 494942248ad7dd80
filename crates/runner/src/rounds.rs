//! The reflective loop's rounds on disk: `DIR/rounds/<k>/` is a run directory per round
//! (plan, run.json, report, sections, events, planner attempts, evaluation, reflection).
//! [`RoundsDriver`] plans and executes for `planwave_orchestrator::run_loop` and keeps each
//! round's books: every model call it made, usage and cost as their sum.

use planwave_engine::RunRequest;
use std::collections::HashMap;
use std::sync::Arc;

use crate::error::Context;
use planwave_engine::RunConfig;
use planwave_llm::{AgentRole, ToolResultRef};
use planwave_orchestrator::{Planned, Rounds, StopReason};
use planwave_plan::ValidatedPlan;
use planwave_planner::{Attempt, PlannerConfig};
use planwave_record::{
    CallRecord, Event, EventKind, EventSink, PlanSource, Preset, RoundTag, RunResult,
};
use planwave_storage::{Journal, JsonlSink, RunDir};
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::RunnerError;
use crate::execute::Watch;
use crate::planning::planner_call_event;
use crate::{
    Execution, Notes, PlanCache, PlanRequest, Resources, execute_plan, open_journal,
    plan_goal_cached,
};

/// One line of `planner/attempts.json`.
#[derive(Serialize)]
struct AttemptFile<'a> {
    #[serde(flatten)]
    attempt: &'a Attempt,
    /// The raw model text of this attempt, relative to the round's directory.
    raw_file: Option<String>,
}

/// What every round shares.
pub struct RoundsSetup<'a> {
    pub goal: String,
    pub resources: Resources,
    pub planner: PlannerConfig,
    /// `--plan-cache`: only the first round's first plan goes through it (later plans are
    /// told a reflection or a failure, and must be planned afresh).
    pub cache: Option<PlanCache>,
    /// The engine's settings (prices included) for every pass.
    pub config: RunConfig,
    /// The loop's top directory (its durability and, on a queue worker, its mirror are
    /// kept by every round's directory).
    pub top: RunDir,
    pub quiet: bool,
    /// `--deadline` for the whole loop, not per round.
    pub deadline: Option<std::time::Instant>,
    /// A batch's cap on subagents in flight across its jobs.
    pub slots: Option<planwave_engine::Slots>,
    /// Each pass fills in the front end's root span (one loop per command); a batch's
    /// jobs share theirs, so they do not.
    pub root_span: bool,
    /// One run id for the whole loop: every round's journal and the `--events` stream
    /// carry it.
    pub run_id: uuid::Uuid,
    /// The `--events` stream, shared by every round; closed by the caller at the end.
    pub stream: Option<Arc<JsonlSink>>,
    pub cancel: CancellationToken,
    pub watch: &'a dyn Watch,
    pub notes: &'a dyn Notes,
    /// Each round's first plan is executed while it streams (see `crate::streamed`).
    pub stream_plan: bool,
}

pub struct RoundsDriver<'a> {
    pub setup: RoundsSetup<'a>,
    /// Per round: planner and earlier passes' calls, prepended to the round's `run.json`.
    calls: HashMap<u32, Vec<CallRecord>>,
    /// Per round: planning attempts of the plan in use.
    pub attempts: HashMap<u32, usize>,
    /// Journals opened by planning, continued by the same pass's execution.
    events: HashMap<RoundTag, Arc<Journal>>,
    /// Per round: where the plan in use came from.
    pub(crate) sources: HashMap<u32, PlanSource>,
    /// Executions done while their plan streamed, for `execute` to hand out.
    pub(crate) streamed: HashMap<RoundTag, RunResult>,
}

impl<'a> RoundsDriver<'a> {
    pub fn new(setup: RoundsSetup<'a>) -> RoundsDriver<'a> {
        RoundsDriver {
            setup,
            calls: HashMap::new(),
            attempts: HashMap::new(),
            events: HashMap::new(),
            sources: HashMap::new(),
            streamed: HashMap::new(),
        }
    }

    /// A resumed round: its reopened journal continues with the pass, and the calls its
    /// `run.json` already lists stay in it.
    pub(crate) fn seed_round(
        &mut self,
        tag: RoundTag,
        journal: Arc<Journal>,
        dir: &std::path::Path,
    ) {
        self.events.insert(tag, journal);
        let calls = std::fs::read(dir.join("run.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<RunResult>(&b).ok())
            .map(|r| r.calls)
            .unwrap_or_default();
        self.calls.insert(tag.round, calls);
    }

    /// The planning attempts a round made before, from its `planner/attempts.json`.
    pub(crate) fn seed_attempts(&mut self, round: u32, dir: &std::path::Path) {
        let n = std::fs::read(dir.join("planner/attempts.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<Vec<serde_json::Value>>(&b).ok())
            .map_or(0, |a| a.len());
        self.attempts.insert(round, n);
    }

    /// Where round `round`'s plan came from, when the caller gave it (`run --recover`).
    pub fn given_plan(&mut self, round: u32, source: PlanSource) {
        self.sources.insert(round, source);
    }

    pub fn round_dir(&self, round: u32) -> crate::Result<RunDir> {
        let path = self.setup.top.root().join("rounds").join(round.to_string());
        self.setup
            .top
            .child(&format!("rounds/{round}"))
            .with_context(|| format!("preparing {}", path.display()))
    }

    pub(crate) fn planner_dir(tag: RoundTag) -> String {
        if tag.pass == 1 {
            "planner".into()
        } else {
            format!("planner-pass-{}", tag.pass)
        }
    }

    /// Writes each attempt's raw text as it ends and journals its model call.
    pub(crate) fn attempt_recorder<'s>(
        &self,
        out: &RunDir,
        dir: &str,
        events: &Arc<Journal>,
        errors: &'s mut Vec<String>,
    ) -> impl FnMut(&Attempt) + Send + 's {
        let (out, dir, events) = (out.clone(), dir.to_owned(), events.clone());
        let stream = self.setup.stream.clone();
        move |a: &Attempt| {
            if !a.raw.is_empty()
                && let Err(e) = out.write(
                    &format!("{dir}/attempt-{}.txt", a.attempt),
                    a.raw.as_bytes(),
                )
            {
                errors.push(e.to_string());
            }
            let ev = planner_call_event(a);
            events.emit(&ev);
            if let Some(s) = &stream {
                s.emit(&ev);
            }
        }
    }

    /// `planner/attempts.json` and the round's planner calls.
    pub(crate) fn keep_attempts(
        &mut self,
        tag: RoundTag,
        out: &RunDir,
        dir: &str,
        attempts: &[Attempt],
    ) -> crate::Result<()> {
        let files: Vec<AttemptFile<'_>> = attempts
            .iter()
            .map(|a| AttemptFile {
                attempt: a,
                raw_file: (!a.raw.is_empty()).then(|| format!("{dir}/attempt-{}.txt", a.attempt)),
            })
            .collect();
        out.write_json(&format!("{dir}/attempts.json"), &files)?;
        for a in attempts {
            for w in &a.warnings {
                self.setup.notes.note(&format!("planner warning: {w}"));
            }
        }
        let calls = self.calls.entry(tag.round).or_default();
        calls.extend(attempts.iter().map(|a| a.call_record(AgentRole::Planner)));
        self.attempts.insert(tag.round, attempts.len());
        Ok(())
    }
}

impl RoundsDriver<'_> {
    /// A fresh plan for `tag`, told `note` (a reflection, or why the round's plan failed)
    /// and, with a complete replan, what each failed step's tool answered.
    async fn plan_told(
        &mut self,
        tag: RoundTag,
        note: Option<&str>,
        failed: &[ToolResultRef],
    ) -> crate::Result<Planned<RunnerError>> {
        // The cache answers the loop's first plan at once: nothing to stream. A wave barrier
        // needs every task of a wave known before the next may start.
        let cached = self.setup.cache.is_some() && tag == RoundTag { round: 1, pass: 1 };
        let dataflow = self.setup.config.schedule == planwave_record::Schedule::Dataflow;
        if self.setup.stream_plan && tag.pass == 1 && !cached && dataflow {
            return self.plan_streaming(tag, note).await;
        }
        let out = self.round_dir(tag.round)?;
        let dir = Self::planner_dir(tag);
        std::fs::create_dir_all(out.root().join(&dir))
            .with_context(|| format!("creating {}", out.root().join(&dir).display()))?;
        // Planning events open the file the pass's execution continues.
        let events = open_journal(&out, "events.jsonl", self.setup.run_id)?;
        self.events.insert(tag, events.clone());
        let mut write_errors: Vec<String> = Vec::new();
        let planned = {
            let mut record = self.attempt_recorder(&out, &dir, &events, &mut write_errors);
            let s = &self.setup;
            let first = tag == RoundTag { round: 1, pass: 1 };
            plan_goal_cached(
                PlanRequest {
                    goal: &s.goal,
                    reflection: note,
                    failed_tools: failed,
                    resources: &s.resources,
                    config: s.planner.clone(),
                    quiet: s.quiet,
                    cancel: &s.cancel,
                    notes: s.notes,
                },
                s.cache.as_ref().filter(|_| first),
                &mut record,
            )
            .await
        };
        for e in &write_errors {
            self.setup.notes.note(&format!("warning: {e}"));
        }
        if !matches!(planned, Ok(Some(ref o)) if o.outcome.plan.is_some())
            && let Some(sink) = self.events.remove(&tag)
        {
            let _ = sink.close();
        }
        let (outcome, source) = match planned {
            Ok(Some(o)) => (o.outcome, o.source),
            Ok(None) => {
                self.setup.notes.note("interrupted while planning");
                return Ok(Planned::Stop(StopReason::Interrupted));
            }
            // What a failed plan means for the loop is the loop's rule.
            Err(e) => return Ok(Planned::Failed(e)),
        };
        self.keep_attempts(tag, &out, &dir, &outcome.attempts)?;
        if source == PlanSource::Cache {
            out.write_json(
                &format!("{dir}/cache.json"),
                &serde_json::json!({"plan_source": "cache"}),
            )?;
        }
        self.sources.insert(tag.round, source);
        match outcome.into_plan() {
            Ok(plan) => Ok(Planned::Plan(Box::new(plan))),
            Err(e) => Ok(Planned::Failed(e.into())),
        }
    }
}

#[async_trait::async_trait]
impl Rounds for RoundsDriver<'_> {
    type Error = RunnerError;

    async fn plan(
        &mut self,
        tag: RoundTag,
        note: Option<&str>,
    ) -> crate::Result<Planned<RunnerError>> {
        self.plan_told(tag, note, &[]).await
    }

    async fn replan(
        &mut self,
        tag: RoundTag,
        note: &str,
        failed: &[ToolResultRef],
    ) -> crate::Result<Planned<RunnerError>> {
        self.plan_told(tag, Some(note), failed).await
    }

    async fn execute(
        &mut self,
        tag: RoundTag,
        plan: Arc<ValidatedPlan>,
        preset: Vec<Preset>,
        fresh: bool,
    ) -> crate::Result<RunResult> {
        if let Some(mut result) = self.take_streamed(tag) {
            let this_pass = std::mem::take(&mut result.calls);
            self.add_calls(tag.round, this_pass, Some(&mut result))?;
            return Ok(result);
        }
        let out = self.round_dir(tag.round)?;
        if fresh && tag.pass > 1 {
            // A complete replan: the discarded plan's sections must not pass for this one's.
            let sections = out.path("sections")?;
            std::fs::remove_dir_all(&sections)
                .and_then(|()| std::fs::create_dir_all(&sections))
                .with_context(|| format!("clearing {}", sections.display()))?;
        }
        let events = match self.events.remove(&tag) {
            Some(sink) => sink,
            // Every pass of a round appends to one journal, so a resume of the round sees
            // every section any pass completed.
            None => open_journal(&out, "events.jsonl", self.setup.run_id)?,
        };
        let s = &self.setup;
        let mut result = execute_plan(
            Execution {
                run: RunRequest {
                    run_id: s.run_id,
                    config: RunConfig {
                        round: Some(tag),
                        plan_source: self.sources.get(&tag.round).copied(),
                        ..s.config.clone()
                    },
                    deadline: s
                        .deadline
                        .map(|d| d.saturating_duration_since(std::time::Instant::now())),
                    preset,
                    slots: s.slots.clone(),
                    cancel: s.cancel.child_token(),
                    ..s.resources.request(plan, &out, &events)
                },
                resources: s.resources.clone(),
                stream: s.stream.clone(),
                root_span: s.root_span,
            },
            s.watch,
        )
        .await?;
        let this_pass = std::mem::take(&mut result.calls);
        self.add_calls(tag.round, this_pass, Some(&mut result))?;
        Ok(result)
    }

    fn add_calls(
        &mut self,
        round: u32,
        calls: Vec<CallRecord>,
        result: Option<&mut RunResult>,
    ) -> crate::Result<()> {
        let all = self.calls.entry(round).or_default();
        all.extend(calls);
        let Some(result) = result else {
            return Ok(());
        };
        // The round's run.json has every call the round made (planning, every pass,
        // evaluation, reflection) and usage as their sum: a preset task's usage was spent by
        // an earlier pass and is in that pass's calls.
        result.calls = all.clone();
        let mut usage = planwave_record::Usage::default();
        for c in &result.calls {
            usage += c.usage();
        }
        result.stats.usage = usage;
        result.stats.cost = self
            .setup
            .config
            .prices
            .estimate(result.calls.iter().map(|c| (c.model.as_str(), c.usage())));
        self.round_dir(round)?.write_run(result)?;
        Ok(())
    }

    fn save(&mut self, round: u32, name: &str, value: &serde_json::Value) -> crate::Result<()> {
        Ok(self.round_dir(round)?.write_json(name, value)?)
    }

    fn event(&mut self, round: u32, kind: EventKind) {
        let event = Event::now(kind);
        if let Some(s) = &self.setup.stream {
            s.emit(&event);
        }
        // Appended to the round's journal (which `resume` reads past: it only acts on the
        // run's own lines); a failure to record costs the record, never the loop.
        let written = self.round_dir(round).and_then(|out| {
            let journal = open_journal(&out, "events.jsonl", self.setup.run_id)?;
            journal.emit(&event);
            journal.close().context("writing a loop event")
        });
        if let Err(e) = written {
            self.setup.notes.note(&format!(
                "warning: round {round}: loop event not journaled: {e}"
            ));
        }
    }

    fn progress(&mut self, line: &str) {
        if !self.setup.quiet {
            self.setup.notes.note(line);
        }
    }

    fn warn(&mut self, line: &str) {
        self.setup.notes.note(line);
    }
}
