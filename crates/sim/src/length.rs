//! The answer's length as a request bounds it (`max_tokens`, and vLLM's `ignore_eos`, which
//! benchmark clients send to get exactly the length they ask for).
//!
//! Tokens are counted as the simulator counts them everywhere ([`super::text::estimate_tokens`]:
//! three characters a token), so a bounded answer's `usage` says what was asked.

/// Characters per simulated token (as `text::estimate_tokens` counts them).
const CHARS_PER_TOKEN: usize = 3;

/// The context the simulated model claims, in tokens (`max_model_len` in `/v1/models`):
/// the most an answer may be asked for. `sim-llm serve` refuses a larger `max_tokens` with
/// a 400, as OpenAI and vLLM do; [`AnswerLength::fit`] never writes more whatever it is
/// given (`max_tokens` 2^64-1 with `ignore_eos` once asked it for an endless answer).
pub const MAX_MODEL_LEN: u64 = 131_072;

/// Why a request's `max_tokens` is refused, as OpenAI words it; `None` when it fits the
/// model's context.
pub fn max_tokens_problem(max_tokens: Option<u64>) -> Option<String> {
    let max = max_tokens.filter(|&m| m > MAX_MODEL_LEN)?;
    Some(format!(
        "max_tokens is too large: {max}. This model supports at most {MAX_MODEL_LEN} completion tokens, whereas you provided {max}."
    ))
}

/// How long an answer may (or must) be.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnswerLength {
    /// At most this many output tokens; `None`: the answer as written.
    pub max_tokens: Option<u64>,
    /// Exactly `max_tokens`: a shorter answer is continued (vLLM's `ignore_eos`).
    pub exact: bool,
}

impl AnswerLength {
    /// `content` cut (or, when exact, continued) to the bound, and whether it was cut, as
    /// a model stopped by its token limit would report (`finish_reason: "length"`).
    pub fn fit(&self, content: String) -> (String, bool) {
        let Some(max) = self.max_tokens else {
            return (content, false);
        };
        let limit = usize::try_from(max.min(MAX_MODEL_LEN))
            .unwrap_or(usize::MAX)
            .saturating_mul(CHARS_PER_TOKEN);
        let chars = planwave_llm::char_count(&content);
        if chars > limit {
            let cut = content
                .char_indices()
                .nth(limit)
                .map_or(content.len(), |(i, _)| i);
            return (content[..cut].to_owned(), true);
        }
        if !self.exact || content.is_empty() || chars == limit {
            return (content, false);
        }
        // Continued with its own text, as a model that ignores its end-of-sequence token
        // keeps writing: the length is what matters to the benchmark, not the words.
        let mut out = String::with_capacity(limit + CHARS_PER_TOKEN);
        let mut written = 0usize;
        'fill: loop {
            for c in content.chars().chain(std::iter::once(' ')) {
                if written == limit {
                    break 'fill;
                }
                out.push(c);
                written += 1;
            }
        }
        (out, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bound_cuts_long_answers_and_leaves_short_ones() {
        let bound = AnswerLength {
            max_tokens: Some(2),
            exact: false,
        };
        assert_eq!(bound.fit("abcdefghij".into()), ("abcdef".into(), true));
        assert_eq!(bound.fit("abc".into()), ("abc".into(), false));
        assert_eq!(
            AnswerLength::default().fit("abcdefghij".into()),
            ("abcdefghij".into(), false)
        );
    }

    #[test]
    fn exact_continues_a_short_answer_to_the_bound_in_whole_characters() {
        let exact = AnswerLength {
            max_tokens: Some(4),
            exact: true,
        };
        let (text, _) = exact.fit("特斯拉".into());
        assert_eq!(text.chars().count(), 12);
        assert!(text.starts_with("特斯拉 特斯拉"));
        assert_eq!(exact.fit(String::new()).0, "");
    }

    #[test]
    fn no_bound_writes_more_than_the_model_s_context() {
        let endless = AnswerLength {
            max_tokens: Some(u64::MAX),
            exact: true,
        };
        let (text, cut) = endless.fit("abc".into());
        assert_eq!(text.len() as u64, MAX_MODEL_LEN * 3);
        assert!(cut);
        assert!(max_tokens_problem(Some(u64::MAX)).is_some());
        assert_eq!(max_tokens_problem(Some(MAX_MODEL_LEN)), None);
        assert_eq!(max_tokens_problem(None), None);
    }
}
