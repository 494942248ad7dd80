//! The reflective loop's rounds on disk: `DIR/rounds/<k>/` is a run directory per round
//! (plan, run.json, report, sections, events, planner attempts, evaluation, reflection),
//! and [`RoundsDriver`] plans and executes for `planwave_orchestrator::run_loop`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use planwave_config::Settings;
use planwave_engine::{
    CallRecord, Event, EventKind, EventSink, Journal, JsonlSink, Preset, RunConfig, RunDir,
    RunResult,
};
use planwave_llm::{LlmProvider, RoundTag};
use planwave_orchestrator::{Planned, Rounds, StopReason};
use planwave_plan::ValidatedPlan;
use planwave_planner::PlanAttempt;
use planwave_prompts::Templates;
use serde::Serialize;

use super::planning::{no_plan_error, plan_goal_reflected};
use super::run::{Execution, execute_plan, open_events_at};

/// One line of `planner/attempts.json`.
#[derive(Serialize)]
struct AttemptFile<'a> {
    #[serde(flatten)]
    attempt: &'a PlanAttempt,
    /// The raw model text of this attempt, relative to the round's directory.
    raw_file: Option<String>,
}

pub fn call_record(a: &PlanAttempt) -> CallRecord {
    CallRecord {
        role: "planner".into(),
        task: None,
        model: a.model.clone(),
        attempt: a.attempt,
        started_at: a.started_at,
        duration_ms: a.duration_ms,
        prompt_tokens: a.usage.prompt_tokens,
        completion_tokens: a.usage.completion_tokens,
        reasoning_tokens: a.usage.reasoning_tokens,
        outcome: if a.error.is_some() { "error" } else { "ok" }.into(),
        error: a.error.clone(),
    }
}

pub struct RoundsDriver {
    pub goal: String,
    pub provider: Arc<dyn LlmProvider>,
    pub templates: Arc<Templates>,
    pub settings: Settings,
    pub config: RunConfig,
    pub root: PathBuf,
    pub quiet: bool,
    /// Per round: planner and earlier passes' calls, prepended to the round's `run.json`.
    pub calls: HashMap<u32, Vec<CallRecord>>,
    /// Per round: planning attempts of the plan in use.
    pub attempts: HashMap<u32, usize>,
    /// Journals opened by planning, continued by the same pass's execution.
    pub events: HashMap<RoundTag, Arc<Journal>>,
    /// `--deadline` for the whole loop, not per round.
    pub deadline: Option<std::time::Instant>,
    pub durable: bool,
    /// One run id for the whole loop: every round's journal and the `--events` stream
    /// carry it.
    pub run_id: uuid::Uuid,
    /// The `--events` stream, shared by every round; closed by `research` at the end.
    pub stream: Option<Arc<JsonlSink>>,
    /// MCP tools for the planner's prompt and the subagents, shared by every round.
    pub mcp: Option<Arc<planwave_mcp::McpRegistry>>,
}

impl RoundsDriver {
    pub fn round_dir(&self, round: u32) -> anyhow::Result<RunDir> {
        let path = self.root.join("rounds").join(round.to_string());
        Ok(RunDir::create(&path)
            .with_context(|| format!("preparing {}", path.display()))?
            .with_durable(self.durable))
    }

    fn planner_dir(tag: RoundTag) -> String {
        if tag.pass == 1 {
            "planner".into()
        } else {
            format!("planner-pass-{}", tag.pass)
        }
    }
}

#[async_trait::async_trait]
impl Rounds for RoundsDriver {
    type Error = anyhow::Error;

    async fn plan(&mut self, tag: RoundTag, note: Option<&str>) -> anyhow::Result<Planned> {
        let out = self.round_dir(tag.round)?;
        let dir = Self::planner_dir(tag);
        std::fs::create_dir_all(out.root().join(&dir))
            .with_context(|| format!("creating {}", out.root().join(&dir).display()))?;
        // Planning events open the file the pass's execution continues.
        let events = open_events_at(&out, "events.jsonl", self.run_id)?;
        self.events.insert(tag, events.clone());
        let mut write_errors: Vec<String> = Vec::new();
        let planned = {
            let out = out.clone();
            let events = events.clone();
            let stream = self.stream.clone();
            let errors = &mut write_errors;
            let dir = dir.clone();
            plan_goal_reflected(
                &self.goal,
                note,
                super::mcp::planner_tools(self.mcp.as_deref()),
                self.provider.clone(),
                self.templates.clone(),
                &self.settings,
                self.quiet,
                &mut move |a: &PlanAttempt| {
                    if !a.raw.is_empty()
                        && let Err(e) = out.write(
                            &format!("{dir}/attempt-{}.txt", a.attempt),
                            a.raw.as_bytes(),
                        )
                    {
                        errors.push(e.to_string());
                    }
                    let ev = Event::now(EventKind::LlmCall {
                        task: None,
                        role: "planner".into(),
                        model: a.model.clone(),
                        attempt: a.attempt,
                        duration_ms: a.duration_ms,
                        usage: a.usage,
                        error: a.error.clone(),
                    });
                    events.emit(&ev);
                    if let Some(s) = &stream {
                        s.emit(&ev);
                    }
                },
            )
            .await
        };
        for e in &write_errors {
            eprintln!("warning: {e}");
        }
        let first = tag.round == 1 && tag.pass == 1;
        if !matches!(planned, Ok(Some(ref o)) if o.plan.is_some())
            && let Some(sink) = self.events.remove(&tag)
        {
            let _ = sink.close();
        }
        let outcome = match planned {
            Ok(Some(o)) => o,
            Ok(None) => {
                eprintln!("interrupted while planning");
                return Ok(Planned::Stop(StopReason::Interrupted));
            }
            // The first plan failing is the command failing; later, the rounds so far stand.
            Err(e) if first => return Err(e),
            Err(e) => {
                eprintln!("round {}: planning failed: {e:#}", tag.round);
                return Ok(Planned::Stop(StopReason::PlanningFailed));
            }
        };
        let files: Vec<AttemptFile<'_>> = outcome
            .attempts
            .iter()
            .map(|a| AttemptFile {
                attempt: a,
                raw_file: (!a.raw.is_empty()).then(|| format!("{dir}/attempt-{}.txt", a.attempt)),
            })
            .collect();
        out.write_json(&format!("{dir}/attempts.json"), &files)?;
        for a in &outcome.attempts {
            for w in &a.warnings {
                eprintln!("planner warning: {w}");
            }
        }
        let calls = self.calls.entry(tag.round).or_default();
        calls.extend(outcome.attempts.iter().map(call_record));
        self.attempts.insert(tag.round, outcome.attempts.len());
        match outcome.plan.clone() {
            Some(plan) => Ok(Planned::Plan(Box::new(plan))),
            None if first => Err(no_plan_error(&outcome)),
            None => {
                eprintln!(
                    "round {}: planning failed: {:#}",
                    tag.round,
                    no_plan_error(&outcome)
                );
                Ok(Planned::Stop(StopReason::PlanningFailed))
            }
        }
    }

    async fn execute(
        &mut self,
        tag: RoundTag,
        plan: Arc<ValidatedPlan>,
        preset: Vec<Preset>,
        fresh: bool,
    ) -> anyhow::Result<RunResult> {
        let out = self.round_dir(tag.round)?;
        if fresh && tag.pass > 1 {
            // A complete replan: the discarded plan's sections must not pass for this one's.
            let sections = out.root().join("sections");
            std::fs::remove_dir_all(&sections)
                .and_then(|()| std::fs::create_dir_all(&sections))
                .with_context(|| format!("clearing {}", sections.display()))?;
        }
        let events = match self.events.remove(&tag) {
            Some(sink) => sink,
            // Every pass of a round appends to one journal, so a resume of the round sees
            // every section any pass completed.
            None => open_events_at(&out, "events.jsonl", self.run_id)?,
        };
        let mut result = execute_plan(Execution {
            plan,
            provider: self.provider.clone(),
            prompts: self.templates.clone(),
            config: RunConfig {
                round: Some(tag),
                ..self.config.clone()
            },
            deadline: self
                .deadline
                .map(|d| d.saturating_duration_since(std::time::Instant::now())),
            out: out.clone(),
            events,
            quiet: self.quiet,
            run_id: self.run_id,
            stream: self.stream.clone(),
            preset,
            mcp: self.mcp.clone(),
        })
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
    ) -> anyhow::Result<()> {
        let all = self.calls.entry(round).or_default();
        all.extend(calls);
        let Some(result) = result else {
            return Ok(());
        };
        // The round's run.json has every call the round made (planning, every pass,
        // evaluation, reflection) and usage as their sum: a preset task's usage was spent by
        // an earlier pass and is in that pass's calls.
        result.calls = all.clone();
        let mut usage = planwave_llm::Usage::default();
        for c in &result.calls {
            usage += c.usage();
        }
        result.stats.usage = usage;
        result.stats.cost = self
            .settings
            .run
            .prices
            .estimate(result.calls.iter().map(|c| (c.model.as_str(), c.usage())));
        self.round_dir(round)?.write_run(result)?;
        Ok(())
    }

    fn save(&mut self, round: u32, name: &str, value: &serde_json::Value) -> anyhow::Result<()> {
        Ok(self.round_dir(round)?.write_json(name, value)?)
    }

    fn progress(&mut self, line: &str) {
        if !self.quiet {
            eprintln!("{line}");
        }
    }
}
