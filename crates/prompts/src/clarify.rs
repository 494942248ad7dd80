//! The planner prompt's clarifying part (`clarify.j2`): whether the model may answer with
//! questions instead of a plan, and the answers the user gave to earlier ones. Rendered apart
//! from `planner.j2` and appended to its request, so the planning template stays one file.

use minijinja::value::{Serde, Value};
use planwave_plan::Lang;
use serde::Serialize;

use crate::templates::{PromptError, Templates};

/// One answer, with the question it answers when known.
#[derive(Clone, Debug, Serialize)]
pub struct ClarifyAnswer<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<&'a str>,
    pub answer: &'a str,
}

/// Variables of `clarify.j2`.
#[derive(Clone, Debug, Serialize)]
pub struct ClarifyVars<'a> {
    /// The model may answer a vague goal with questions.
    pub ask: bool,
    pub answers: Vec<ClarifyAnswer<'a>>,
}

impl Templates {
    /// The clarifying part of the planning request; empty when there is nothing to say.
    pub fn clarify(&self, lang: Lang, vars: &ClarifyVars<'_>) -> Result<String, PromptError> {
        Ok(self
            .render_raw(lang, "clarify", Value::from(Serde(vars)))?
            .trim()
            .to_owned())
    }
}
