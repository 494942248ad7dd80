use planwave_plan::{PlanSpec, TaskSpec, ValidatedPlan};
use planwave_sim::{Latency, SimConfig, SimProvider};

use super::settle::HELD_SECTIONS;
use super::*;
use crate::run::{RunRequest, execute};

/// A plan of `tasks` under `topic`.
fn plan_of(topic: &str, tasks: Vec<TaskSpec>) -> Arc<ValidatedPlan> {
    Arc::new(
        ValidatedPlan::new(PlanSpec {
            topic: topic.into(),
            tasks,
            ..PlanSpec::default()
        })
        .expect("valid"),
    )
}

/// The simulator at zero latency.
fn instant_sim() -> SimProvider {
    SimProvider::new(SimConfig {
        latency: Latency::from_mean(0.0, 0.0),
        ..SimConfig::default()
    })
}

/// More completions than one batch of held sections (two full batches and a part): the
/// integrator still gets every section, so the report has each one whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_has_every_section_when_they_reach_the_integrator_in_batches() {
    let n = 2 * HELD_SECTIONS + 37;
    let tasks = (0..n)
        .map(|i| TaskSpec::new(format!("t{i}").as_str(), format!("topic part {i}"), vec![]))
        .collect();
    let plan = plan_of("batches", tasks);
    let provider = instant_sim();
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

/// Answers like the simulator, except that the tasks named never answer.
struct Stuck {
    sim: SimProvider,
    tasks: Vec<&'static str>,
}

#[async_trait::async_trait]
impl planwave_llm::LlmProvider for Stuck {
    fn info(&self) -> planwave_llm::ProviderInfo {
        self.sim.info()
    }

    async fn chat(
        &self,
        request: planwave_llm::ChatRequest,
    ) -> Result<planwave_llm::ChatResponse, planwave_llm::LlmError> {
        let task = request.context.task_id.clone().unwrap_or_default();
        if self.tasks.contains(&task.as_str()) {
            std::future::pending::<()>().await;
        }
        self.sim.chat(request).await
    }
}

/// Subagents are not linked to the supervisor: one whose actor ends before it settled (here,
/// killed) settles that itself, as its task's failure, so its dependents are blocked, the
/// others finish, and the run ends instead of waiting for a report that never comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_killed_before_it_reported_fails_its_task_and_the_run_ends() {
    // a and b start at once; c needs b. b never answers, so its subagent is still running
    // when the test kills it; a is left alone.
    let plan = plan_of(
        "killed",
        vec![
            TaskSpec::new("a", "first part", vec![]),
            TaskSpec::new("b", "second part", vec![]),
            TaskSpec::new("c", "after b", vec![planwave_plan::TaskId::from("b")]),
        ],
    );
    let provider = Stuck {
        sim: SimProvider::new(SimConfig::default()),
        tasks: vec!["b"],
    };
    let req = RunRequest::in_memory(plan, Arc::new(provider));
    let (shared, _files) = crate::run::start(&req).expect("started");
    let (supervisor, join, done) = crate::run::spawn_supervisor(&shared, None, Vec::new(), false)
        .await
        .expect("supervisor");
    // b's subagent is registered once its dispatch turn has spawned it; a may be done by then.
    while !ractor::call!(supervisor, SupervisorMsg::Kill, 1).expect("reply") {
        tokio::task::yield_now().await;
    }
    // A bound for a hang (the regression this test is for), not a measure of speed.
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(60), done)
        .await
        .expect("the run ends")
        .expect("with an outcome");
    let _ = join.await;
    let status = |i: usize| outcome.records[i].status;
    assert_eq!(status(0), TaskStatus::Completed);
    assert_eq!(status(1), TaskStatus::Failed);
    assert_eq!(
        outcome.records[1].error.as_deref(),
        Some("subagent actor ended before reporting")
    );
    assert_eq!(status(2), TaskStatus::Blocked);
    assert!(outcome.sections[0].is_some() && outcome.sections[1].is_none());
}

/// A chain at zero latency runs on the worker it started on: each step's subagent is
/// started by the one before, and tokio is never made to wake the other worker for it
/// (`handoff`). Without that, every fourth or fifth step parked and unparked a worker.
#[test]
fn a_chain_does_not_wake_the_other_worker_at_each_few_steps() {
    let n = 1000;
    let tasks = (0..n)
        .map(|i| {
            let deps = if i == 0 {
                vec![]
            } else {
                vec![format!("t{}", i - 1).as_str().into()]
            };
            TaskSpec::new(format!("t{i}").as_str(), format!("step {i}"), deps)
        })
        .collect();
    let plan = plan_of("a chain", tasks);
    let provider = instant_sim();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let metrics = rt.metrics();
    let parks = || {
        (0..2)
            .map(|w| metrics.worker_park_unpark_count(w))
            .sum::<u64>()
    };
    let before = parks();
    let result = rt
        .block_on(execute(RunRequest::in_memory(plan, Arc::new(provider))))
        .expect("ran");
    let during = parks() - before;
    assert_eq!(result.stats.completed, n);
    // The run's own start and end wake a worker a handful of times; a step that handed
    // its successor to the other worker would do it ~500 times (each park and unpark counts).
    assert!(
        during < (n / 10) as u64,
        "{during} parks and unparks over a {n}-step chain"
    );
}

/// A task with this description makes the engine's own settling of its report panic.
pub(super) const PANIC_WHILE_SETTLING: &str = "panic while settling";

/// A panic in the run's own bookkeeping (settling a report, on a subagent's task, with the
/// run's state locked and half updated) abandons the run: the caller hears the supervisor was
/// lost, as when the supervisor itself panics, rather than waiting for an end that the broken
/// state may never reach, or trusting records it left half written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_while_settling_abandons_the_run_and_the_caller_hears_so() {
    let plan = plan_of(
        "crash",
        vec![
            TaskSpec::new("a", "first part", vec![]),
            TaskSpec::new("b", PANIC_WHILE_SETTLING, vec![]),
            TaskSpec::new("c", "after b", vec![planwave_plan::TaskId::from("b")]),
        ],
    );
    let provider = instant_sim();
    // A bound for a hang (what an unhandled panic here would be), not a measure of speed.
    let result = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        execute(RunRequest::in_memory(plan, Arc::new(provider))),
    )
    .await
    .expect("the run ends");
    match result {
        Err(crate::EngineError::Lost(what)) => assert_eq!(what, "supervisor"),
        Err(e) => panic!("another error: {e}"),
        Ok(r) => panic!("the run finished: {:?}", r.status),
    }
}
