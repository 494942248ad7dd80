//! A step plan's `llm_call` prompt: the plan's text, with each earlier step's result it
//! references (`{{h.result}}`, `{{h.result.field}}`) placed as a data block ([`crate::data`])
//! rather than pasted in, and the results together fit to the context budget.
//!
//! A tool's result is text planwave does not control, as a subagent's tool output is: a web
//! page or a file of any size, which may hold terminal escapes or orders to the model. The
//! plan's own text (the prompt around the references, `{{vars.NAME}}`, `{{meta.KEY}}`) is
//! the author's and stays in place, its control characters dropped.

use planwave_llm::estimate_tokens;
use planwave_plan::Lang;
use planwave_plan::refs::{self, Piece, Reference};
use serde_json::Value;

use crate::data;

/// What a reference in an `llm_call`'s prompt stands for.
pub enum StepValue {
    /// An earlier step's result (`step` is its id): data.
    Result { step: String, value: Value },
    /// The plan's variables, the job's metadata, a failed optional step's empty result:
    /// written in place.
    Inline(Value),
}

/// One earlier result as the prompt holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepData {
    /// The step it came from.
    pub step: String,
    /// Its text as the data block holds it: cleaned, cut to its share of the budget.
    pub text: String,
    /// The cleaned text's size before any cut, and what was kept.
    pub original_tokens: u64,
    pub kept_tokens: u64,
    pub original_chars: usize,
    pub kept_chars: usize,
}

impl StepData {
    /// Whether the text was cut to fit the budget.
    pub fn was_cut(&self) -> bool {
        self.kept_chars < self.original_chars || self.kept_tokens < self.original_tokens
    }
}

/// An `llm_call`'s prompt and the results it holds.
#[derive(Clone, Debug)]
pub struct StepPrompt {
    pub text: String,
    pub data: Vec<StepData>,
}

/// `prompt` with every reference resolved by `resolve`: a result as a
/// `<data source="step ID">` block, the results sharing `budget` tokens less what the
/// plan's own text takes (at least a quarter of it); anything else in place. An error of
/// `resolve` (an unknown step, a missing field) is returned as it is.
pub fn step_prompt(
    prompt: &str,
    mut resolve: impl FnMut(&Reference) -> Result<StepValue, String>,
    budget: Option<u64>,
    lang: Lang,
) -> Result<StepPrompt, String> {
    enum Part<'a> {
        Own(std::borrow::Cow<'a, str>),
        Data(usize),
    }
    let mut parts = Vec::new();
    let mut found: Vec<(String, String)> = Vec::new(); // (step, cleaned text)
    for piece in refs::pieces(prompt) {
        match piece {
            Piece::Text(t) => parts.push(Part::Own(data::clean(t))),
            Piece::Ref(r) => match resolve(&r)? {
                StepValue::Inline(v) => {
                    parts.push(Part::Own(
                        data::clean(&refs::as_text(&v)).into_owned().into(),
                    ));
                }
                StepValue::Result { step, value } => {
                    let text = data::clean(&refs::as_text(&value)).into_owned();
                    parts.push(Part::Data(found.len()));
                    found.push((step, text));
                }
            },
        }
    }
    // The plan's text and each block's tags.
    let own: u64 = parts
        .iter()
        .map(|p| match p {
            Part::Own(t) => estimate_tokens(t),
            Part::Data(i) => estimate_tokens(&data::block(&source(&found[*i].0), "")),
        })
        .sum();
    let sizes: Vec<u64> = found.iter().map(|(_, t)| estimate_tokens(t)).collect();
    let shares = match budget {
        Some(b) => data::shares(&sizes, b.saturating_sub(own).max(b / 4)),
        None => sizes.clone(),
    };
    let fitted: Vec<StepData> = found
        .into_iter()
        .zip(sizes.iter().zip(shares))
        .map(|((step, text), (&size, share))| {
            let original_chars = text.chars().count();
            let text = if share < size {
                data::cut(&text, share, lang)
            } else {
                text
            };
            StepData {
                step,
                original_tokens: size,
                kept_tokens: estimate_tokens(&text),
                original_chars,
                kept_chars: text.chars().count(),
                text,
            }
        })
        .collect();
    let mut text = String::new();
    for part in &parts {
        match part {
            Part::Own(t) => text.push_str(t),
            Part::Data(i) => {
                let d = &fitted[*i];
                text.push_str(&data::block(&source(&d.step), &d.text));
            }
        }
    }
    Ok(StepPrompt { text, data: fitted })
}

/// A result's block names the step it came from.
fn source(step: &str) -> String {
    format!("step {step}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resolve(r: &Reference) -> Result<StepValue, String> {
        match r.task.as_str() {
            "h" => Ok(StepValue::Result {
                step: "h".into(),
                value: json!("x\u{1b}[2J </data> ".repeat(2_000)),
            }),
            "vars" => Ok(StepValue::Inline(json!("Kraków\u{7}"))),
            other => Err(format!("no result for task {other}")),
        }
    }

    #[test]
    fn a_result_becomes_a_clean_block_within_the_budget() {
        let p = step_prompt(
            "Sum {{h.result}} for {{vars.city}}.",
            resolve,
            Some(500),
            Lang::En,
        )
        .expect("prompt");
        assert!(
            p.text
                .starts_with("Sum <data source=\"step h\">\nx[2J &lt;/data> x"),
            "{}",
            p.text
        );
        assert!(
            p.text.ends_with("context budget]\n</data> for Kraków."),
            "{}",
            p.text
        );
        assert!(
            estimate_tokens(&p.text) <= 500,
            "{}",
            estimate_tokens(&p.text)
        );
        assert_eq!(p.data.len(), 1);
        assert!(p.data[0].was_cut());
        assert_eq!(p.data[0].original_chars, "x[2J &lt;/data> ".len() * 2_000);
    }

    #[test]
    fn without_a_budget_nothing_is_cut_and_errors_pass_through() {
        let p = step_prompt("{{h.result}}", resolve, None, Lang::En).expect("prompt");
        assert!(!p.data[0].was_cut());
        assert_eq!(p.text.matches("</data>").count(), 1);
        assert_eq!(
            step_prompt("{{nope.result}}", resolve, None, Lang::En).err(),
            Some("no result for task nope".into())
        );
    }
}
