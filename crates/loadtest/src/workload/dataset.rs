//! Workloads from data: the requests' prompts read from a JSONL file (plain prompts, chat
//! `messages`, or ShareGPT conversations) or made up to a drawn length, sent in place of the
//! prompts planwave renders for its own tasks (see [`DataPrompts`]).
//!
//! File format (one JSON object a line; blank lines skipped), documented in
//! docs/guide/loadtest-workloads.md:
//! - `{"prompt": "..."}` (also `text` or `input`): one user message;
//! - `{"messages": [{"role": "user", "content": "..."}]}`: a chat, sent as it is (content as
//!   a string or an array of `{"type": "text", "text": ...}` parts);
//! - `{"conversations": [{"from": "human", "value": "..."}, {"from": "gpt", ...}]}` (ShareGPT):
//!   the turns up to the first human one's answer, i.e. the first human turn (with a system
//!   turn before it, if any).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use planwave_llm::{ChatMessage, MessageRole, ToolResultRef};
use planwave_plan::{Lang, ValidatedPlan};
use planwave_prompts::{PriorSection, PromptSet, SectionSummary, TaskText, ToolListing};
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};
use serde_json::Value;

use super::limits::{MAX_PROMPT_TOKENS, within_budget};

/// A dataset that cannot be used, with where.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum DatasetError {
    #[error("{path}: {problem}")]
    File { path: PathBuf, problem: String },
    #[error("{path}, line {line}: {problem}")]
    Line {
        path: PathBuf,
        line: usize,
        problem: String,
    },
    #[error(
        "input tokens {0:?}: expected MEAN,SPREAD (e.g. 512,128), a mean from 1 to {max} and a spread of at most {max}",
        max = MAX_PROMPT_TOKENS
    )]
    Tokens(String),
}

/// Each request's messages, read from `path`.
pub fn read_dataset(path: &Path) -> Result<Vec<Vec<ChatMessage>>, DatasetError> {
    read_rows(path, "requests", row_messages)
}

/// Every non-blank line of the JSONL file `path` through `row`; an error names its line, and
/// a file without a row is refused as having no `what`.
pub(crate) fn read_rows<T>(
    path: &Path,
    what: &str,
    row: impl Fn(&Value) -> Result<T, String>,
) -> Result<Vec<T>, DatasetError> {
    let text = std::fs::read_to_string(path).map_err(|e| DatasetError::File {
        path: path.to_owned(),
        problem: e.to_string(),
    })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |problem: String| DatasetError::Line {
            path: path.to_owned(),
            line: i + 1,
            problem,
        };
        let v: Value = serde_json::from_str(line).map_err(|e| bad(e.to_string()))?;
        out.push(row(&v).map_err(bad)?);
    }
    if out.is_empty() {
        return Err(DatasetError::File {
            path: path.to_owned(),
            problem: format!("no {what} in it"),
        });
    }
    Ok(out)
}

/// One line's messages, or what is wrong with it.
pub(crate) fn row_messages(v: &Value) -> Result<Vec<ChatMessage>, String> {
    if let Some(p) = ["prompt", "text", "input"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
    {
        return Ok(vec![ChatMessage::user(p)]);
    }
    if let Some(ms) = v.get("messages").and_then(Value::as_array) {
        let messages = ms
            .iter()
            .map(|m| {
                let role = match m.get("role").and_then(Value::as_str) {
                    Some("system" | "developer") => MessageRole::System,
                    Some("user") => MessageRole::User,
                    Some("assistant") => MessageRole::Assistant,
                    other => {
                        return Err(format!(
                            "message role {other:?} is not one of system, user, assistant"
                        ));
                    }
                };
                Ok(message(role, content_text(m.get("content"))))
            })
            .collect::<Result<Vec<_>, String>>()?;
        return non_empty(messages);
    }
    if let Some(turns) = v.get("conversations").and_then(Value::as_array) {
        let mut messages = Vec::new();
        for t in turns {
            let text = t.get("value").and_then(Value::as_str).unwrap_or_default();
            match t.get("from").and_then(Value::as_str) {
                Some("system") => messages.push(message(MessageRole::System, text.into())),
                Some("human" | "user") => {
                    messages.push(message(MessageRole::User, text.into()));
                    break;
                }
                _ => {}
            }
        }
        return non_empty(messages);
    }
    Err("expected a \"prompt\", \"messages\" or \"conversations\" field".into())
}

fn non_empty(messages: Vec<ChatMessage>) -> Result<Vec<ChatMessage>, String> {
    if messages.iter().any(|m| m.role == MessageRole::User) {
        Ok(messages)
    } else {
        Err("no user message".into())
    }
}

fn message(role: MessageRole, content: String) -> ChatMessage {
    let mut m = ChatMessage::user(content);
    m.role = role;
    m
}

/// A message's content as text: a string, or the texts of an array of parts.
fn content_text(content: Option<&Value>) -> String {
    match content {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A length distribution in tokens: mean and spread (standard deviation), as `512,128`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TokenCount {
    pub mean: f64,
    pub spread: f64,
}

impl std::str::FromStr for TokenCount {
    type Err = DatasetError;
    fn from_str(s: &str) -> Result<TokenCount, DatasetError> {
        let bad = || DatasetError::Tokens(s.to_owned());
        let (mean, spread) = s.split_once(',').unwrap_or((s, "0"));
        let num = |t: &str| {
            t.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
        };
        let (mean, spread) = (num(mean).ok_or_else(bad)?, num(spread).ok_or_else(bad)?);
        let max = MAX_PROMPT_TOKENS as f64;
        if !(1.0..=max).contains(&mean) || spread > max {
            return Err(bad());
        }
        Ok(TokenCount { mean, spread })
    }
}

impl TokenCount {
    /// `n` draws, seeded, each from 1 to [`MAX_PROMPT_TOKENS`] (a normal distribution,
    /// clamped).
    pub fn draw(&self, n: usize, seed: u64) -> Vec<u64> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let normal = Normal::new(self.mean, self.spread).ok();
        (0..n)
            .map(|_| {
                let v = normal.map_or(self.mean, |d| d.sample(&mut rng));
                // `max` first: it takes 1 over a NaN, which `clamp` would keep.
                v.round().max(1.0).min(MAX_PROMPT_TOKENS as f64) as u64
            })
            .collect()
    }
}

/// Up to `n` prompt lengths drawn, as many as fit
/// [`MAX_PROMPT_TOKENS_TOTAL`](super::limits::MAX_PROMPT_TOKENS_TOTAL) (at least one): the
/// prompts are cycled, so fewer long ones cost memory, not requests.
pub fn prompt_lengths(tokens: &TokenCount, n: usize, seed: u64) -> Vec<u64> {
    within_budget(tokens.draw(n, seed))
}

/// Up to `n` synthetic prompts of drawn lengths ([`prompt_lengths`]), distinct (see
/// [`SyntheticPrompts`](crate::SyntheticPrompts)). Each token is a two-letter word and a space (three characters):
/// the simulator counts three characters a token, and a BPE tokenizer reads a short common
/// word as one token, so both count about the length asked.
pub fn synthetic_prompts(tokens: &TokenCount, n: usize, seed: u64) -> Vec<Vec<ChatMessage>> {
    prompt_lengths(tokens, n, seed)
        .into_iter()
        .enumerate()
        .map(|(i, len)| {
            let key = super::synthetic::request_key(seed, 0, i as u64);
            vec![ChatMessage::user(super::synthetic::filler(
                key,
                len as usize,
            ))]
        })
        .collect()
}

/// One prompt per entry of `lengths`, exactly that many tokens long (a trace's requests),
/// each within [`MAX_PROMPT_TOKENS`] (the trace's reader refuses longer ones).
pub fn prompts_of_lengths(lengths: &[u64]) -> Vec<Vec<ChatMessage>> {
    lengths
        .iter()
        .enumerate()
        .map(|(i, &len)| {
            let words = len.clamp(1, MAX_PROMPT_TOKENS) as usize;
            vec![ChatMessage::user(super::synthetic::filler(i as u64, words))]
        })
        .collect()
}

/// The built-in prompts, except that task `i`'s request is the workload's request
/// `i % len`: the engine still dispatches, retries and measures as for any plan.
pub struct DataPrompts {
    requests: Vec<Vec<ChatMessage>>,
    inner: Arc<dyn PromptSet>,
}

impl DataPrompts {
    pub fn new(requests: Vec<Vec<ChatMessage>>, inner: Arc<dyn PromptSet>) -> DataPrompts {
        DataPrompts { requests, inner }
    }
}

impl PromptSet for DataPrompts {
    fn subagent(
        &self,
        plan: &ValidatedPlan,
        index: usize,
        own: &TaskText<'_>,
        prior: &[PriorSection],
    ) -> Vec<ChatMessage> {
        match self.requests.len() {
            0 => self.inner.subagent(plan, index, own, prior),
            n => self.requests[index % n].clone(),
        }
    }

    fn integrator(
        &self,
        plan: &ValidatedPlan,
        sections: &[SectionSummary<'_>],
    ) -> Vec<ChatMessage> {
        self.inner.integrator(plan, sections)
    }

    fn tool_protocol(&self, lang: Lang, tools: &[ToolListing<'_>]) -> String {
        self.inner.tool_protocol(lang, tools)
    }

    fn tool_results(&self, lang: Lang, results: &[ToolResultRef]) -> String {
        self.inner.tool_results(lang, results)
    }

    fn tools_exhausted(&self, lang: Lang) -> String {
        self.inner.tools_exhausted(lang)
    }

    fn tool_answer_repair(&self, lang: Lang, attempt: u32, problems: &[String]) -> String {
        self.inner.tool_answer_repair(lang, attempt, problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_prompts_chats_and_sharegpt_and_names_bad_lines() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("d.jsonl");
        std::fs::write(
            &path,
            concat!(
                "{\"prompt\": \"one\"}\n\n",
                "{\"messages\": [{\"role\": \"system\", \"content\": \"s\"}, {\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"a\"}, {\"type\": \"text\", \"text\": \"b\"}]}]}\n",
                "{\"conversations\": [{\"from\": \"human\", \"value\": \"q1\"}, {\"from\": \"gpt\", \"value\": \"a1\"}]}\n",
            ),
        )
        .expect("write");
        let rows = read_dataset(&path).expect("reads");
        let texts: Vec<Vec<&str>> = rows
            .iter()
            .map(|r| r.iter().map(|m| m.content.as_str()).collect())
            .collect();
        assert_eq!(texts, vec![vec!["one"], vec!["s", "a\nb"], vec!["q1"]]);
        std::fs::write(&path, "{\"prompt\": \"x\"}\n{\"nothing\": 1}\n").expect("write");
        assert_eq!(
            read_dataset(&path).unwrap_err().to_string(),
            format!(
                "{}, line 2: expected a \"prompt\", \"messages\" or \"conversations\" field",
                path.display()
            )
        );
    }

    #[test]
    fn synthetic_prompts_have_the_drawn_length_in_three_character_tokens() {
        let fixed: TokenCount = "40,0".parse().expect("parses");
        let p = synthetic_prompts(&fixed, 3, 1);
        assert!(p.iter().all(|m| m[0].content.len() == 120));
        let spread: TokenCount = "200,50".parse().expect("parses");
        let lens = spread.draw(500, 2);
        let mean = lens.iter().sum::<u64>() as f64 / 500.0;
        assert!((mean - 200.0).abs() < 10.0, "{mean}");
        assert!(lens.iter().any(|&l| l != lens[0]));
        assert!("0,1".parse::<TokenCount>().is_err());
        assert!("x".parse::<TokenCount>().is_err());
    }
}
