//! Answers that are not sections although they are text: a weak model looping on one
//! sentence, or leaking its chat template's special tokens (`<|im_start|>`, `<|im_end|>`,
//! `<end_of_turn>`...). Such an answer is not accepted: the attempt is retried, and the task
//! fails with the reason if the retries keep getting one. Pure.

/// A sentence counts as repeated from this many occurrences.
const REPEATS: usize = 3;
/// Sentences shorter than this are not counted (list markers, "Yes.", table cells).
const MIN_SENTENCE_CHARS: usize = 12;
/// Repeated sentences must make up at least this share of the text.
const REPEATED_SHARE: f64 = 0.4;

/// Why `text` is degenerate, or `None` for an ordinary answer.
pub(crate) fn degenerate(text: &str) -> Option<String> {
    if let Some(token) = special_token(text) {
        return Some(format!(
            "the answer contains the model's special token {token} (a chat-template leak), not a section"
        ));
    }
    if let Some((sentence, n)) = repeated_sentence(text) {
        return Some(format!(
            "the answer repeats one sentence {n} times (\"{sentence}\"), not a section"
        ));
    }
    if let Some(unit) = looping_tail(text) {
        return Some(format!(
            "the answer ends in a loop repeating \"{unit}\", not a section"
        ));
    }
    None
}

/// The first special token in `text`: `<|name|>` (ChatML, Llama 3, Phi) or Gemma's
/// `<start_of_turn>`/`<end_of_turn>`.
fn special_token(text: &str) -> Option<String> {
    for fixed in ["<start_of_turn>", "<end_of_turn>"] {
        if text.contains(fixed) {
            return Some(fixed.to_owned());
        }
    }
    let mut rest = text;
    while let Some(i) = rest.find("<|") {
        let after = &rest[i + 2..];
        if let Some(j) = after.find("|>") {
            let name = &after[..j];
            if !name.is_empty()
                && name.len() <= 32
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                return Some(format!("<|{name}|>"));
            }
        }
        rest = after;
    }
    None
}

/// The most repeated sentence (shortened for a message) and its count, when it repeats at
/// least [`REPEATS`] times and the repeats are a large part of the text.
fn repeated_sentence(text: &str) -> Option<(String, usize)> {
    let mut counts: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let total = text.chars().count().max(1);
    for s in text.split(['.', '!', '?', '。', '！', '？', '\n']) {
        let s = s.trim().to_lowercase();
        if s.chars().count() >= MIN_SENTENCE_CHARS {
            *counts.entry(s).or_default() += 1;
        }
    }
    let (sentence, n) = counts.into_iter().max_by_key(|(s, n)| (*n, s.len()))?;
    let share = (sentence.chars().count() * n) as f64 / total as f64;
    (n >= REPEATS && share >= REPEATED_SHARE).then(|| (short(&sentence), n))
}

/// A unit the text's end repeats at least four times in a row (a loop the output cap cut),
/// when the unit has words in it: separators such as `|---|---|` or `-----` do not count.
fn looping_tail(text: &str) -> Option<String> {
    let chars: Vec<char> = text.trim_end().chars().collect();
    for period in MIN_SENTENCE_CHARS..=200 {
        if chars.len() < period * 4 {
            break;
        }
        let end = chars.len();
        let unit = &chars[end - period..];
        let repeats = (1..4).all(|k| chars[end - (k + 1) * period..end - k * period] == *unit);
        if repeats && unit.iter().filter(|c| c.is_alphabetic()).count() >= 4 {
            return Some(short(&unit.iter().collect::<String>()));
        }
    }
    None
}

fn short(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_looping_answer_and_a_leaked_token_are_degenerate() {
        let looped = "Tesla makes cars. ".repeat(2)
            + &"The company is a leader in electric vehicles. ".repeat(8);
        assert!(
            degenerate(&looped)
                .expect("looped")
                .contains("repeats one sentence")
        );
        let leaked = "## Revenue\nRevenue grew 20% in 2023.<|im_end|>\n<|im_start|>user";
        assert!(degenerate(leaked).expect("leaked").contains("<|im_end|>"));
        let tail = format!(
            "## Costs\nCosts rose.\n{}",
            "and then the costs and then the ".repeat(6)
        );
        assert!(degenerate(&tail).is_some());
    }

    #[test]
    fn ordinary_sections_tables_and_rules_pass() {
        let section = "## Revenue\n\nRevenue grew 20% in 2023 to $96.8 billion. Margins fell to 18.2%.\n\n\
                       | year | revenue |\n|------|---------|\n| 2022 | 81.5 |\n| 2023 | 96.8 |\n\n\
                       ------------------------------------------------------------\n\
                       Deliveries rose 38%. The outlook depends on prices.";
        assert_eq!(degenerate(section), None);
        assert_eq!(degenerate("a | b |x<|"), None);
    }
}
