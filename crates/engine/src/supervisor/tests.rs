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

/// The supervisor of a run of a, b and c (c needs b), where b's model never answers, and
/// the actor of b's subagent once it is linked.
async fn run_with_b_stuck() -> (
    ActorRef<SupervisorMsg>,
    ractor::concurrency::JoinHandle<()>,
    oneshot::Receiver<SupervisorOutcome>,
    ActorCell,
) {
    let plan = plan_of(
        "stuck",
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
    // b's subagent is linked once the supervisor's first dispatch turn has spawned it.
    let child = loop {
        if let Some(cell) = ractor::call!(supervisor, SupervisorMsg::Child, 1).expect("reply") {
            break cell;
        }
        tokio::task::yield_now().await;
    };
    (supervisor, join, done, child)
}

/// The outcome of a run started by [`run_with_b_stuck`], asserting that b failed with
/// `error` and c was blocked by it while a completed.
async fn assert_b_failed(
    join: ractor::concurrency::JoinHandle<()>,
    done: oneshot::Receiver<SupervisorOutcome>,
    error: &str,
) {
    // A bound for a hang (the regression this is for), not a measure of speed.
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(60), done)
        .await
        .expect("the run ends")
        .expect("with an outcome");
    let _ = join.await;
    let status = |i: usize| outcome.records[i].status;
    assert_eq!(status(0), TaskStatus::Completed);
    assert_eq!(status(1), TaskStatus::Failed);
    assert_eq!(outcome.records[1].error.as_deref(), Some(error));
    assert_eq!(
        outcome.records[1].failure_kind,
        Some(planwave_record::FailureKind::Crashed)
    );
    assert_eq!(status(2), TaskStatus::Blocked);
    assert!(outcome.sections[0].is_some() && outcome.sections[1].is_none());
}

/// A subagent killed before it reported reaches the supervisor as a supervision event
/// (`ActorTerminated`, reason `killed`): its task fails, its dependents are blocked, the
/// others finish, and the run ends instead of waiting for a report that never comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_killed_before_it_reported_fails_its_task_and_the_run_ends() {
    let (_supervisor, join, done, child) = run_with_b_stuck().await;
    child.kill();
    assert_b_failed(join, done, "subagent actor ended before reporting: killed").await;
}

/// A subagent stopped from outside (not by the supervisor) while its model call is in
/// flight: the stop takes effect at once (the work runs beside the actor, which stays
/// responsive), and the supervisor fails the task with the stop's reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_stopped_from_outside_fails_its_task_with_the_reason_and_the_run_ends() {
    let (_supervisor, join, done, child) = run_with_b_stuck().await;
    child.stop(Some("stopped by an operator".into()));
    assert_b_failed(
        join,
        done,
        "subagent actor ended before reporting: stopped by an operator",
    )
    .await;
}

/// A subagent whose work panics fails its actor; ractor hands the panic's message to the
/// supervisor's `handle_supervisor_evt` as `ActorFailed`, the only place that writes a
/// `subagent panicked: ...` error, and the task fails with it while its dependent is
/// blocked and the rest of the run goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_panic_arrives_through_the_supervision_event_as_a_failed_task() {
    let plan = plan_of(
        "panic",
        vec![
            TaskSpec::new("a", "first part", vec![]),
            TaskSpec::new("b", "second part", vec![]),
            TaskSpec::new("c", "after b", vec![planwave_plan::TaskId::from("b")]),
            TaskSpec::new("d", "after a", vec![planwave_plan::TaskId::from("a")]),
        ],
    );
    let provider = SimProvider::new(SimConfig {
        latency: Latency::from_mean(0.0, 0.0),
        panic: ["b".to_owned()].into_iter().collect(),
        ..SimConfig::default()
    });
    let result = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        execute(RunRequest::in_memory(plan, Arc::new(provider))),
    )
    .await
    .expect("the run ends")
    .expect("ran");
    let rec = |id: &str| {
        result
            .tasks
            .iter()
            .find(|t| t.id.to_string() == id)
            .expect("a record")
    };
    assert_eq!(rec("b").status, TaskStatus::Failed);
    assert_eq!(
        rec("b").error.as_deref(),
        Some("subagent panicked: simulated panic in task b")
    );
    assert_eq!(
        rec("b").failure_kind,
        Some(planwave_record::FailureKind::Crashed)
    );
    assert_eq!(rec("c").status, TaskStatus::Blocked);
    assert_eq!(rec("a").status, TaskStatus::Completed);
    assert_eq!(rec("d").status, TaskStatus::Completed);
}

/// A task with this description makes the engine's own settling of its report panic.
pub(super) const PANIC_WHILE_SETTLING: &str = "panic while settling";

/// A panic in the run's own bookkeeping (settling a report, in the supervisor, its state
/// half updated) abandons the run: the caller hears the supervisor was
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

/// Keeps every event.
#[derive(Default)]
struct Kept(std::sync::Mutex<Vec<planwave_record::Event>>);

impl planwave_record::EventSink for Kept {
    fn emit(&self, event: &planwave_record::Event) {
        self.0.lock().expect("kept").push(event.clone());
    }
}

/// Every start says how long its task waited since `task_ready` (the fleet's dispatch
/// latency is read from it), the tasks ready at the beginning and those a completion
/// released alike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_task_started_carries_its_wait_since_ready() {
    let tasks = vec![
        TaskSpec::new("a", "first", vec![]),
        TaskSpec::new("b", "second", vec![]),
        TaskSpec::new("c", "after both", vec!["a".into(), "b".into()]),
    ];
    let kept = Arc::new(Kept::default());
    let result = execute(RunRequest {
        sink: kept.clone(),
        ..RunRequest::in_memory(plan_of("waits", tasks), Arc::new(instant_sim()))
    })
    .await
    .expect("ran");
    assert_eq!(result.stats.completed, 3);
    let events = kept.0.lock().expect("kept");
    let starts: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            planwave_record::EventKind::TaskStarted { task, waited, .. } => {
                Some((task.to_string(), *waited))
            }
            _ => None,
        })
        .collect();
    assert_eq!(starts.len(), 3, "{starts:?}");
    assert!(starts.iter().all(|(_, w)| w.is_some()), "{starts:?}");
}
