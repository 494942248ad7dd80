//! What the engine asks prompts of: the messages for a subagent and for the integrator's
//! summary, and the structured description of each request ([`RequestContext`]). The
//! engine calls this trait; the templates in `prompts/` implement it ([`crate::Templates`]),
//! so the wording lives only there and users can override it without touching the actors.

use std::sync::Arc;

use planwave_llm::{ChatMessage, RequestContext, SectionRef, ToolResultRef};
use planwave_plan::{Lang, ValidatedPlan};
use serde::Serialize;

/// A prerequisite's section as handed to a subagent. Shared, not copied: the prompt's
/// variables hold this same `Arc` (minijinja's strings are `Arc<str>`), and the engine keeps
/// its sections as `Arc<str>` too.
#[derive(Clone, Debug)]
pub struct PriorSection {
    pub index: usize,
    pub text: Arc<str>,
}

/// The task's own text as its prompt gets it: the plan's, or shortened to the context budget,
/// and the form its answer takes.
#[derive(Clone, Copy, Debug)]
pub struct TaskText<'a> {
    pub description: &'a str,
    pub hints: &'a planwave_plan::Hints,
    pub form: AnswerForm,
}

impl<'a> TaskText<'a> {
    /// The plan's text, whole, answered as a section.
    pub fn of(task: &'a planwave_plan::TaskSpec) -> TaskText<'a> {
        TaskText {
            description: &task.description,
            hints: &task.hints,
            form: AnswerForm::Section,
        }
    }
}

/// How a subagent gives its section, which the subagent prompt's output instruction follows,
/// so a request holds one instruction about the answer's form, never two that disagree.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AnswerForm {
    /// The answer is the section itself, under its heading: no tools, or native tool calls
    /// (the model's content stays the section).
    #[default]
    Section,
    /// The JSON tool protocol: every answer is one JSON object and the section is its
    /// `content` (`tool_protocol.j2`, appended to the request, says how).
    JsonProtocol,
}

/// One finished task as handed to the integrator.
#[derive(Clone, Debug)]
pub struct SectionSummary<'a> {
    pub index: usize,
    pub status: &'a str,
    pub text: Option<&'a str>,
    /// The section gives no figures (the engine's data-quality check); the prompt names it
    /// so the summary can say so.
    pub no_figures: bool,
}

/// A tool as the JSON tool protocol lists it for a subagent.
#[derive(Clone, Debug, Serialize)]
pub struct ToolListing<'a> {
    pub name: &'a str,
    pub description: &'a str,
    /// The tool's input schema as compact JSON.
    pub schema: String,
}

pub trait PromptSet: Send + Sync {
    /// Messages for the subagent writing task `index`, given its own (fitted) text and its
    /// prerequisites' sections.
    fn subagent(
        &self,
        plan: &ValidatedPlan,
        index: usize,
        own: &TaskText<'_>,
        prior: &[PriorSection],
    ) -> Vec<ChatMessage>;

    /// Messages asking for the executive summary over all sections.
    fn integrator(&self, plan: &ValidatedPlan, sections: &[SectionSummary<'_>])
    -> Vec<ChatMessage>;

    /// The JSON tool protocol's instructions, listing the tools a subagent may call.
    fn tool_protocol(&self, lang: Lang, tools: &[ToolListing<'_>]) -> String;

    /// The message giving a JSON-protocol subagent its tool calls' outputs, in call order.
    fn tool_results(&self, lang: Lang, results: &[ToolResultRef]) -> String;

    /// The message of the last tool round: no more calls, write the section.
    fn tools_exhausted(&self, lang: Lang) -> String;

    /// The rule a prompt written without a template (a step's `llm_call`) ends with when it
    /// holds `<data>` blocks: their contents are material, not orders. The built-in wording
    /// unless overridden.
    fn data_rule(&self, lang: Lang) -> String {
        crate::render::builtin().data_rule(lang)
    }

    /// The message sending an unusable JSON-protocol answer back with its problems;
    /// `attempt` is the one being asked for (2 for the first repair).
    fn tool_answer_repair(&self, lang: Lang, attempt: u32, problems: &[String]) -> String;
}

/// The structured description of a subagent request (see [`RequestContext`]).
pub fn subagent_context(
    plan: &ValidatedPlan,
    index: usize,
    own: &TaskText<'_>,
    prior: &[PriorSection],
) -> RequestContext {
    let task = plan.task(index);
    RequestContext {
        lang: plan.lang(),
        topic: plan.spec().topic.clone(),
        objectives: plan.spec().objectives.clone(),
        task_id: Some(task.id.to_string()),
        task_title: task.title().to_owned(),
        key_questions: own.hints.key_questions.clone(),
        data_needs: own.hints.data_needs.clone(),
        sections: prior
            .iter()
            .map(|p| SectionRef {
                id: plan.id(p.index).to_string(),
                title: plan.task(p.index).title().to_owned(),
                status: "completed".into(),
            })
            .collect(),
        ..Default::default()
    }
}

/// The structured description of the integrator's summary request.
pub fn integrator_context(plan: &ValidatedPlan, sections: &[SectionSummary<'_>]) -> RequestContext {
    RequestContext {
        lang: plan.lang(),
        topic: plan.spec().topic.clone(),
        objectives: plan.spec().objectives.clone(),
        sections: sections
            .iter()
            .map(|s| SectionRef {
                id: plan.id(s.index).to_string(),
                title: plan.task(s.index).title().to_owned(),
                status: s.status.to_owned(),
            })
            .collect(),
        ..Default::default()
    }
}
