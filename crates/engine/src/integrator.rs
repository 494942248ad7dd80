//! The integrator actor: keeps every section as it arrives (writing its file when its
//! subagent could not, so a crash loses nothing finished), then writes the executive summary
//! and the report, and answers the supervisor, its parent, by message.

use std::sync::Arc;
use std::time::Instant;

use planwave_llm::{AgentRole, ChatRequest};
use planwave_record::{CallRecord, TaskRecord, TaskStatus, Usage};
use planwave_report::ReportInput;
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tracing::Instrument;

use crate::calls::ModelCall;
use crate::digest;
use crate::messages::{FinishRequest, Integration, IntegratorMsg, SupervisorMsg};
use crate::shared::RunShared;
use planwave_prompts::{SectionSummary, integrator_context};

pub(crate) struct Integrator;

/// A plan with this topic makes the integrator panic on the first section it keeps.
#[cfg(test)]
pub(crate) const PANIC_ON_SECTION: &str = "the integrator panics on a section";

pub(crate) struct IntegratorArgs {
    pub shared: Arc<RunShared>,
    /// Where the report goes.
    pub supervisor: ActorRef<SupervisorMsg>,
}

pub(crate) struct IntegratorState {
    args: IntegratorArgs,
    sections: Vec<Option<Arc<str>>>,
    written: Vec<bool>,
    write_errors: Vec<String>,
}

/// The executive summary: its text, what it spent, and why it is the plain one if it is.
struct Summary {
    text: String,
    usage: Usage,
    calls: Vec<CallRecord>,
    error: Option<String>,
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
            IntegratorMsg::Sections(held) => {
                for (index, text, write) in held {
                    state.section(index, text, write);
                }
            }
            IntegratorMsg::Finish(req) => {
                let span = req.span.clone();
                let integration = state.integrate(*req).instrument(span).await;
                let msg = SupervisorMsg::Integrated(Box::new(integration));
                let _ = state.args.supervisor.send_message(msg);
            }
        }
        Ok(())
    }
}

impl IntegratorState {
    /// A completed section: kept for the report, its file written when `write` asks.
    fn section(&mut self, index: usize, text: Arc<str>, write: bool) {
        // A fault in the integrator while the run goes on, injected.
        #[cfg(test)]
        if self.args.shared.plan.spec().topic == PANIC_ON_SECTION {
            panic!("injected: keeping section {index}");
        }
        let shared = &self.args.shared;
        if let (true, Some(out)) = (write, &shared.output) {
            match out.write(&shared.section_files[index], text.as_bytes()) {
                Ok(()) => self.written[index] = true,
                Err(e) => self.write_errors.push(e.to_string()),
            }
        } else if !write {
            self.written[index] = shared.output.is_some();
        }
        self.sections[index] = Some(text);
    }

    async fn integrate(&mut self, req: FinishRequest) -> Integration {
        let shared = self.args.shared.clone();
        let plan = &shared.plan;
        let order = planwave_report::dependency_order(plan);
        let summary = match req.stopped {
            Some(reason) => self.plain_summary(&req.records, Summary::none(stopped(reason))),
            None => self.summary(&req.records, &order, &req.cancel).await,
        };
        let placed = planwave_report::place_transitions(&summary.text, plan);
        let info = shared.provider.info().into();
        let text = planwave_report::render_markdown(&ReportInput {
            plan,
            records: &req.records,
            sections: &self.sections,
            order: &order,
            summary: &placed.summary,
            transitions: &placed.before,
            summary_error: summary.error.as_deref(),
            stats: &req.stats,
            provider: &info,
        });
        if let Some(out) = &shared.output {
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
            summary_usage: summary.usage,
            calls: summary.calls,
            summary_error: summary.error,
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
    ) -> Summary {
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
        let mut spent = Summary::none(String::new());
        for attempt in 1..=shared.config.retry.max_retries + 1 {
            // Also between attempts: a stop during the first call starts no retry.
            if cancel.is_cancelled() {
                spent.error = Some(stopped(planwave_record::CancelReason::Interrupted));
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
            spent.usage += u;
            let call = ModelCall {
                task: None,
                role: AgentRole::Integrator,
                model,
                attempt,
                duration_ms: t0.elapsed().as_secs_f64() * 1000.0,
                usage: u,
                error,
            };
            spent.calls.push(call.record(shared));
            match answer {
                Ok(r) if !r.content.trim().is_empty() => {
                    return Summary {
                        text: crate::stored_text::for_files(&r.content).into_owned(),
                        error: None,
                        ..spent
                    };
                }
                Ok(_) => spent.error = Some("the model returned an empty summary".into()),
                Err(e) => {
                    spent.error = Some(e.to_string());
                    if !e.is_retryable() {
                        break;
                    }
                }
            }
        }
        self.plain_summary(records, spent)
    }

    /// The summary written without a model, with what `spent` says of the calls tried.
    fn plain_summary(&self, records: &[TaskRecord], spent: Summary) -> Summary {
        let completed = records
            .iter()
            .filter(|r| r.status == TaskStatus::Completed)
            .count();
        Summary {
            text: planwave_report::plain_summary(&self.args.shared.plan, completed, records.len()),
            ..spent
        }
    }
}

impl Summary {
    /// Nothing spent yet, and why there is no summary from the model (so far).
    fn none(why: String) -> Summary {
        Summary {
            text: String::new(),
            usage: Usage::default(),
            calls: Vec::new(),
            error: Some(why),
        }
    }
}

/// Why a stopped run's summary is the plain one.
fn stopped(reason: planwave_record::CancelReason) -> String {
    format!(
        "the run was stopped ({}): no model call after a stop",
        reason.as_str()
    )
}
