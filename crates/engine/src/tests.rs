//! The run's actors together: how tasks, subagents and the integrator end, through `execute`.

use planwave_plan::{PlanSpec, TaskSpec, ValidatedPlan};
use planwave_sim::{Latency, SimConfig, SimProvider};

use std::time::Instant;

use std::sync::Arc;

use planwave_record::TaskStatus;
use ractor::ActorCell;

use crate::messages::SupervisorMsg;
use crate::run::{RunRequest, execute};
use crate::supervisor::HELD_SECTIONS;

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
    fn info(&self) -> planwave_record::ProviderInfo {
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
async fn run_with_b_stuck() -> (crate::run::Running, ActorCell) {
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
    let shared = crate::run::start(&req).expect("started");
    let run = crate::run::spawn_supervisor(&shared, &req, Vec::new(), false, Instant::now())
        .await
        .expect("supervisor");
    // b's subagent is linked once the supervisor's first dispatch turn has spawned it.
    let child = loop {
        if let Some(cell) = ractor::call!(run.supervisor, SupervisorMsg::Child, 1).expect("reply") {
            break cell;
        }
        tokio::task::yield_now().await;
    };
    (run, child)
}

/// A subagent killed before it reported reaches the supervisor as a supervision event
/// (`ActorTerminated`, reason `killed`): its task fails, its dependents are blocked, the
/// others finish, and the run ends instead of waiting for a report that never comes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subagent_killed_before_it_reported_fails_its_task_and_the_run_ends() {
    let (run, child) = run_with_b_stuck().await;
    child.kill();
    // A bound for a hang (the regression this is for), not a measure of speed.
    let outcome = tokio::time::timeout(std::time::Duration::from_secs(60), run.outcome())
        .await
        .expect("the run ends")
        .expect("with an outcome");
    let status = |i: usize| outcome.records[i].status;
    assert_eq!(status(0), TaskStatus::Completed);
    assert_eq!(status(1), TaskStatus::Failed);
    assert_eq!(
        outcome.records[1].error.as_deref(),
        Some("subagent actor ended before reporting: killed")
    );
    assert_eq!(
        outcome.records[1].failure_kind,
        Some(planwave_record::FailureKind::Crashed)
    );
    assert_eq!(status(2), TaskStatus::Blocked);
    assert!(outcome.sections[0].is_some() && outcome.sections[1].is_none());
    // The report was still written, from what completed.
    assert!(outcome.integration.is_some_and(|i| !i.report.is_empty()));
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
            TaskSpec::new("b", crate::supervisor::PANIC_WHILE_SETTLING, vec![]),
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

/// Hands every event to the test.
struct Tap(tokio::sync::mpsc::UnboundedSender<planwave_record::Event>);

impl planwave_record::EventSink for Tap {
    fn emit(&self, event: &planwave_record::Event) {
        let _ = self.0.send(event.clone());
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
    let (tap, mut tapped) = tokio::sync::mpsc::unbounded_channel();
    let result = execute(RunRequest {
        sink: Arc::new(Tap(tap)),
        ..RunRequest::in_memory(plan_of("waits", tasks), Arc::new(instant_sim()))
    })
    .await
    .expect("ran");
    assert_eq!(result.stats.completed, 3);
    let mut events = Vec::new();
    while let Ok(e) = tapped.try_recv() {
        events.push(e);
    }
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

/// Answers like the simulator, except that the integrator's summary call panics.
struct PanicsSummarizing(SimProvider);

#[async_trait::async_trait]
impl planwave_llm::LlmProvider for PanicsSummarizing {
    fn info(&self) -> planwave_record::ProviderInfo {
        self.0.info()
    }

    async fn chat(
        &self,
        request: planwave_llm::ChatRequest,
    ) -> Result<planwave_llm::ChatResponse, planwave_llm::LlmError> {
        if request.role == planwave_llm::AgentRole::Integrator {
            panic!("injected: summarizing");
        }
        self.0.chat(request).await
    }
}

/// A run of `plan` with a run directory and a journal in `dir`.
fn journaled(
    dir: &std::path::Path,
    plan: Arc<ValidatedPlan>,
    provider: Arc<dyn planwave_llm::LlmProvider>,
) -> RunRequest {
    let journal =
        planwave_storage::Journal::open(&dir.join("events.jsonl"), false).expect("journal");
    RunRequest {
        journal: Some(Arc::new(journal)),
        output: Some(planwave_storage::RunDir::create(dir).expect("run dir")),
        ..RunRequest::in_memory(plan, provider)
    }
}

/// The tasks the journal in `dir` holds as completed, each with its section.
fn journaled_completions(dir: &std::path::Path) -> Vec<String> {
    let replay = planwave_storage::Replay::read(&dir.join("events.jsonl")).expect("replay");
    let mut done: Vec<String> = replay
        .completed
        .values()
        .filter(|c| c.section.as_deref().is_some_and(|s| !s.is_empty()))
        .map(|c| c.task.to_string())
        .collect();
    done.sort();
    done
}

/// The integrator is the supervisor's child: its panic while it writes the summary arrives
/// as a supervision event, and the run ends with an error naming it (not a hang, not a lost
/// supervisor), while every completed task stays in the journal for a resume.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_integrator_panic_ends_the_run_with_its_message_and_keeps_the_journal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tasks = vec![
        TaskSpec::new("a", "first part", vec![]),
        TaskSpec::new("b", "after a", vec!["a".into()]),
    ];
    let provider = Arc::new(PanicsSummarizing(instant_sim()));
    let req = journaled(dir.path(), plan_of("summary panic", tasks), provider);
    // A bound for a hang (what an unsupervised integrator's panic was), not a measure of speed.
    let result = tokio::time::timeout(std::time::Duration::from_secs(60), execute(req))
        .await
        .expect("the run ends");
    match result {
        Err(crate::EngineError::Panicked { actor, message }) => {
            assert_eq!(
                (actor, message.as_str()),
                ("integrator", "injected: summarizing")
            );
        }
        Err(e) => panic!("another error: {e}"),
        Ok(r) => panic!("the run finished: {:?}", r.status),
    }
    assert_eq!(journaled_completions(dir.path()), ["a", "b"]);
}

/// An integrator panic while tasks still run (here on the first batch of sections it is
/// handed, with more tasks to come) stops the run at once: the running subagents are
/// killed, the caller hears the integrator's panic, and what completed is in the journal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_integrator_panic_mid_run_stops_the_run_and_keeps_what_completed() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A full batch of sections reaches the integrator while the chain behind them waits on
    // a slow task.
    let mut tasks: Vec<TaskSpec> = (0..HELD_SECTIONS)
        .map(|i| TaskSpec::new(format!("t{i}").as_str(), format!("part {i}"), vec![]))
        .collect();
    tasks.push(TaskSpec::new("slow", "a slow part", vec![]));
    tasks.push(TaskSpec::new(
        "last",
        "after the slow part",
        vec!["slow".into()],
    ));
    let mut slow = std::collections::HashMap::new();
    slow.insert("slow".to_owned(), std::time::Duration::from_secs(600));
    let provider = SimProvider::new(SimConfig {
        latency: Latency::from_mean(0.0, 0.0),
        latency_overrides: slow,
        ..SimConfig::default()
    });
    let plan = plan_of(crate::integrator::PANIC_ON_SECTION, tasks);
    let req = journaled(dir.path(), plan, Arc::new(provider));
    let result = tokio::time::timeout(std::time::Duration::from_secs(60), execute(req))
        .await
        .expect("the run ends without waiting for the slow task");
    match result {
        Err(crate::EngineError::Panicked { actor, message }) => {
            assert_eq!(actor, "integrator");
            assert!(
                message.starts_with("injected: keeping section"),
                "{message}"
            );
        }
        Err(e) => panic!("another error: {e}"),
        Ok(r) => panic!("the run finished: {:?}", r.status),
    }
    let done = journaled_completions(dir.path());
    assert!(
        done.len() >= HELD_SECTIONS,
        "{} completions journaled",
        done.len()
    );
    assert!(!done.contains(&"slow".to_owned()) && !done.contains(&"last".to_owned()));
}
