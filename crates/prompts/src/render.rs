//! Rendering: the variables each template gets, and splitting output into chat messages.

use std::sync::OnceLock;

use minijinja::value::{Serde, Value};
use planwave_llm::{ChatMessage, ToolResultRef};
use planwave_plan::{Lang, ValidatedPlan};
use serde::Serialize;
use serde_json::json;

use crate::set::{PriorSection, PromptSet, SectionSummary, TaskText, ToolListing};
use crate::templates::{PromptError, Templates};

#[derive(Clone, Debug, Serialize)]
pub struct PlannerTool {
    pub name: String,
    pub description: String,
    /// The tool's input JSON Schema as compact JSON text (empty when unknown).
    #[serde(default)]
    pub input_schema: String,
}

/// Variables of `planner.j2`.
#[derive(Clone, Debug, Serialize)]
pub struct PlannerVars<'a> {
    pub goal: &'a str,
    pub tools: &'a [PlannerTool],
    /// The plan's JSON Schema, pretty-printed.
    pub schema: &'a str,
    pub min_tasks: usize,
    pub max_tasks: usize,
    /// The previous round's reflection summary (the reflective loop's rounds 2+).
    pub reflection: Option<&'a str>,
    /// The job's metadata (the task context every prompt of the job shows), in key order.
    pub meta: Vec<MetaEntry<'a>>,
    /// Ask for a tool-step plan (`planner_steps.j2`) instead of a research plan.
    #[serde(skip)]
    pub steps: bool,
    /// The domain's process specification (`[planner] process_spec`), in its own section.
    pub process_spec: Option<&'a str>,
}

/// One `KEY=VALUE` of the job's metadata.
#[derive(Clone, Debug, Serialize)]
pub struct MetaEntry<'a> {
    pub key: &'a str,
    pub value: &'a str,
}

/// Variables of `repair.j2`.
#[derive(Clone, Debug, Serialize)]
pub struct RepairVars<'a> {
    pub goal: &'a str,
    /// The attempt being made (2 for the first repair).
    pub attempt: u32,
    pub problems: &'a [String],
    pub min_tasks: usize,
    pub max_tasks: usize,
    /// The plan asked for is a tool-step plan.
    pub steps: bool,
}

const SYSTEM_MARK: &str = "=== system ===";
const USER_MARK: &str = "=== user ===";

/// [`messages`] of `text`, which a single user message (no marks: the built-in subagent and
/// integrator prompts) takes as it is, trimmed in place, rather than as a copy.
pub(crate) fn messages_owned(mut text: String) -> Vec<ChatMessage> {
    if has_mark(&text) {
        return messages(&text);
    }
    text.truncate(text.trim_end().len());
    let lead = text.len() - text.trim_start().len();
    text.drain(..lead);
    if text.is_empty() {
        return Vec::new();
    }
    vec![ChatMessage::user(text)]
}

/// Whether a line of `text` is a message mark.
fn has_mark(text: &str) -> bool {
    marks(text).next().is_some()
}

/// Splits rendered text on `=== system ===` / `=== user ===` lines into messages.
pub(crate) fn messages(text: &str) -> Vec<ChatMessage> {
    // Each message is a copy of its slice, exactly its size: the prompt is held while its
    // model call is in flight, and the rendered text's buffer is up to twice as large.
    let mut out = Vec::with_capacity(2);
    let mut role: Option<bool> = None; // Some(true) system, Some(false) user
    let flush = |role: Option<bool>, body: &str, out: &mut Vec<ChatMessage>| {
        let t = body.trim();
        if !t.is_empty() {
            out.push(if role == Some(true) {
                ChatMessage::system(t)
            } else {
                ChatMessage::user(t)
            });
        }
    };
    let mut start = 0; // where the current message's text begins
    for (line_start, line_end, system) in marks(text) {
        flush(role, &text[start..line_start], &mut out);
        role = Some(system);
        start = line_end;
    }
    flush(role, &text[start..], &mut out);
    out
}

/// The mark lines of `text`: where each starts and ends (after its newline), and whether it
/// marks a system message.
fn marks(text: &str) -> impl Iterator<Item = (usize, usize, bool)> + '_ {
    // Runs once per subagent. A mark line contains "===", so only the lines around those
    // (SIMD) matches are looked at. Walking every line and trimming it was 7 % of a
    // zero-latency load test's instructions.
    static MARK: OnceLock<memchr::memmem::Finder<'static>> = OnceLock::new();
    let bytes = text.as_bytes();
    let mut next_line = 0; // lines before this were looked at already
    let finder = MARK.get_or_init(|| memchr::memmem::Finder::new(b"==="));
    finder.find_iter(bytes).filter_map(move |hit| {
        if hit < next_line {
            return None; // a second "===" on a line already looked at
        }
        let line_start = memchr::memrchr(b'\n', &bytes[..hit]).map_or(0, |i| i + 1);
        let line_end = memchr::memchr(b'\n', &bytes[hit..]).map_or(bytes.len(), |i| hit + i + 1);
        next_line = line_end;
        match text[line_start..line_end].trim() {
            SYSTEM_MARK => Some((line_start, line_end, true)),
            USER_MARK => Some((line_start, line_end, false)),
            _ => None,
        }
    })
}

impl Templates {
    /// The first planning request.
    pub fn planner(
        &self,
        lang: Lang,
        vars: &PlannerVars<'_>,
    ) -> Result<Vec<ChatMessage>, PromptError> {
        let name = if vars.steps {
            "planner_steps"
        } else {
            "planner"
        };
        Ok(messages(&self.render_raw(
            lang,
            name,
            Value::from(Serde(vars)),
        )?))
    }

    /// The follow-up message after an invalid plan.
    pub fn repair(&self, lang: Lang, vars: &RepairVars<'_>) -> Result<String, PromptError> {
        Ok(self
            .render_raw(lang, "repair", Value::from(Serde(vars)))?
            .trim()
            .to_owned())
    }

    fn integrator_vars<'a>(
        plan: &'a ValidatedPlan,
        sections: &'a [SectionSummary<'a>],
    ) -> IntegratorVars<'a> {
        let spec = plan.spec();
        IntegratorVars {
            topic: &spec.topic,
            objectives: &spec.objectives,
            sections: sections
                .iter()
                .map(|s| SectionVars {
                    id: plan.id(s.index).to_string(),
                    title: plan.task(s.index).title(),
                    status: s.status,
                    text: s.text.map(crate::data::clean),
                })
                .collect(),
            missing: sections
                .iter()
                .filter(|s| s.text.is_none())
                .map(|s| plan.task(s.index).title())
                .collect(),
            no_figures: sections
                .iter()
                .filter(|s| s.text.is_some() && s.no_figures)
                .map(|s| plan.task(s.index).title())
                .collect(),
        }
    }
}

/// Variables of `integrator.j2`.
#[derive(Serialize)]
struct IntegratorVars<'a> {
    topic: &'a str,
    objectives: &'a [String],
    sections: Vec<SectionVars<'a>>,
    missing: Vec<&'a str>,
    /// Titles of completed sections without quantitative data.
    no_figures: Vec<&'a str>,
}

#[derive(Serialize)]
struct SectionVars<'a> {
    id: String,
    title: &'a str,
    status: &'a str,
    /// Data (`crate::data`), which the template places in a `<data>` block.
    text: Option<std::borrow::Cow<'a, str>>,
}

impl PromptSet for Templates {
    fn subagent(
        &self,
        plan: &ValidatedPlan,
        index: usize,
        own: &TaskText<'_>,
        prior: &[PriorSection],
    ) -> Vec<ChatMessage> {
        match self.render_subagent(plan, index, own, prior) {
            Ok(text) => messages_owned(text),
            Err(e) => {
                // Checked at load time; if task data still breaks it, the built-in wording
                // is better than no section.
                tracing::warn!("{e}; using the built-in subagent prompt");
                builtin().subagent(plan, index, own, prior)
            }
        }
    }

    fn integrator(
        &self,
        plan: &ValidatedPlan,
        sections: &[SectionSummary<'_>],
    ) -> Vec<ChatMessage> {
        let vars = Templates::integrator_vars(plan, sections);
        // Each section's text, and a line for its id, title and status.
        let hint = sections
            .iter()
            .map(|s| s.text.map_or(0, str::len) + plan.task(s.index).title().len() + 64)
            .sum::<usize>()
            + plan
                .spec()
                .objectives
                .iter()
                .map(|o| o.len() + 2)
                .sum::<usize>()
            + plan.spec().topic.len();
        let vars = Value::from(Serde(&vars));
        match self.render_sized(plan.lang(), "integrator", vars, hint) {
            Ok(text) => messages_owned(text),
            Err(e) => {
                tracing::warn!("{e}; using the built-in integrator prompt");
                builtin().integrator(plan, sections)
            }
        }
    }

    fn tool_protocol(&self, lang: Lang, tools: &[ToolListing<'_>]) -> String {
        self.render_or_builtin(lang, "tool_protocol", json!({ "tools": tools }))
    }

    fn tool_results(&self, lang: Lang, results: &[ToolResultRef]) -> String {
        // Each output is data (`crate::data`), placed in a `<data>` block by the template.
        let results: Vec<_> = results
            .iter()
            .map(|r| {
                json!({"tool": crate::data::clean(&r.tool), "output": crate::data::clean(&r.output),
                       "is_error": r.is_error})
            })
            .collect();
        self.render_or_builtin(lang, "tool_results", json!({ "results": results }))
    }

    fn tools_exhausted(&self, lang: Lang) -> String {
        self.render_or_builtin(lang, "tools_exhausted", json!({}))
    }

    fn data_rule(&self, lang: Lang) -> String {
        self.render_or_builtin(lang, "data_rule", json!({}))
            .trim()
            .to_owned()
    }

    fn tool_answer_repair(&self, lang: Lang, attempt: u32, problems: &[String]) -> String {
        // The loop's answer_repair.j2, so one wording asks for repaired JSON everywhere.
        let vars = json!({"what": "answer", "attempt": attempt, "problems": problems});
        self.render_or_builtin(lang, "answer_repair", vars)
            .trim()
            .to_owned()
    }
}

impl Templates {
    /// The subagent prompt's text: its plan-wide opening once per plan, when the template
    /// could be split after it (`opening`), else the whole template.
    fn render_subagent(
        &self,
        plan: &ValidatedPlan,
        index: usize,
        own: &TaskText<'_>,
        prior: &[PriorSection],
    ) -> Result<String, PromptError> {
        let lang = plan.lang();
        let vars = subagent::vars(plan, index, own, prior);
        let split = match lang {
            Lang::En => &self.subagent_split[0],
            Lang::Zh => &self.subagent_split[1],
        };
        let Some(split) = split else {
            return self.render_raw(lang, "subagent", vars);
        };
        // The sections and the task's own text, which the rest prints.
        let hint = prior.iter().map(|p| p.text.len() + 64).sum::<usize>()
            + own.description.len()
            + plan.task(index).title().len();
        let json_protocol = own.form == crate::set::AnswerForm::JsonProtocol;
        split
            .render(&self.env, lang, plan.spec(), json_protocol, vars, hint)
            .map_err(|e| PromptError::Template {
                name: crate::templates::key(lang, "subagent").into_owned(),
                message: crate::templates::error_text(&e),
            })
    }

    /// A one-message template's text; the compiled-in wording when an override fails at
    /// render time (it was checked at load time, so only odd data can get here).
    fn render_or_builtin(&self, lang: Lang, name: &str, vars: serde_json::Value) -> String {
        match self.render_raw(lang, name, Value::from(Serde(&vars))) {
            Ok(text) => text,
            Err(e) => {
                tracing::warn!("{e}; using the built-in {name} prompt");
                builtin()
                    .render_raw(lang, name, Value::from(Serde(&vars)))
                    .unwrap_or_default()
            }
        }
    }
}

/// The compiled-in templates, for when an overriding template fails at render time: the
/// built-in wording is better than no section. (Their own rendering is covered by this
/// crate's tests, so they do not fail in turn.)
pub(crate) fn builtin() -> &'static Templates {
    static BUILTIN: std::sync::OnceLock<Templates> = std::sync::OnceLock::new();
    BUILTIN.get_or_init(Templates::builtin)
}

/// Sample variables for load-time checks of each template.
pub(crate) fn sample(name: &str) -> Value {
    let v = match name {
        "planner" | "planner_steps" => {
            json!({"goal": "goal", "tools": [{"name": "t", "description": "d"}],
                   "schema": "{}", "min_tasks": 4, "max_tasks": 7, "reflection": "r",
                   "meta": [{"key": "k", "value": "v"}]})
        }
        "evaluator" | "reflector" | "replan" | "replan_steps" | "step_reflection"
        | "answer_repair" | "failure_note" | "reflection_summary" => {
            return crate::reflect::sample(name);
        }
        "repair" => {
            json!({"goal": "goal", "attempt": 2, "problems": ["p"], "min_tasks": 4, "max_tasks": 7})
        }
        "tool_protocol" => json!({"tools": [{"name": "t", "description": "d", "schema": "{}"}]}),
        "tool_results" => json!({"results": [{"tool": "t", "output": "o", "is_error": false}]}),
        "tools_exhausted" | "data_rule" => json!({}),
        "clarify" => {
            json!({"ask": true, "answers": [{"question": "q", "answer": "a"}, {"answer": "b"}]})
        }
        "subagent" => json!({
            "task": {"id": "1", "title": "t", "description": "d",
                     "hints": {"data_needs": ["a"], "key_questions": ["q"], "suggested_tools": []}},
            "research_type": "company", "topic": "x", "objectives": ["o"],
            "prior": [{"id": "0", "title": "p", "text": "## p\n\ntext"}]}),
        _ => json!({"topic": "x", "objectives": ["o"],
                    "sections": [{"id": "1", "title": "t", "status": "completed", "text": "## t"},
                                 {"id": "2", "title": "u", "status": "failed", "text": null}],
                    "missing": ["u"], "no_figures": ["t"]}),
    };
    Value::from(Serde(v))
}

mod opening;
mod subagent;

pub(crate) use opening::{Split, split};

#[cfg(test)]
mod tests;

#[cfg(test)]
mod cache_layout_tests;

#[cfg(test)]
mod opening_tests;
