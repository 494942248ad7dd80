//! A round whose tasks start while its plan is still streaming in (LLMCompiler-style; on by
//! default for `research`, off with `--no-stream-plan`). The planner's first answer is read
//! as it arrives ([`TaskStream`]); each complete task object is offered to an [`Admission`],
//! and every time the admitted set grows the plan so far goes to the engine, which starts
//! what has its prerequisites done. When planning ends (after any repair) the whole plan
//! closes the run: tasks it keeps unchanged keep their work, the rest run from it. So the
//! round's planning and its first execution happen here together; `execute` then hands out
//! the result.

use planwave_engine::RunRequest;
use std::sync::Arc;

use planwave_engine::{Admission, PlanFeed, RunConfig};
use planwave_llm::{DeltaSink, StreamEvent};
use planwave_orchestrator::{Planned, StopReason};
use planwave_plan::{TaskStream, ValidatedPlan};
use planwave_planner::{PlanOutcome, Planner};
use planwave_record::{Event, EventKind, PlanSource, RoundTag, RunResult};
use planwave_storage::{Journal, JsonlSink};
use tokio::sync::{mpsc, oneshot};

use crate::error::Context;
use crate::execute::{DeferredView, execute_plan_streaming};
use crate::planning::{planner_for, run_planner};
use crate::rounds::RoundsDriver;
use crate::{Execution, PlanRequest, RunnerError, execute_plan, open_journal};

/// A piece of the streamed answer.
enum Piece {
    Text(String),
    /// The provider retries the call from the start: what came so far is void.
    Restart,
}

/// The planner's streamed answer to the plans fed to the engine.
struct Feeder<'p> {
    planner: &'p Planner,
    goal: &'p str,
    stream: TaskStream,
    admission: Admission,
    /// Streamed pieces received (a piece is about a token).
    pieces: usize,
    fed: usize,
    journal: Arc<Journal>,
    live: Option<Arc<JsonlSink>>,
}

impl Feeder<'_> {
    fn emit(&self, kind: EventKind) {
        let event = Event::now(kind);
        if let Some(s) = &self.live {
            planwave_record::EventSink::emit(s.as_ref(), &event);
        }
        self.journal.append(event, None);
    }

    /// The plan so far when `piece` made it grow.
    fn piece(&mut self, piece: Piece) -> Option<ValidatedPlan> {
        let text = match piece {
            Piece::Text(t) => t,
            Piece::Restart => {
                // Tasks already admitted stay; the final plan decides what they are worth.
                self.stream = TaskStream::new();
                return None;
            }
        };
        self.pieces += 1;
        let mut grew = false;
        for t in self.stream.push(&text) {
            self.emit(EventKind::PlanTaskReceived {
                task: t.task.id.clone(),
                token: self.pieces,
                chars: t.at_char,
            });
            grew |= !self.admission.offer(t.task).is_empty();
        }
        if !grew {
            return None;
        }
        let plan = self.planner.provisional(
            self.stream.header().as_deref(),
            self.stream.format().unwrap_or_default(),
            self.admission.tasks().to_vec(),
            self.goal,
        )?;
        (plan.len() > self.fed).then(|| {
            self.fed = plan.len();
            plan
        })
    }
}

/// Where the plans go: the first one decides how the engine runs (streaming, or a plain run
/// when the whole plan is the first thing known).
struct Outlet {
    first: Option<oneshot::Sender<PlanFeed>>,
    rest: mpsc::UnboundedSender<PlanFeed>,
}

impl Outlet {
    fn send(&mut self, feed: PlanFeed) {
        match self.first.take() {
            Some(tx) => {
                let _ = tx.send(feed);
            }
            None => {
                let _ = self.rest.send(feed);
            }
        }
    }

    /// Whether the engine already runs a plan that grows.
    fn streaming(&self) -> bool {
        self.first.is_none()
    }
}

/// `plan_completed`'s validity and problems: the first answer's.
fn first_verdict(outcome: &PlanOutcome) -> (bool, Vec<String>) {
    match outcome.attempts.first() {
        Some(a) => (
            a.valid && outcome.plan.is_some(),
            a.error
                .clone()
                .map(|e| vec![e])
                .unwrap_or_else(|| a.problems.clone()),
        ),
        None => (outcome.plan.is_some(), Vec::new()),
    }
}

/// Runs the planner while feeding the engine the plan so far from its streamed pieces; at
/// the end the whole plan closes the feed (`opened` is told first, and whether the engine
/// was already running a streamed plan). Dropping the outlet without a close stops whatever
/// started.
async fn plan_and_feed<F>(
    planner: F,
    pieces: &mut mpsc::UnboundedReceiver<Piece>,
    feeder: &mut Feeder<'_>,
    mut outlet: Outlet,
    opened: impl FnOnce(&Arc<ValidatedPlan>, bool),
) -> crate::Result<Option<PlanOutcome>>
where
    F: std::future::Future<Output = crate::Result<Option<PlanOutcome>>>,
{
    tokio::pin!(planner);
    let planned = loop {
        tokio::select! {
            biased;
            Some(p) = pieces.recv() => {
                if let Some(plan) = feeder.piece(p) {
                    outlet.send(PlanFeed::Grow(Arc::new(plan)));
                }
            }
            r = &mut planner => break r,
        }
    };
    // What arrived with the answer's end.
    while let Ok(p) = pieces.try_recv() {
        if let Some(plan) = feeder.piece(p) {
            outlet.send(PlanFeed::Grow(Arc::new(plan)));
        }
    }
    if let Ok(Some(outcome)) = &planned
        && let Some(plan) = &outcome.plan
    {
        let plan = Arc::new(plan.clone());
        opened(&plan, outlet.streaming());
        let (valid, problems) = first_verdict(outcome);
        outlet.send(PlanFeed::Close {
            plan,
            valid,
            problems,
        });
    }
    planned
}

/// `plan_completed` for a plan whole before any task could start.
fn completed_at_once(
    events: &Journal,
    live: Option<&JsonlSink>,
    plan: &ValidatedPlan,
    valid: bool,
    problems: Vec<String>,
) {
    let event = Event::now(EventKind::PlanCompleted {
        valid,
        problems,
        tasks: plan.len(),
        kept: Vec::new(),
        cancelled: Vec::new(),
        discarded: Vec::new(),
    });
    if let Some(l) = live {
        planwave_record::EventSink::emit(l, &event);
    }
    events.append(event, None);
}

impl RoundsDriver<'_> {
    /// Plans round `tag` with its answer streamed, executing tasks as they become eligible.
    pub(crate) async fn plan_streaming(
        &mut self,
        tag: RoundTag,
        note: Option<&str>,
    ) -> crate::Result<Planned<RunnerError>> {
        let out = self.round_dir(tag.round)?;
        let dir = Self::planner_dir(tag);
        std::fs::create_dir_all(out.root().join(&dir))
            .with_context(|| format!("creating {}", out.root().join(&dir).display()))?;
        let events = open_journal(&out, "events.jsonl", self.setup.run_id)?;
        self.sources.insert(tag.round, PlanSource::Planner);
        let (pieces_tx, mut pieces) = mpsc::unbounded_channel();
        let sink = DeltaSink::new(move |e| {
            let _ = pieces_tx.send(match e {
                StreamEvent::Delta(t) => Piece::Text(t.to_owned()),
                StreamEvent::Restart => Piece::Restart,
            });
        });
        let mut write_errors: Vec<String> = Vec::new();
        let (planned, executed) = {
            let mut record = self.attempt_recorder(&out, &dir, &events, &mut write_errors);
            let s = &self.setup;
            let req = PlanRequest {
                goal: &s.goal,
                reflection: note,
                failed_tools: &[],
                resources: &s.resources,
                config: s.planner.clone(),
                quiet: s.quiet,
                cancel: &s.cancel,
                notes: s.notes,
            };
            let planner = planner_for(&req)?.with_stream(sink);
            let view = DeferredView::new();
            let (first_tx, first_rx) = oneshot::channel();
            let (rest_tx, rest_rx) = mpsc::unbounded_channel();
            let outlet = Outlet {
                first: Some(first_tx),
                rest: rest_tx,
            };
            let mut feeder = Feeder {
                planner: &planner,
                goal: &s.goal,
                stream: TaskStream::new(),
                admission: Admission::new(),
                pieces: 0,
                fed: 0,
                journal: events.clone(),
                live: s.stream.clone(),
            };
            let planning = plan_and_feed(
                run_planner(&planner, &req, &mut record),
                &mut pieces,
                &mut feeder,
                outlet,
                |plan: &Arc<ValidatedPlan>, streaming: bool| {
                    if streaming {
                        view.open(s.watch.open(plan));
                    }
                    if s.root_span {
                        crate::record_run(&s.run_id, plan);
                    }
                },
            );
            let execution = |plan| self.streamed_execution(tag, &out, &events, plan);
            let engine = async {
                match first_rx.await {
                    Err(_) => Ok(None),
                    Ok(PlanFeed::Grow(plan)) => {
                        execute_plan_streaming(execution(plan), rest_rx, view.clone()).await
                    }
                    Ok(PlanFeed::Close {
                        plan,
                        valid,
                        problems,
                    }) => {
                        // Nothing could start before the whole plan was known: a plain run.
                        completed_at_once(&events, s.stream.as_deref(), &plan, valid, problems);
                        execute_plan(execution(plan), s.watch).await.map(Some)
                    }
                }
            };
            tokio::join!(planning, engine)
        };
        let _ = events.close();
        for e in &write_errors {
            self.setup.notes.note(&format!("warning: {e}"));
        }
        self.settle(tag, (&out, &dir), planned, executed)
    }

    /// An execution of round `tag`'s first pass.
    fn streamed_execution(
        &self,
        tag: RoundTag,
        out: &planwave_storage::RunDir,
        events: &Arc<Journal>,
        plan: Arc<ValidatedPlan>,
    ) -> Execution {
        let s = &self.setup;
        Execution {
            run: RunRequest {
                run_id: s.run_id,
                config: RunConfig {
                    round: Some(tag),
                    plan_source: Some(PlanSource::Planner),
                    ..s.config.clone()
                },
                deadline: s
                    .deadline
                    .map(|d| d.saturating_duration_since(std::time::Instant::now())),
                slots: s.slots.clone(),
                cancel: s.cancel.child_token(),
                ..s.resources.request(plan, out, events)
            },
            resources: s.resources.clone(),
            stream: s.stream.clone(),
            root_span: s.root_span,
        }
    }

    /// What planning and the execution it started mean for the loop.
    fn settle(
        &mut self,
        tag: RoundTag,
        (out, dir): (&planwave_storage::RunDir, &str),
        planned: crate::Result<Option<PlanOutcome>>,
        executed: crate::Result<Option<RunResult>>,
    ) -> crate::Result<Planned<RunnerError>> {
        let outcome = match planned {
            Ok(Some(o)) => o,
            Ok(None) => {
                self.setup.notes.note("interrupted while planning");
                return Ok(Planned::Stop(StopReason::Interrupted));
            }
            Err(e) => return Ok(Planned::Failed(e)),
        };
        self.keep_attempts(tag, out, dir, &outcome.attempts)?;
        let plan = match outcome.into_plan() {
            Ok(plan) => plan,
            Err(e) => return Ok(Planned::Failed(e.into())),
        };
        // Cancelled before the plan closed: `execute` runs it as usual (and stops at once).
        if let Some(result) = executed? {
            self.streamed.insert(tag, result);
        }
        Ok(Planned::Plan(Box::new(plan)))
    }

    /// The execution [`RoundsDriver::plan_streaming`] already did for `tag`.
    pub(crate) fn take_streamed(&mut self, tag: RoundTag) -> Option<RunResult> {
        self.streamed.remove(&tag)
    }
}
