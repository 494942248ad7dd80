//! The integrator actor: keeps every section as it arrives (writing its file at once, so a
//! crash loses nothing finished), then writes the executive summary and the report.

use std::sync::Arc;
use std::time::Instant;

use planwave_llm::{AgentRole, ChatRequest, Usage};
use planwave_record::{EventKind, RunStats, TaskRecord, TaskStatus};
use planwave_report::ReportInput;
use planwave_storage::RunDir;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tracing::Instrument;

use crate::digest;
use crate::shared::RunShared;
use planwave_prompts::{SectionSummary, integrator_context};

pub struct Integrator;

pub enum IntegratorMsg {
    /// A completed section; `write` is false for sections restored from an earlier run.
    Section {
        index: usize,
        text: Arc<str>,
        write: bool,
    },
    /// Completed sections handed over together, as `Section` each (one message, not one
    /// per section: a batch was 256 sends and their channel blocks).
    Sections(Vec<(usize, Arc<str>, bool)>),
    Finish(Box<FinishRequest>, RpcReplyPort<Integration>),
}

pub struct FinishRequest {
    /// Shared, not copied: the run gets them back once the integrator is done.
    pub records: Arc<Vec<TaskRecord>>,
    pub stats: RunStats,
    /// The `integrate` span the summary call and report rendering run in.
    pub span: tracing::Span,
    /// The run was stopped (Ctrl-C, SIGTERM, deadline): no model call starts, the summary
    /// is the plain one (a call would delay the exit by a whole model latency).
    pub stopped: Option<planwave_record::CancelReason>,
    /// The caller's cancellation: a stop that comes during integration lets a call in
    /// flight finish but starts no other (no retry).
    pub cancel: tokio_util::sync::CancellationToken,
}

/// What integration produced.
#[derive(Debug, Clone)]
pub struct Integration {
    pub report: String,
    pub summary_usage: Usage,
    /// Set when the summary could not come from the model (the report says so too).
    pub summary_error: Option<String>,
    /// Files that could not be written, with the reason; the run goes on without them.
    pub write_errors: Vec<String>,
    /// Which sections have a file on disk.
    pub written: Vec<bool>,
}

pub struct IntegratorArgs {
    pub shared: Arc<RunShared>,
    pub output: Option<RunDir>,
    /// `sections/<stem>.md` per task, in plan order.
    /// Empty without an output directory.
    pub section_files: Arc<Vec<String>>,
}

pub struct IntegratorState {
    args: IntegratorArgs,
    sections: Vec<Option<Arc<str>>>,
    written: Vec<bool>,
    write_errors: Vec<String>,
}

impl Actor for Integrator {
    type Msg = IntegratorMsg;
    type State = IntegratorState;
    type Arguments = IntegratorArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<IntegratorMsg>,
        args: IntegratorArgs,
    ) -> Result<IntegratorState, ActorProcessingErr> {
        let n = args.shared.plan.len();
        Ok(IntegratorState {
            args,
            sections: vec![None; n],
            written: vec![false; n],
            write_errors: Vec::new(),
        })
    }

    async fn handle(
        &self,
        _myself: ActorRef<IntegratorMsg>,
        msg: IntegratorMsg,
        state: &mut IntegratorState,
    ) -> Result<(), ActorProcessingErr> {
        match msg {
            IntegratorMsg::Section { index, text, write } => state.section(index, text, write),
            IntegratorMsg::Sections(held) => {
                for (index, text, write) in held {
                    state.section(index, text, write);
                }
            }
            IntegratorMsg::Finish(req, reply) => {
                let span = req.span.clone();
                let result = state.integrate(*req).instrument(span).await;
                let _ = reply.send(result);
            }
        }
        Ok(())
    }
}

impl IntegratorState {
    /// A completed section: kept for the report, its file written when `write` asks.
    fn section(&mut self, index: usize, text: Arc<str>, write: bool) {
        if let (true, Some(out)) = (write, &self.args.output) {
            match out.write(&self.args.section_files[index], text.as_bytes()) {
                Ok(()) => self.written[index] = true,
                Err(e) => self.write_errors.push(e.to_string()),
            }
        } else if !write {
            self.written[index] = self.args.output.is_some();
        }
        self.sections[index] = Some(text);
    }

    async fn integrate(&mut self, req: FinishRequest) -> Integration {
        let shared = self.args.shared.clone();
        let plan = &shared.plan;
        let order = planwave_report::dependency_order(plan);
        let (summary, summary_usage, summary_error) = match req.stopped {
            Some(reason) => self.plain_summary(&req.records, Usage::default(), stopped(reason)),
            None => self.summary(&req.records, &order, &req.cancel).await,
        };
        let placed = planwave_report::place_transitions(&summary, plan);
        let info = shared.provider.info().into();
        let text = planwave_report::render_markdown(&ReportInput {
            plan,
            records: &req.records,
            sections: &self.sections,
            order: &order,
            summary: &placed.summary,
            transitions: &placed.before,
            summary_error: summary_error.as_deref(),
            stats: &req.stats,
            provider: &info,
        });
        if let Some(out) = &self.args.output {
            if let Err(e) = out.write("report.md", text.as_bytes()) {
                self.write_errors.push(e.to_string());
            }
            // The same report as a self-contained page (inline CSS and SVG, nothing fetched).
            let page = planwave_report::render_html(&text, plan, &req.records);
            if let Err(e) = out.write("report.html", page.as_bytes()) {
                self.write_errors.push(e.to_string());
            }
        }
        Integration {
            report: text,
            summary_usage,
            summary_error,
            write_errors: std::mem::take(&mut self.write_errors),
            written: self.written.clone(),
        }
    }

    /// The executive summary from the model; on failure a plain summary, with the reason.
    async fn summary(
        &self,
        records: &[TaskRecord],
        order: &[usize],
        cancel: &tokio_util::sync::CancellationToken,
    ) -> (String, Usage, Option<String>) {
        let shared = &self.args.shared;
        let plan = &shared.plan;
        // Bounded: the report has every section, the summary prompt only what fits.
        let (shown, _omitted) = digest::digest(
            order,
            |i| self.sections[i].clone(),
            |i| plan.id(i).clone(),
            shared.config.summary_budget_tokens,
            plan.lang(),
        );
        let summaries: Vec<SectionSummary<'_>> = shown
            .iter()
            .map(|(i, text)| SectionSummary {
                index: *i,
                status: records[*i].status.as_str(),
                text: text.as_deref(),
                no_figures: records[*i].warnings.iter().any(|w| w.is_no_figures()),
            })
            .collect();
        let context = integrator_context(plan, &summaries);
        let mut usage = Usage::default();
        let mut last_error = String::new();
        for attempt in 1..=shared.config.retry.max_retries + 1 {
            // Also between attempts: a stop during the first call starts no retry.
            if cancel.is_cancelled() {
                last_error = stopped(planwave_record::CancelReason::Interrupted);
                break;
            }
            let t0 = Instant::now();
            let request = ChatRequest {
                role: AgentRole::Integrator,
                // Rendered for each attempt (the same text) rather than kept and copied: the
                // prompt is a hundred KB or more, and a copy is a fresh block per attempt.
                messages: shared.prompts.integrator(plan, &summaries),
                attempt,
                context: context.clone(),
                traceparent: None,
                tools: Vec::new(),
                on_delta: None,
                max_tokens: None,
            };
            let answer = shared.provider.chat(request).await;
            let (u, model, error) = match &answer {
                Ok(r) => (r.usage, r.model.clone(), None),
                Err(e) => (
                    Usage::default(),
                    shared.provider.info().model,
                    Some(e.to_string()),
                ),
            };
            usage += u;
            shared.emit(EventKind::LlmCall {
                task: None,
                role: AgentRole::Integrator.as_str().into(),
                model,
                attempt,
                duration_ms: t0.elapsed().as_secs_f64() * 1000.0,
                usage: u,
                error,
            });
            match answer {
                Ok(r) if !r.content.trim().is_empty() => return (r.content, usage, None),
                Ok(_) => last_error = "the model returned an empty summary".into(),
                Err(e) => {
                    last_error = e.to_string();
                    if !e.is_retryable() {
                        break;
                    }
                }
            }
        }
        self.plain_summary(records, usage, last_error)
    }

    /// The summary written without a model, and why.
    fn plain_summary(
        &self,
        records: &[TaskRecord],
        usage: Usage,
        why: String,
    ) -> (String, Usage, Option<String>) {
        let completed = records
            .iter()
            .filter(|r| r.status == TaskStatus::Completed)
            .count();
        (
            planwave_report::plain_summary(&self.args.shared.plan, completed, records.len()),
            usage,
            Some(why),
        )
    }
}

/// Why a stopped run's summary is the plain one.
fn stopped(reason: planwave_record::CancelReason) -> String {
    format!(
        "the run was stopped ({}): no model call after a stop",
        reason.as_str()
    )
}
