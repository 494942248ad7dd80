use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use planwave_llm::{ChatRequest, ChatResponse, LlmError, LlmProvider, MessageRole};
use planwave_plan::Lang;
use planwave_prompts::Templates;
use planwave_record::ProviderInfo;
use planwave_sim::{PlannerFault, SimConfig, SimProvider};

use crate::*;

/// The simulator, with every request it was sent kept for inspection.
struct Recording {
    inner: SimProvider,
    seen: Mutex<Vec<ChatRequest>>,
}

#[async_trait]
impl LlmProvider for Recording {
    fn info(&self) -> ProviderInfo {
        self.inner.info()
    }
    async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
        if let Ok(mut s) = self.seen.lock() {
            s.push(request.clone());
        }
        self.inner.chat(request).await
    }
}

fn sim(faults: Vec<PlannerFault>) -> Arc<Recording> {
    Arc::new(Recording {
        inner: SimProvider::new(SimConfig {
            planner_faults: faults,
            ..SimConfig::default()
        }),
        seen: Mutex::new(Vec::new()),
    })
}

async fn plan_with(
    provider: Arc<dyn LlmProvider>,
    config: PlannerConfig,
    goal: &str,
) -> (PlanOutcome, Vec<u32>) {
    let planner = Planner::new(provider, Arc::new(Templates::builtin()), config);
    let mut seen = Vec::new();
    let out = planner
        .plan(goal, &mut |a: &Attempt| seen.push(a.attempt))
        .await
        .expect("plan");
    (out, seen)
}

#[tokio::test]
async fn a_valid_first_answer_is_taken() {
    let p = sim(vec![]);
    let (out, seen) = plan_with(p.clone(), PlannerConfig::default(), "深度分析特斯拉公司").await;
    let plan = out.plan.clone().expect("valid plan");
    assert_eq!(plan.len(), 5);
    assert_eq!(plan.lang(), Lang::Zh);
    assert_eq!(plan.spec().topic, "特斯拉公司深度分析");
    assert_eq!(seen, vec![1]);
    assert!(out.attempts[0].valid && out.attempts[0].problems.is_empty());
    assert!(out.usage().total() > 0);
    let req = &p.seen.lock().expect("lock")[0];
    assert_eq!(req.messages[0].role, MessageRole::System);
    assert!(
        req.messages[1].content.contains("\"ResearchPlan\""),
        "schema in prompt"
    );
}

#[tokio::test]
async fn truncated_then_cyclic_plans_are_repaired_with_their_problems() {
    let p = sim(vec![PlannerFault::Truncated, PlannerFault::Cycle]);
    let (out, seen) = plan_with(
        p.clone(),
        PlannerConfig::default(),
        "Deep analysis of Tesla",
    )
    .await;
    assert!(out.plan.is_some());
    assert_eq!(seen, vec![1, 2, 3]);
    let a = &out.attempts;
    assert!(
        a[0].problems[0].starts_with("JSON is truncated at line"),
        "{:?}",
        a[0].problems
    );
    assert_eq!(a[1].problems, vec!["cycle: 1 -> 4 -> 5 -> 1".to_string()]);
    assert_eq!(
        (a[0].kind.as_str(), a[1].kind.as_str(), a[2].kind.as_str()),
        ("plan", "repair", "repair")
    );
    // The repair request carries the previous answer and the problems found in it.
    let seen = p.seen.lock().expect("lock");
    let second = &seen[1].messages;
    assert_eq!(second[second.len() - 2].role, MessageRole::Assistant);
    assert_eq!(second[second.len() - 2].content, a[0].raw);
    let ask = &second[second.len() - 1].content;
    assert!(
        ask.contains("(attempt 1)") && ask.contains("JSON is truncated"),
        "{ask}"
    );
    assert_eq!(seen[2].attempt, 3);
}

#[tokio::test]
async fn never_valid_returns_every_attempt_and_no_plan() {
    let p = sim(vec![
        PlannerFault::Truncated,
        PlannerFault::UnknownDependency,
        PlannerFault::Prose,
    ]);
    let (out, _) = plan_with(p, PlannerConfig::default(), "深度分析特斯拉公司").await;
    assert!(out.plan.is_none() && out.fatal.is_none());
    assert_eq!(out.attempts.len(), 3);
    assert_eq!(
        out.attempts[1].problems,
        vec!["task 3: dependency 9 does not match any task".to_string()]
    );
    assert_eq!(
        out.attempts[2].problems,
        vec!["no JSON object found in the input".to_string()]
    );
}

struct Refusing;

#[async_trait]
impl LlmProvider for Refusing {
    fn info(&self) -> ProviderInfo {
        ProviderInfo {
            provider: "test".into(),
            model: "m".into(),
            simulated: false,
            base_url: None,
            response_format: None,
        }
    }
    async fn chat(&self, _r: ChatRequest) -> Result<ChatResponse, LlmError> {
        Err(LlmError::Fatal {
            provider: "test".into(),
            model: "m".into(),
            message: "HTTP 401".into(),
        })
    }
}

#[tokio::test]
async fn a_fatal_model_error_stops_planning_at_once() {
    let (out, seen) = plan_with(Arc::new(Refusing), PlannerConfig::default(), "goal").await;
    assert_eq!(seen, vec![1]);
    assert!(out.plan.is_none());
    assert!(matches!(out.fatal, Some(LlmError::Fatal { .. })));
    assert_eq!(out.attempts[0].error.as_deref(), Some("test (m): HTTP 401"));
}

#[tokio::test]
async fn lang_override_and_task_count_warning() {
    let cfg = PlannerConfig {
        lang: Some(Lang::En),
        max_tasks: 4,
        ..PlannerConfig::default()
    };
    let (out, _) = plan_with(sim(vec![]), cfg, "深度分析特斯拉公司").await;
    assert_eq!(out.lang, Lang::En);
    let plan = out.plan.expect("plan");
    assert_eq!(
        plan.lang(),
        Lang::En,
        "forced even though the subject is Chinese"
    );
    assert_eq!(
        out.attempts[0].warnings,
        vec!["the plan has 5 tasks; 4-4 is the default".to_string()]
    );
}

#[test]
fn the_schema_describes_the_research_format() {
    let s = plan_schema();
    assert_eq!(s["title"], "ResearchPlan");
    let task = plan_schema_text();
    for needle in [
        "\"tasks\"",
        "\"dependencies\"",
        "\"hints\"",
        "\"key_questions\"",
        "\"company\"",
    ] {
        assert!(task.contains(needle), "schema lacks {needle}");
    }
}

#[tokio::test]
async fn a_reflection_goes_into_the_planning_prompt() {
    let p = sim(vec![]);
    let planner = Planner::new(
        p.clone(),
        Arc::new(Templates::builtin()),
        PlannerConfig::default(),
    );
    let out = planner
        .plan_with_reflection(
            "Deep analysis of Tesla",
            Some("Root causes:\n- thin data"),
            &mut |_: &Attempt| {},
        )
        .await
        .expect("plan");
    assert!(out.plan.is_some());
    let seen = p.seen.lock().expect("lock");
    let user = &seen[0].messages[1].content;
    assert!(
        user.contains("# Reflection on the previous round (improve this round's plan accordingly)\nRoot causes:\n- thin data\n"),
        "{user}"
    );
}

#[tokio::test]
async fn metadata_reaches_the_prompt_and_the_plan() {
    let p = sim(vec![]);
    let config = PlannerConfig {
        meta: [("ticker".to_owned(), "TSLA".to_owned())].into(),
        ..PlannerConfig::default()
    };
    let (out, _) = plan_with(p.clone(), config, "Deep analysis of Tesla").await;
    let plan = out.plan.expect("plan");
    assert_eq!(plan.spec().about.meta["ticker"], "TSLA");
    let seen = p.seen.lock().expect("lock");
    let user = &seen[0].messages[1].content;
    assert!(
        user.contains("# Task context (metadata)\n- ticker: TSLA\n"),
        "{user}"
    );
}

#[tokio::test]
async fn a_step_plan_is_asked_for_with_its_own_prompt_and_llm_call_is_accepted() {
    let p = sim(vec![PlannerFault::UnknownDependency]);
    let config = PlannerConfig {
        format: planwave_plan::PlanFormat::Steps,
        ..PlannerConfig::default()
    };
    let (out, attempts) = plan_with(p.clone(), config, "Deep analysis of Tesla").await;
    assert_eq!(attempts, vec![1, 2], "the unknown dependency was repaired");
    let plan = out.plan.expect("plan");
    assert_eq!(plan.spec().format, planwave_plan::PlanFormat::Steps);
    assert!(
        plan.tasks()
            .iter()
            .all(|t| t.tool.as_deref() == Some(planwave_plan::LLM_CALL)),
        "llm_call steps pass the planner's checks"
    );
    let seen = p.seen.lock().expect("lock");
    let first = &seen[0].messages[1].content;
    assert!(first.contains("- llm_call: a direct model call"), "{first}");
    assert!(first.contains("\"title\": \"StepPlan\""), "{first}");
    let repair = &seen[1].messages.last().expect("repair").content;
    assert!(
        repair.starts_with("The execution plan you wrote above (attempt 1)"),
        "{repair}"
    );
}

#[tokio::test]
async fn research_tasks_asked_for_but_steps_without_tools_are_refused() {
    let p = sim(vec![]);
    let planner = Planner::new(
        p,
        Arc::new(Templates::builtin()),
        PlannerConfig {
            format: planwave_plan::PlanFormat::Steps,
            ..PlannerConfig::default()
        },
    );
    let research =
        r#"{"topic": "t", "tasks": [{"id": 1, "description": "a", "dependencies": []}]}"#;
    let problems = planner
        .judge(research, "goal")
        .expect_err("not a step plan");
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("expected an execution plan")),
        "{problems:?}"
    );
    let toolless = r#"{"steps": [{"id": "a", "description": "a", "dependencies": []}]}"#;
    let problems = planner.judge(toolless, "goal").expect_err("no tool");
    assert_eq!(
        problems,
        vec!["step a: no tool; every step names an available tool or llm_call"]
    );
}

/// A plan built from the streamed tasks is the plan the whole answer gives, task for task:
/// what runs while the answer streams is what would have run after it.
#[tokio::test]
async fn the_streamed_plan_so_far_matches_the_whole_answer() {
    for goal in ["Deep analysis of Tesla", "深度分析特斯拉公司"] {
        let (out, _) = plan_with(sim(vec![]), PlannerConfig::default(), goal).await;
        let raw = out.attempts[0].raw.clone();
        let planner = Planner::new(
            sim(vec![]),
            Arc::new(Templates::builtin()),
            PlannerConfig::default(),
        );
        let (whole, _) = planner.judge(&raw, goal).expect("valid");
        let mut stream = planwave_plan::TaskStream::new();
        let mut tasks = Vec::new();
        for c in raw.chars() {
            tasks.extend(stream.push(&c.to_string()).into_iter().map(|t| t.task));
            if tasks.len() == 2 {
                break;
            }
        }
        let so_far = planner
            .provisional(
                stream.header().as_deref(),
                stream.format().unwrap_or_default(),
                tasks,
                goal,
            )
            .expect("a valid plan so far");
        assert_eq!(so_far.spec().topic, whole.spec().topic, "{goal}");
        assert_eq!(so_far.spec().objectives, whole.spec().objectives);
        assert_eq!(so_far.lang(), whole.lang());
        assert_eq!(so_far.tasks(), &whole.tasks()[..2]);
    }
}
