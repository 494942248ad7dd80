//! The loop against the real engine (in memory) and the simulator, with a driver that keeps
//! everything in memory: the early stops the binary tests do not reach.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use planwave_engine::{RunConfig, RunRequest, execute};
use planwave_plan::plan_from_value;
use planwave_sim::{SimConfig, SimProvider};
use tokio_util::sync::CancellationToken;

use planwave_llm::{AgentRole, ChatRequest, ChatResponse, LlmError, LlmProvider};
use planwave_plan::{Lang, ValidatedPlan};
use planwave_prompts::Templates;
use planwave_record::{CallRecord, Preset, ProviderInfo, RoundTag, RunResult, RunStatus};

use super::*;
use crate::policy::{LoopPolicy, StopReason};

/// A model that never answers the evaluator; the user presses Ctrl-C meanwhile.
struct Stuck {
    inner: SimProvider,
    interrupt: CancellationToken,
}

#[async_trait]
impl LlmProvider for Stuck {
    fn info(&self) -> ProviderInfo {
        self.inner.info()
    }
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        if request.role == AgentRole::Evaluator {
            self.interrupt.cancel();
            std::future::pending::<()>().await;
        }
        self.inner.chat(request).await
    }
}

/// The simulator, except that `role` always gets prose.
struct Mute {
    inner: SimProvider,
    role: AgentRole,
}

#[async_trait]
impl LlmProvider for Mute {
    fn info(&self) -> ProviderInfo {
        self.inner.info()
    }
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        let role = request.role;
        let mut r = self.inner.chat(request).await?;
        if role == self.role {
            r.content = "I would rather not say.".into();
        }
        Ok(r)
    }
}

#[derive(Default)]
struct Memory {
    provider: Option<Arc<dyn LlmProvider>>,
    /// Rounds whose planning fails.
    fail_planning: Vec<u32>,
    saved: HashMap<(u32, String), serde_json::Value>,
    notes: Vec<Option<String>>,
}

#[async_trait]
impl Rounds for Memory {
    type Error = String;
    async fn plan(&mut self, tag: RoundTag, note: Option<&str>) -> Result<Planned<String>, String> {
        self.notes.push(note.map(str::to_owned));
        if self.fail_planning.contains(&tag.round) {
            return Ok(Planned::Stop(StopReason::PlanningFailed));
        }
        let spec = plan_from_value(planwave_sim::plan::plan("Tesla", Lang::En))
            .map_err(|e| e.to_string())?;
        Ok(Planned::Plan(Box::new(
            ValidatedPlan::new(spec).map_err(|e| e.to_string())?,
        )))
    }
    async fn execute(
        &mut self,
        tag: RoundTag,
        plan: Arc<ValidatedPlan>,
        preset: Vec<Preset>,
        _fresh: bool,
    ) -> Result<RunResult, String> {
        let provider = self.provider.clone().ok_or("no provider")?;
        execute(RunRequest {
            run_id: uuid::Uuid::nil(),
            config: RunConfig {
                round: Some(tag),
                ..RunConfig::default()
            },
            preset,
            ..RunRequest::in_memory(plan, provider)
        })
        .await
        .map_err(|e| e.to_string())
    }
    fn save(&mut self, round: u32, name: &str, value: &serde_json::Value) -> Result<(), String> {
        self.saved.insert((round, name.to_owned()), value.clone());
        Ok(())
    }
    fn add_calls(
        &mut self,
        _round: u32,
        _calls: Vec<CallRecord>,
        _result: Option<&mut RunResult>,
    ) -> Result<(), String> {
        Ok(())
    }
    fn event(&mut self, _round: u32, _kind: planwave_record::EventKind) {}
    fn progress(&mut self, _line: &str) {}
    fn warn(&mut self, _line: &str) {}
}

fn context(provider: Arc<dyn LlmProvider>) -> LoopContext {
    LoopContext {
        tools: Vec::new(),
        goal: "Deep analysis of Tesla".into(),
        policy: LoopPolicy {
            max_rounds: 3,
            success_threshold: 80.0,
            max_consecutive_failures: 3,
            max_step_retries: 1,
            max_task_replanning_attempts: 1,
            auto_reflection: true,
            step_reflection: false,
            timeout: None,
        },
        provider,
        templates: Arc::new(Templates::builtin()),
        answer_attempts: 2,
        task_limit: 1000,
        interrupt: CancellationToken::new(),
        deadline: None,
    }
}

fn sim(scores: Vec<f64>) -> SimProvider {
    SimProvider::new(SimConfig {
        reflect: planwave_sim::ReflectScript {
            scores,
            ..Default::default()
        },
        ..SimConfig::default()
    })
}

#[tokio::test]
async fn an_evaluator_that_never_answers_in_json_ends_the_loop_keeping_the_round() {
    let provider: Arc<dyn LlmProvider> = Arc::new(Mute {
        inner: sim(vec![]),
        role: AgentRole::Evaluator,
    });
    let mut d = Memory {
        provider: Some(provider.clone()),
        ..Default::default()
    };
    let out = run_loop(&context(provider), &mut d).await.expect("loop");
    assert_eq!(out.stop_reason, StopReason::EvaluationFailed);
    assert_eq!(out.rounds.len(), 1);
    assert_eq!(out.best_round, Some(1), "an unevaluated round still stands");
    let saved = &d.saved[&(1, "evaluation.json".to_owned())];
    assert_eq!(saved["attempts"].as_array().map(Vec::len), Some(2));
    assert!(saved["evaluation"].is_null());
}

#[tokio::test]
async fn a_reflector_that_never_answers_in_json_ends_the_loop() {
    let provider: Arc<dyn LlmProvider> = Arc::new(Mute {
        inner: sim(vec![50.0]),
        role: AgentRole::Reflector,
    });
    let mut d = Memory {
        provider: Some(provider.clone()),
        ..Default::default()
    };
    let out = run_loop(&context(provider), &mut d).await.expect("loop");
    assert_eq!(out.stop_reason, StopReason::ReflectionFailed);
    assert_eq!(out.rounds[0].correctness, Some(50.0));
}

#[tokio::test]
async fn failed_planning_of_a_later_round_keeps_the_rounds_so_far() {
    let provider: Arc<dyn LlmProvider> = Arc::new(sim(vec![50.0, 60.0]));
    let mut d = Memory {
        provider: Some(provider.clone()),
        fail_planning: vec![3],
        ..Default::default()
    };
    let out = run_loop(&context(provider), &mut d).await.expect("loop");
    assert_eq!(out.stop_reason, StopReason::PlanningFailed);
    assert_eq!(out.rounds.len(), 2);
    assert_eq!(out.best_round, Some(2), "60 beats 50");
    // Round 1 planned from the goal alone; rounds 2 and 3 were told the reflection.
    assert_eq!(d.notes[0], None);
    for n in &d.notes[1..] {
        assert!(
            n.as_deref()
                .is_some_and(|n| n.starts_with("Previous evaluation:")),
            "{n:?}"
        );
    }
}

#[tokio::test]
async fn ctrl_c_during_a_pending_evaluation_ends_the_loop_keeping_the_round() {
    let interrupt = CancellationToken::new();
    let provider: Arc<dyn LlmProvider> = Arc::new(Stuck {
        inner: sim(vec![]),
        interrupt: interrupt.clone(),
    });
    let mut d = Memory {
        provider: Some(provider.clone()),
        ..Default::default()
    };
    let cx = LoopContext {
        interrupt,
        ..context(provider)
    };
    let out = run_loop(&cx, &mut d).await.expect("loop");
    assert_eq!(out.stop_reason, StopReason::Interrupted);
    assert_eq!(out.rounds.len(), 1);
    assert_eq!(out.rounds[0].status, RunStatus::Completed);
    assert!(!d.saved.contains_key(&(1, "evaluation.json".to_owned())));
}
