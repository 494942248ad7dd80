//! What one number of a load test's input may cost: every parser of workload input (the
//! token flags, traces, datasets, sessions, a tokenizer's sizing) checks its numbers
//! against these bounds where it reads them, so a typo or a hostile file is refused with
//! its flag or line named instead of asking for terabytes of prompt text or a wait of
//! centuries (issue 48: `--input-tokens 1e10` allocated 30 GB, a trace line `1e300`
//! panicked converting its time).

use std::time::Duration;

/// The longest prompt a load test makes, in tokens: above the context of any model served
/// today (a million tokens is about 3 MB of text).
pub const MAX_PROMPT_TOKENS: u64 = 1_000_000;

/// The tokens of every prompt a load test makes up and holds in memory at once (about
/// 300 MB of text): a trace's or sessions' prompts past it are refused, synthetic
/// prompts past it are fewer and cycled.
pub const MAX_PROMPT_TOKENS_TOTAL: u64 = 100_000_000;

/// The longest a trace may span, and the longest its replay may take after `--speed`:
/// a year (a published trace spans a day or a week).
pub const MAX_TRACE_SPAN: Duration = Duration::from_secs(366 * 86_400);

/// `--speed`'s range: from a thousand times slower to a million times faster.
pub const SPEED_RANGE: (f64, f64) = (1e-3, 1e6);

/// The most user turns one conversation may have (a turn depends on every earlier one of
/// its conversation, so the plan grows with the square of this).
pub const MAX_TURNS_PER_SESSION: u64 = 1_000;

/// The most filler words per token the tokenizer sizing tries before giving up: a
/// tokenizer whose count does not grow with the text would otherwise make it multiply its
/// guess without end.
pub(crate) const MAX_WORDS_PER_TOKEN: u64 = 16;

/// `--speed`: a finite factor within [`SPEED_RANGE`].
pub fn parse_speed(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(v) if in_speed_range(v) => Ok(v),
        _ => Err(speed_problem(&format!("{text:?}"))),
    }
}

/// A speed given as a number, checked as [`parse_speed`] checks text.
pub(crate) fn check_speed(v: f64) -> Result<f64, String> {
    if in_speed_range(v) {
        Ok(v)
    } else {
        Err(speed_problem(&v.to_string()))
    }
}

fn in_speed_range(v: f64) -> bool {
    (SPEED_RANGE.0..=SPEED_RANGE.1).contains(&v)
}

fn speed_problem(shown: &str) -> String {
    let (lo, hi) = SPEED_RANGE;
    format!("{shown} is not a speed from {lo} to {hi:e}")
}

/// The first `lengths` whose tokens fit [`MAX_PROMPT_TOKENS_TOTAL`] (at least one).
pub(crate) fn within_budget(mut lengths: Vec<u64>) -> Vec<u64> {
    let mut total = 0u64;
    let keep = lengths
        .iter()
        .take_while(|&&l| {
            total = total.saturating_add(l);
            total <= MAX_PROMPT_TOKENS_TOTAL
        })
        .count();
    lengths.truncate(keep.max(1));
    lengths
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::workload::dataset::{TokenCount, prompt_lengths};
    use crate::workload::trace::{TraceRequest, parse_trace, trace_arrivals};

    proptest! {
        /// What the parsers hand on is also bounded when built by hand: any mean and spread
        /// draw lengths within the bound, any times and speed replay or are refused.
        #[test]
        fn any_numbers_draw_and_replay_within_the_bounds(
            mean in any::<f64>(),
            spread in any::<f64>(),
            n in 0usize..64,
            seed in any::<u64>(),
            times in prop::collection::vec(any::<f64>(), 0..8),
            speed in any::<f64>(),
        ) {
            let lengths = prompt_lengths(&TokenCount { mean, spread }, n, seed);
            prop_assert!(lengths.iter().all(|l| (1..=MAX_PROMPT_TOKENS).contains(l)));
            let rows: Vec<TraceRequest> = times
                .iter()
                .map(|&at_s| TraceRequest { at_s, input_tokens: 1, output_tokens: None })
                .collect();
            if let Ok(at) = trace_arrivals(&rows, speed) {
                prop_assert!(at.iter().all(|d| *d <= MAX_TRACE_SPAN));
            }
        }

        /// Any text as a trace is requests or a problem, never a panic.
        #[test]
        fn any_text_is_a_trace_or_a_problem(text in "(TIMESTAMP,ContextTokens\n)?\\PC{0,200}") {
            if let Ok(rows) = parse_trace(&text) {
                prop_assert!(rows.iter().all(|r| r.input_tokens <= MAX_PROMPT_TOKENS));
            }
        }
    }

    #[test]
    fn speeds_outside_the_range_are_refused() {
        assert_eq!(parse_speed("2"), Ok(2.0));
        assert_eq!(parse_speed("0.5"), Ok(0.5));
        for bad in ["1e-300", "0", "-1", "NaN", "inf", "1e7", "x"] {
            assert_eq!(
                parse_speed(bad),
                Err(format!("{bad:?} is not a speed from 0.001 to 1e6")),
            );
        }
    }

    #[test]
    fn lengths_past_the_budget_are_left_out() {
        assert_eq!(within_budget(vec![5, 6]), vec![5, 6]);
        let big = MAX_PROMPT_TOKENS_TOTAL / 2 + 1;
        assert_eq!(within_budget(vec![big, big, 1]), vec![big]);
        assert_eq!(within_budget(vec![u64::MAX, 1]), vec![u64::MAX]);
    }
}
