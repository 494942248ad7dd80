//! Synthetic prompts that do not hit a server's prefix cache by accident.
//!
//! Every request's text is drawn from its own key (the run's seed and salt, and the request's
//! number), so two prompts of a run share at most the words of their heads (the request's
//! number, low digit first: requests `i` and `j` share `k` head words only when `i ≡ j` mod
//! 32^k), and nothing but the chat template's tokens would come from a prefix cache. Each
//! run of a sweep (and each `--repeat` round) draws with a fresh salt, so no run inherits the
//! previous one's cache. A shared prefix is only there when asked for
//! ([`SharedPrefix`], `--shared-prefix`), as aiperf's and vLLM's prefix workloads make one.

use std::sync::Arc;

use planwave_llm::{ChatMessage, ToolResultRef};
use planwave_plan::{Lang, ValidatedPlan};
use planwave_prompts::{PriorSection, PromptSet, SectionSummary, TaskText, ToolListing};

use super::limits::MAX_PROMPT_TOKENS;
use super::tokenizer::TokenCounter;

/// Two-letter words: three characters a token with their space (as the simulator counts),
/// and one token each for a BPE tokenizer. 32 of them: five bits a word.
const WORDS: [&str; 32] = [
    "an", "to", "of", "in", "is", "it", "on", "at", "as", "be", "by", "do", "go", "he", "if", "me",
    "my", "no", "or", "so", "up", "us", "we", "am", "ox", "hi", "ok", "oh", "ah", "eh", "yo", "lo",
];

/// Head words that spell the request's number: 32^4 requests apart before two heads match.
const HEAD_WORDS: usize = 4;

/// `words` two-letter words, each followed by a space, drawn from `key`: the first
/// [`HEAD_WORDS`] spell the key's low bits (low digit first, so consecutive keys differ in
/// the first word), the rest are seeded draws.
pub(crate) fn filler(key: u64, words: usize) -> String {
    let mut text = String::with_capacity(words * 3);
    let stream = mix(key);
    for k in 0..words {
        let w = if k < HEAD_WORDS {
            (key >> (5 * k)) as usize & 31
        } else {
            // The k-th draw of the key's stream (SplitMix64 over a counter).
            mix(stream.wrapping_add(k as u64)) as usize & 31
        };
        text.push_str(WORDS[w]);
        text.push(' ');
    }
    text
}

/// A 64-bit mix (SplitMix64's finaliser): nearby inputs give unrelated outputs.
pub(crate) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// The key of request `i` of a run: its number in the low bits (the head, XORed with a
/// constant of the run so two runs' request `i` differ from the first word too), the seed
/// and the run's salt above them (the rest of the text).
pub(crate) fn request_key(seed: u64, salt: u64, i: u64) -> u64 {
    let run = mix(seed ^ mix(salt));
    (run << 20) ^ ((i ^ mix(run)) & 0xf_ffff)
}

/// A prefix of `tokens` tokens the requests share (`--shared-prefix TOKENS[,SHARE]`), on
/// `share` of them (0 to 1; the requests drawn by their number).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SharedPrefix {
    pub tokens: u64,
    pub share: f64,
}

impl std::str::FromStr for SharedPrefix {
    type Err = String;
    fn from_str(s: &str) -> Result<SharedPrefix, String> {
        let (tokens, share) = match s.split_once(',') {
            Some((t, sh)) => (t.trim(), Some(sh.trim())),
            None => (s.trim(), None),
        };
        let tokens: u64 = match tokens.parse() {
            Ok(t) if (1..=MAX_PROMPT_TOKENS).contains(&t) => t,
            _ => {
                return Err(format!(
                    "{s:?}: expected TOKENS[,SHARE], TOKENS from 1 to {MAX_PROMPT_TOKENS}"
                ));
            }
        };
        let share = match share.map(str::parse::<f64>) {
            None => 1.0,
            Some(Ok(v)) if (0.0..=1.0).contains(&v) => v,
            Some(_) => return Err(format!("{s:?}: SHARE must be a number from 0 to 1")),
        };
        Ok(SharedPrefix { tokens, share })
    }
}

impl SharedPrefix {
    /// Whether request `i` starts with the prefix: a seeded draw per request number.
    fn applies(&self, seed: u64, i: u64) -> bool {
        ((mix(seed ^ mix(i)) >> 11) as f64 / (1u64 << 53) as f64) < self.share
    }
}

/// How a run's synthetic prompts are drawn; [`SyntheticPrompts::salted`] makes each run's.
#[derive(Clone, Debug)]
pub struct SyntheticSpec {
    /// Prompt lengths in tokens, cycled over the requests.
    pub lengths: Arc<Vec<u64>>,
    pub seed: u64,
    pub shared: Option<SharedPrefix>,
    /// Sizes the prompts in the model's tokens when given.
    pub tokenizer: Option<Arc<TokenCounter>>,
}

/// The prompts of one run: request `i` is drawn when it is sent (no prompt is cycled, so a
/// run of any length has distinct prompts), the rest are the built-in ones.
pub struct SyntheticPrompts {
    spec: SyntheticSpec,
    salt: u64,
    inner: Arc<dyn PromptSet>,
}

impl SyntheticPrompts {
    /// A run's prompts, drawn with `salt`.
    pub fn salted(spec: SyntheticSpec, salt: u64, inner: Arc<dyn PromptSet>) -> SyntheticPrompts {
        SyntheticPrompts { spec, salt, inner }
    }

    /// Request `index`'s text.
    pub fn text(&self, index: usize) -> String {
        let s = &self.spec;
        let i = index as u64;
        let len = match s.lengths.len() {
            0 => 1,
            n => s.lengths[index % n].max(1),
        };
        let mut text = String::new();
        let mut own = len;
        if let Some(p) = s.shared.filter(|p| p.applies(s.seed ^ mix(self.salt), i)) {
            // One prefix per run: drawn from a key no request's has (all ones in the head).
            let words = p.tokens.min(len) as usize;
            text.push_str(&filler(
                request_key(s.seed, self.salt, 0xf_ffff) | 0xf_ffff,
                words,
            ));
            own = len - words as u64;
        }
        if own > 0 {
            let key = request_key(s.seed, self.salt, i);
            let sized = s.tokenizer.as_ref().and_then(|t| t.filler(own, key).ok());
            text.push_str(&sized.unwrap_or_else(|| filler(key, own as usize)));
        }
        text
    }
}

impl PromptSet for SyntheticPrompts {
    fn subagent(
        &self,
        _plan: &ValidatedPlan,
        index: usize,
        _own: &TaskText<'_>,
        _prior: &[PriorSection],
    ) -> Vec<ChatMessage> {
        vec![ChatMessage::user(self.text(index))]
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

    fn prompts(shared: Option<SharedPrefix>, salt: u64) -> SyntheticPrompts {
        let spec = SyntheticSpec {
            lengths: Arc::new(vec![40]),
            seed: 7,
            shared,
            tokenizer: None,
        };
        SyntheticPrompts::salted(spec, salt, Arc::new(planwave_prompts::Templates::builtin()))
    }

    fn common_words(a: &str, b: &str) -> usize {
        a.split(' ')
            .zip(b.split(' '))
            .take_while(|(x, y)| x == y)
            .count()
    }

    #[test]
    fn prompts_of_a_run_and_of_two_runs_share_no_long_prefix() {
        let (one, two) = (prompts(None, 0), prompts(None, 1));
        let texts: Vec<String> = (0..2000).map(|i| one.text(i)).collect();
        assert!(
            texts.iter().all(|t| t.len() == 120),
            "three characters a token"
        );
        let mut across = 0;
        for i in 0..texts.len() {
            // Two requests share k words only when their numbers agree mod 32^k.
            assert!(common_words(&texts[i], &texts[(i + 1) % texts.len()]) == 0);
            assert!(common_words(&texts[i], &texts[(i + 32) % texts.len()]) <= 1);
            across += common_words(&texts[i], &two.text(i));
        }
        // Another run's request of the same number: a chance word in common, no more.
        assert!(across < 200, "{across} words in common over 2000 requests");
        assert_eq!(
            one.text(5),
            prompts(None, 0).text(5),
            "seeded: reproducible"
        );
    }

    #[test]
    fn a_shared_prefix_is_on_the_share_of_requests_asked_for() {
        let all: SharedPrefix = "30".parse().expect("parses");
        let p = prompts(Some(all), 0);
        assert_eq!(common_words(&p.text(0), &p.text(1)), 30);
        assert_eq!(p.text(3).len(), 120, "the prefix is part of the length");
        let half = prompts(Some("30,0.5".parse().expect("parses")), 0);
        let with = (0..1000)
            .filter(|&i| common_words(&half.text(i), &p.text(0)) >= 30)
            .count();
        assert!((400..600).contains(&with), "{with}");
        for bad in ["0", "x", "10,1.5", "10,-1"] {
            assert!(bad.parse::<SharedPrefix>().is_err(), "{bad}");
        }
    }
}
