//! Multi-turn sessions: a conversation replayed turn by turn, each turn sent with every
//! earlier turn and the endpoint's own answers to them, so the context grows as it does for
//! a chat user or an agent; with a think time between an answer and the next turn.
//!
//! A session is a chain of tasks to the engine: turn `k` depends on every earlier turn of
//! its conversation, so it starts once they are answered and its prompt gets their answers
//! (the engine hands a task its prerequisites' sections). [`SessionPrompts`] builds each
//! turn's messages from them; the think time is the [`Probe`](crate::Probe)'s wait before the
//! turn's first send; `figures::turns` gives the figures per turn.
//!
//! From data (`--dataset FILE --multi-turn`): every user turn of a ShareGPT conversation or
//! of a `messages` chat, the data's own assistant turns left out (the endpoint's answers take
//! their place); a system message goes before the first turn. Synthetic (`--turns`): drawn
//! turn counts of `--input-tokens` prompts.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use planwave_llm::{ChatMessage, MessageRole, ToolResultRef};
use planwave_plan::{Lang, PlanSpec, TaskId, TaskSpec, ValidatedPlan};
use planwave_prompts::{PriorSection, PromptSet, SectionSummary, TaskText, ToolListing};
use rand::SeedableRng;
use rand_distr::Distribution as _;
use serde_json::Value;

use super::LatencyModel;
use super::dataset::{DatasetError, TokenCount};
use super::limits::{MAX_PROMPT_TOKENS_TOTAL, MAX_TURNS_PER_SESSION};
use super::tokenizer::TokenCounter;

/// The most tasks (turns) a session workload may have, as `--requests` bounds requests.
pub(crate) const MAX_TURNS_TOTAL: usize = 10_000_000;

/// The most dependencies a session workload's plan may hold: a turn depends on every
/// earlier turn of its conversation, so a few thousand conversations of a thousand turns
/// would make billions.
pub(crate) const MAX_TURN_DEPENDENCIES: u64 = 10_000_000;

/// One conversation: the messages each turn adds (its user message; the first turn also
/// the system message, when there is one).
#[derive(Clone, Debug, PartialEq)]
pub struct Session {
    pub turns: Vec<Vec<ChatMessage>>,
}

/// Each line's conversation, every user turn of it.
pub fn read_sessions(path: &Path) -> Result<Vec<Session>, DatasetError> {
    super::dataset::read_rows(path, "conversations", session_of)
}

/// One line's conversation split into turns.
fn session_of(v: &Value) -> Result<Session, String> {
    let messages: Vec<ChatMessage> = match v.get("conversations").and_then(Value::as_array) {
        Some(turns) => turns
            .iter()
            .filter_map(|t| {
                let text = t.get("value").and_then(Value::as_str).unwrap_or_default();
                match t.get("from").and_then(Value::as_str)? {
                    "system" => Some(ChatMessage::system(text)),
                    "human" | "user" => Some(ChatMessage::user(text)),
                    _ => None,
                }
            })
            .collect(),
        None => super::dataset::row_messages(v)?,
    };
    let mut turns: Vec<Vec<ChatMessage>> = Vec::new();
    let mut before: Vec<ChatMessage> = Vec::new();
    for m in messages {
        match m.role {
            MessageRole::User => {
                before.push(m);
                turns.push(std::mem::take(&mut before));
            }
            // The data's answers are replaced by the endpoint's own.
            MessageRole::Assistant | MessageRole::Tool => {}
            MessageRole::System => before.push(m),
        }
    }
    if turns.is_empty() {
        return Err("no user message".into());
    }
    if turns.len() as u64 > MAX_TURNS_PER_SESSION {
        return Err(format!(
            "{} user turns, more than {MAX_TURNS_PER_SESSION} a conversation",
            turns.len()
        ));
    }
    Ok(Session { turns })
}

/// `n` synthetic conversations: each of a drawn number of turns (`turns`, each at most
/// [`MAX_TURNS_PER_SESSION`]), each turn a prompt of a drawn length (`input`), sized by
/// `tokenizer` when there is one; refused when the turns or their tokens pass the bounds
/// (10 million turns, [`MAX_PROMPT_TOKENS_TOTAL`]) or the tokenizer cannot size them.
pub fn synthetic_sessions(
    turns: &TokenCount,
    input: &TokenCount,
    n: usize,
    seed: u64,
    tokenizer: Option<&TokenCounter>,
) -> Result<Vec<Session>, String> {
    if turns.mean > MAX_TURNS_PER_SESSION as f64 {
        return Err(format!(
            "a mean of {} turns is more than {MAX_TURNS_PER_SESSION} a conversation",
            turns.mean
        ));
    }
    let counts: Vec<u64> = (turns.draw(n, seed ^ 0x7475_726e).into_iter())
        .map(|c| c.min(MAX_TURNS_PER_SESSION))
        .collect();
    let total: u64 = counts.iter().sum();
    if total > MAX_TURNS_TOTAL as u64 {
        return Err(format!("{total} turns in all, more than {MAX_TURNS_TOTAL}"));
    }
    let lengths = input.draw(total as usize, seed);
    let tokens = lengths.iter().fold(0u64, |t, &l| t.saturating_add(l));
    if tokens > MAX_PROMPT_TOKENS_TOTAL {
        return Err(format!(
            "the turns' prompts add up to {tokens} tokens, more than the {MAX_PROMPT_TOKENS_TOTAL} a load test holds in memory"
        ));
    }
    let mut lengths = lengths.into_iter();
    let mut k = 0usize;
    counts
        .iter()
        .map(|&c| {
            let turns = (0..c)
                .map(|_| {
                    let len = lengths.next().unwrap_or(1);
                    k += 1;
                    let text = match tokenizer {
                        Some(t) => t.filler(len, k as u64).map_err(|e| e.to_string())?,
                        None => super::synthetic::filler(k as u64, len as usize),
                    };
                    Ok(vec![ChatMessage::user(text)])
                })
                .collect::<Result<_, String>>()?;
            Ok(Session { turns })
        })
        .collect()
}

/// Per task of a session workload: its conversation, its turn, its think time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionMap {
    /// Per task: the conversation it belongs to (0-based, in plan order).
    pub session: Vec<u32>,
    /// Per task: its turn in the conversation, from 1.
    pub turn: Vec<u32>,
    /// Per task: the wait between the previous turn's answer and its send (zero for first
    /// turns).
    pub think: Vec<Duration>,
    /// Per conversation: the task of its first turn.
    pub first: Vec<usize>,
}

impl SessionMap {
    /// Per task, the earliest send from the run's start: conversation `c` starts at
    /// `starts[c]`; later turns follow their answers.
    pub(crate) fn arrivals(&self, starts: &[Duration]) -> Vec<Duration> {
        let mut at = vec![Duration::ZERO; self.turn.len()];
        for (c, &first) in self.first.iter().enumerate() {
            at[first] = starts.get(c).copied().unwrap_or_default();
        }
        at
    }

    /// The think time to wait before task `i`'s first send, if any.
    pub(crate) fn think_before(&self, i: usize) -> Option<Duration> {
        self.think.get(i).copied().filter(|d| !d.is_zero())
    }
}

/// A session workload: its plan, the prompts of its turns, and the map of its tasks.
pub struct SessionWorkload {
    pub plan: ValidatedPlan,
    pub prompts: Arc<dyn PromptSet>,
    pub map: Arc<SessionMap>,
}

/// `count` conversations (the given ones cycled) as one plan; think times drawn from
/// `think`, seeded.
pub fn session_workload(
    sessions: &[Session],
    count: usize,
    think: Option<LatencyModel>,
    seed: u64,
    inner: Arc<dyn PromptSet>,
) -> Result<SessionWorkload, String> {
    if sessions.is_empty() || count == 0 {
        return Err("no conversations".into());
    }
    // Each given turn held once, shared by every conversation that cycles it: a dataset
    // replayed as a million conversations must not be copied a million times.
    let shared: Vec<Vec<Arc<[ChatMessage]>>> = sessions
        .iter()
        .map(|s| s.turns.iter().map(|t| Arc::from(t.as_slice())).collect())
        .collect();
    let chosen: Vec<&Vec<Arc<[ChatMessage]>>> =
        (0..count).map(|c| &shared[c % shared.len()]).collect();
    let total: usize = chosen.iter().map(|s| s.len()).sum();
    if total > MAX_TURNS_TOTAL {
        return Err(format!("{total} turns in all, more than {MAX_TURNS_TOTAL}"));
    }
    // Each turn depends on every earlier one of its conversation.
    let pairs: u64 = chosen
        .iter()
        .map(|s| (s.len() as u64) * (s.len() as u64).saturating_sub(1) / 2)
        .sum();
    if pairs > MAX_TURN_DEPENDENCIES {
        return Err(format!(
            "{pairs} dependencies between turns (each turn on every earlier one of its conversation), more than {MAX_TURN_DEPENDENCIES}"
        ));
    }
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x7468_696e);
    let mut map = SessionMap::default();
    let mut tasks = Vec::with_capacity(total);
    let mut turns = Vec::with_capacity(total);
    for (c, s) in chosen.iter().enumerate() {
        let first = tasks.len();
        map.first.push(first);
        for (k, messages) in s.iter().enumerate() {
            let id = |i: usize| TaskId::Int(i as i64 + 1);
            let deps = (first..first + k).map(id).collect();
            tasks.push(TaskSpec::new(
                id(first + k),
                format!("Conversation {} turn {}", c + 1, k + 1),
                deps,
            ));
            map.session.push(c as u32);
            map.turn.push(k as u32 + 1);
            map.think.push(match (k, think) {
                (0, _) | (_, None) => Duration::ZERO,
                (_, Some(model)) => draw(model, &mut rng),
            });
            turns.push(messages.clone());
        }
    }
    let spec = PlanSpec {
        topic: format!("{count} conversations, {total} turns"),
        objectives: vec!["Replay conversations turn by turn".into()],
        tasks,
        ..PlanSpec::default()
    };
    let plan = ValidatedPlan::new(spec).map_err(|e| {
        e.0.iter()
            .map(|p| p.to_string())
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let map = Arc::new(map);
    Ok(SessionWorkload {
        plan,
        prompts: Arc::new(SessionPrompts {
            turns,
            map: map.clone(),
            inner,
        }),
        map,
    })
}

/// One draw of a think time.
fn draw(model: LatencyModel, rng: &mut rand::rngs::StdRng) -> Duration {
    let ms = match model {
        LatencyModel::Fixed { ms } => ms,
        LatencyModel::LogNormal { mean_ms, sigma } if mean_ms > 0.0 => {
            // The mean is the distribution's: mu = ln(mean) - sigma^2 / 2.
            let mu = mean_ms.ln() - sigma * sigma / 2.0;
            rand_distr::LogNormal::new(mu, sigma).map_or(mean_ms, |d| d.sample(rng))
        }
        LatencyModel::LogNormal { .. } => 0.0,
    };
    Duration::from_secs_f64((ms / 1000.0).clamp(0.0, 86_400.0))
}

/// Each turn's prompt: the conversation so far (earlier turns and the endpoint's answers to
/// them, which the engine hands over as the prerequisites' sections), then the turn.
pub(crate) struct SessionPrompts {
    /// Per task: the messages its turn adds.
    turns: Vec<Arc<[ChatMessage]>>,
    map: Arc<SessionMap>,
    inner: Arc<dyn PromptSet>,
}

impl PromptSet for SessionPrompts {
    fn subagent(
        &self,
        plan: &ValidatedPlan,
        index: usize,
        own: &TaskText<'_>,
        prior: &[PriorSection],
    ) -> Vec<ChatMessage> {
        let (Some(&c), Some(turns)) = (self.map.session.get(index), self.turns.get(index)) else {
            return self.inner.subagent(plan, index, own, prior);
        };
        let first = self.map.first[c as usize];
        let mut messages = Vec::new();
        for earlier in first..index {
            messages.extend(self.turns[earlier].iter().cloned());
            let answer = prior
                .iter()
                .find(|p| p.index == earlier)
                .map_or("", |p| &*p.text);
            messages.push(ChatMessage::assistant(answer));
        }
        messages.extend(turns.iter().cloned());
        messages
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
    fn conversations_split_into_user_turns_without_the_data_s_answers() {
        let v: Value = serde_json::from_str(
            r#"{"conversations": [{"from": "system", "value": "s"}, {"from": "human", "value": "q1"},
                {"from": "gpt", "value": "a1"}, {"from": "human", "value": "q2"}]}"#,
        )
        .expect("json");
        let s = session_of(&v).expect("session");
        let texts: Vec<Vec<&str>> = s
            .turns
            .iter()
            .map(|t| t.iter().map(|m| m.content.as_str()).collect())
            .collect();
        assert_eq!(texts, vec![vec!["s", "q1"], vec!["q2"]]);
        let chat: Value = serde_json::from_str(
            r#"{"messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"},
                {"role": "user", "content": "z"}]}"#,
        )
        .expect("json");
        assert_eq!(session_of(&chat).expect("session").turns.len(), 2);
        assert!(session_of(&serde_json::json!({"conversations": []})).is_err());
    }

    #[test]
    fn a_turn_carries_every_earlier_turn_and_its_answer() {
        let sessions = vec![Session {
            turns: vec![
                vec![ChatMessage::system("s"), ChatMessage::user("q1")],
                vec![ChatMessage::user("q2")],
                vec![ChatMessage::user("q3")],
            ],
        }];
        let inner: Arc<dyn PromptSet> = Arc::new(planwave_prompts::Templates::builtin());
        let w = session_workload(
            &sessions,
            2,
            Some(LatencyModel::Fixed { ms: 250.0 }),
            0,
            inner,
        )
        .expect("workload");
        assert_eq!(w.plan.len(), 6);
        assert_eq!(w.plan.deps(2), [0, 1], "turn 3 waits for turns 1 and 2");
        assert_eq!(w.plan.deps(3), [] as [u32; 0], "a new conversation");
        assert_eq!(w.map.turn, [1, 2, 3, 1, 2, 3]);
        assert_eq!(w.map.think_before(0), None);
        assert_eq!(w.map.think_before(1), Some(Duration::from_millis(250)));
        let prior = [
            PriorSection {
                index: 1,
                text: Arc::from("a2"),
            },
            PriorSection {
                index: 0,
                text: Arc::from("a1"),
            },
        ];
        let task = w.plan.task(2);
        let own = TaskText::of(task);
        let m = w.prompts.subagent(&w.plan, 2, &own, &prior);
        let got: Vec<(MessageRole, &str)> =
            m.iter().map(|m| (m.role, m.content.as_str())).collect();
        assert_eq!(
            got,
            vec![
                (MessageRole::System, "s"),
                (MessageRole::User, "q1"),
                (MessageRole::Assistant, "a1"),
                (MessageRole::User, "q2"),
                (MessageRole::Assistant, "a2"),
                (MessageRole::User, "q3"),
            ]
        );
        let starts = [Duration::from_secs(1), Duration::from_secs(2)];
        assert_eq!(w.map.arrivals(&starts)[3], Duration::from_secs(2));
    }

    #[test]
    fn synthetic_sessions_have_the_drawn_turns() {
        let turns: TokenCount = "3".parse().expect("turns");
        let input: TokenCount = "10".parse().expect("input");
        let s = synthetic_sessions(&turns, &input, 4, 1, None).expect("bounded");
        assert_eq!(s.len(), 4);
        assert!(s.iter().all(|s| s.turns.len() == 3));
        assert_eq!(s[0].turns[0][0].content.len(), 30);
    }
}
