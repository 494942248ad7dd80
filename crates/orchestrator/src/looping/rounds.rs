//! The loop's caller: what it does for the loop ([`Rounds`]: planning and execution, files
//! and progress) and what it lends it ([`LoopContext`]: goal, policy, model, limits).

use std::sync::Arc;

use planwave_llm::{LlmProvider, ToolResultRef};
use planwave_plan::ValidatedPlan;
use planwave_prompts::{PromptError, Templates};
use planwave_record::{CallRecord, EventKind, Preset, RoundTag, RunResult};
use tokio_util::sync::CancellationToken;

use crate::policy::{LoopPolicy, StopReason};

#[derive(Debug, thiserror::Error)]
pub enum LoopError<E> {
    #[error(transparent)]
    Prompt(#[from] PromptError),
    #[error("{0}")]
    Driver(E),
}

/// How planning a round went.
pub enum Planned<E> {
    Plan(Box<ValidatedPlan>),
    /// No plan: the loop stops for this reason (interrupted while planning).
    Stop(StopReason),
    /// No plan could be made (no valid plan, the model unavailable): what that means for
    /// the loop is its own rule (`planning_failed`).
    Failed(E),
}

/// What the caller does for the loop: planning and running, with files and progress.
#[async_trait::async_trait]
pub trait Rounds: Send {
    type Error: Send + std::fmt::Display;
    /// A fresh plan for `tag.round` (pass > 1: a complete replan inside the round). `note`
    /// is the previous round's reflection summary, or why the round's plan failed.
    async fn plan(
        &mut self,
        tag: RoundTag,
        note: Option<&str>,
    ) -> Result<Planned<Self::Error>, Self::Error>;
    /// A complete replan inside a round: [`Rounds::plan`] told why the round's plan failed
    /// (`note`) and what each failed step's tool answered (`failed`: its error), which the
    /// planner's request context carries as a model reads it in the note. By default the
    /// note alone.
    async fn replan(
        &mut self,
        tag: RoundTag,
        note: &str,
        failed: &[ToolResultRef],
    ) -> Result<Planned<Self::Error>, Self::Error> {
        let _ = failed;
        self.plan(tag, Some(note)).await
    }
    /// Runs `plan` in the round's directory; `preset` tasks are already done. `fresh`: the
    /// round's earlier sections belong to a discarded plan.
    async fn execute(
        &mut self,
        tag: RoundTag,
        plan: Arc<ValidatedPlan>,
        preset: Vec<Preset>,
        fresh: bool,
    ) -> Result<RunResult, Self::Error>;
    /// Writes `rounds/<round>/<name>`.
    fn save(
        &mut self,
        round: u32,
        name: &str,
        value: &serde_json::Value,
    ) -> Result<(), Self::Error>;
    /// Model calls the loop made for a round (evaluator, reflector, replanner): they join
    /// the round's `calls[]`; with `result` (the round's run record), that is written
    /// again with them.
    fn add_calls(
        &mut self,
        round: u32,
        calls: Vec<CallRecord>,
        result: Option<&mut RunResult>,
    ) -> Result<(), Self::Error>;
    /// A loop event (`round_started`, `recovery`, `evaluation`, `reflection`,
    /// `round_finished`) for round `round`'s journal and the live stream; best effort.
    fn event(&mut self, round: u32, kind: EventKind);
    /// A progress line.
    fn progress(&mut self, line: &str);
    /// A line the person must see even when progress is quiet.
    fn warn(&mut self, line: &str);
}

pub struct LoopContext {
    pub goal: String,
    pub policy: LoopPolicy,
    pub provider: Arc<dyn LlmProvider>,
    pub templates: Arc<Templates>,
    /// The tools steps may call, with their input schemas: a step plan's partial replan
    /// shows them to the replanner and checks its steps against them.
    pub tools: Vec<planwave_prompts::PlannerTool>,
    /// Attempts per evaluation, reflection or replacement, repairs included.
    pub answer_attempts: u32,
    /// The most tasks a plan may have once a replacement is merged in (`--max-tasks`); a
    /// given plan larger than that may keep its size.
    pub task_limit: usize,
    /// Ctrl-C: ends the loop between phases and cuts short a pending evaluation, reflection
    /// or replacement (planning and execution watch for it themselves).
    pub interrupt: CancellationToken,
    /// When the loop's time is up (`task_timeout_secs`, `--deadline`): no round starts after
    /// it, and an execution the driver cuts short for it ends the loop as `timeout`.
    pub deadline: Option<std::time::Instant>,
}

impl LoopContext {
    pub(super) fn timed_out(&self) -> bool {
        self.deadline
            .is_some_and(|d| std::time::Instant::now() >= d)
    }

    /// Why a round that ended cancelled stopped: Ctrl-C, else the loop's time limit.
    pub(super) fn cut_short(&self) -> StopReason {
        if self.interrupt.is_cancelled() || !self.timed_out() {
            StopReason::Interrupted
        } else {
            StopReason::Timeout
        }
    }
}
