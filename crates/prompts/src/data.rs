//! The one path by which text planwave does not control enters a prompt: tool results, other
//! tasks' sections (model output built on them), an earlier step's result in an `llm_call`'s
//! prompt. Every prompt builder puts such text in a `<data source="…">` … `</data>` block,
//! after the rule that instructions inside are not to be followed, and takes it from here:
//!
//! - [`clean`] makes the wrapping hold: control and bidirectional formatting characters are
//!   dropped (they can hide text from a person reading the prompt, and a terminal would act
//!   on them), and the text can neither close its own wrapper nor open one of its own (a
//!   forged `<data source="planner">` would pass text off as coming from elsewhere): every
//!   `<data` and `</data`, in any case, loses its `<`;
//! - [`shares`] and [`cut`] fit texts to a context budget (estimated tokens), a cut text
//!   ending with a note saying so;
//! - [`block`] is a whole delimited block, for the prompts written without a template (a
//!   step's `llm_call`, [`crate::step_prompt`]); the templates write the same markup around
//!   variables this crate has cleaned (`render`, `reflect`), and a test checks that no other
//!   code writes it (`tests/isolation.rs`).
//!
//! Files keep the original text: only what a model reads is cleaned.

use std::borrow::Cow;
use std::sync::Arc;

use planwave_llm::{char_tokens, estimate_tokens};
use planwave_plan::Lang;

/// `text` as a `<data>` block of a prompt: cleaned, between the opening tag naming `source`
/// (itself stripped of anything that could end the tag) and the closing one.
pub fn block(source: &str, text: &str) -> String {
    let source: String = source
        .chars()
        .filter(|&c| !matches!(c, '"' | '<' | '>' | '\n') && !is_hiding_char(c))
        .collect();
    let text = clean(text);
    let mut out = String::with_capacity(text.len() + source.len() + 32);
    out.push_str("<data source=\"");
    out.push_str(&source);
    out.push_str("\">\n");
    out.push_str(text.trim_end_matches('\n'));
    out.push_str("\n</data>");
    out
}

/// Serializes a template variable holding text planwave does not control: [`clean`]ed, so
/// a variables struct cannot hand it to a template any other way.
pub(crate) fn serialize_clean<S: serde::Serializer>(
    text: &Option<String>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match text {
        Some(t) => s.serialize_some(&*clean(t)),
        None => s.serialize_none(),
    }
}

/// [`serialize_clean`] of a text that is always there.
pub(crate) fn serialize_clean_text<S: serde::Serializer>(
    text: &str,
    s: S,
) -> Result<S::Ok, S::Error> {
    s.serialize_str(&clean(text))
}

/// [`serialize_clean`] of a list of texts.
pub(crate) fn serialize_clean_list<S: serde::Serializer>(
    items: &&[String],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(items.iter().map(|t| clean(t)))
}

/// [`clean`] of a shared text: the same `Arc` when nothing is dropped (the usual case), so
/// a prompt's variables share it rather than copy it.
pub fn clean_shared(text: &Arc<str>) -> Arc<str> {
    match clean(text) {
        Cow::Borrowed(_) => Arc::clone(text),
        Cow::Owned(cleaned) => Arc::from(cleaned),
    }
}

/// `text` fit to be placed inside a `<data>` block of a prompt. Files keep the original.
/// Cleaning twice gives what cleaning once gave.
pub fn clean(text: &str) -> Cow<'_, str> {
    // The common case, clean text, is decided without copying it (lowercasing every prior
    // section and decoding every character was 7 % of a zero-latency chain's CPU).
    if !needs_cleaning(text) {
        return Cow::Borrowed(text);
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut rest = 0;
    // `<` is ASCII, so each match is a character boundary of `text`.
    for (at, _) in text.match_indices('<') {
        if !tag_at(b, at) {
            continue;
        }
        push_kept(&mut out, &text[rest..at]);
        out.push_str("&lt;");
        rest = at + 1;
    }
    push_kept(&mut out, &text[rest..]);
    Cow::Owned(out)
}

/// Whether `text` holds a character [`clean`] drops or a `<data` or `</data` in any case: one pass over
/// the bytes for both (two passes were ~2.9 k instructions for a 2 KB section, once per
/// prerequisite of every task).
fn needs_cleaning(text: &str) -> bool {
    scan(text.as_bytes(), true)
}

/// Whether `text` holds a character [`clean`] drops, checked on the UTF-8 bytes: C0 controls
/// but line feed and tab, DEL, C1 controls (`C2 80`-`C2 9F`) and the bidirectional overrides
/// and isolates (`E2 80 AA`-`AE`, `E2 81 A6`-`A9`), the same set as [`dropped`].
#[cfg(test)]
fn has_dropped(text: &str) -> bool {
    scan(text.as_bytes(), false)
}

/// [`has_dropped`], and with `closing` also whether a `<data` or `</data` (any case) starts
/// anywhere.
fn scan(b: &[u8], closing: bool) -> bool {
    // A branch-free test per 64-byte block (which the compiler vectorises) finds the blocks
    // holding a candidate byte; only those are decided byte by byte.
    let candidate = |c: u8| {
        (c < 0x20) & (c != b'\n') & (c != b'\t')
            | (c == 0x7f)
            | (c == 0xc2)
            | (c == 0xe2)
            | (closing & (c == b'<'))
    };
    b.chunks(64).enumerate().any(|(k, block)| {
        block.iter().fold(false, |acc, &c| acc | candidate(c))
            && (k * 64..k * 64 + block.len()).any(|i| match b[i] {
                b'<' => closing && tag_at(b, i),
                c => candidate(c) && dropped_at(b, i),
            })
    })
}

/// Whether `<data` or `</data` (any case) starts at byte `i`.
fn tag_at(b: &[u8], i: usize) -> bool {
    let name = if b.get(i + 1) == Some(&b'/') {
        i + 2
    } else {
        i + 1
    };
    b.get(name..name + 4)
        .is_some_and(|w| w.eq_ignore_ascii_case(b"data"))
}

/// Whether the character starting at byte `i` (a candidate lead byte) is dropped.
fn dropped_at(b: &[u8], i: usize) -> bool {
    match b[i] {
        0xc2 => b.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n)),
        0xe2 => match (b.get(i + 1), b.get(i + 2)) {
            (Some(0x80), Some(n)) => (0xaa..=0xae).contains(n),
            (Some(0x81), Some(n)) => (0xa6..=0xa9).contains(n),
            _ => false,
        },
        _ => true,
    }
}

fn push_kept(out: &mut String, s: &str) {
    out.extend(s.chars().filter(|&c| !dropped(c)));
}

fn dropped(c: char) -> bool {
    c == '\r' || is_hiding_char(c)
}

/// Control characters other than line feed, tab and carriage return, and the Unicode
/// bidirectional overrides and isolates: characters that make text act on a terminal or read
/// differently from what it holds. Prompts drop them (above); what the CLI prints shows them
/// escaped (`planwave_runner::ops::printable`).
pub fn is_hiding_char(c: char) -> bool {
    (c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Shares `budget` tokens among texts of the given token sizes, water-filling style: texts
/// smaller than an equal share stay whole and the rest split what is left equally.
pub fn shares(sizes: &[u64], budget: u64) -> Vec<u64> {
    let total: u64 = sizes.iter().sum();
    if total <= budget {
        return sizes.to_vec();
    }
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| (sizes[i], i));
    let mut out = vec![0; sizes.len()];
    let mut left = budget;
    let mut remaining = sizes.len() as u64;
    for i in order {
        let fair = left / remaining.max(1);
        let take = sizes[i].min(fair);
        out[i] = take;
        left -= take;
        remaining -= 1;
    }
    out
}

/// What a cut text ends with.
pub fn cut_note(lang: Lang) -> &'static str {
    match lang {
        Lang::Zh => "[……后文因上下文长度限制已截断]",
        Lang::En => "[... the rest was cut to fit the context budget]",
    }
}

/// The beginning of `text` worth at most `tokens` estimated tokens, ended at a line break
/// if one falls in the last fifth, plus a note that it was cut.
pub fn cut(text: &str, tokens: u64, lang: Lang) -> String {
    let note = cut_note(lang);
    // The note counts against the share too.
    let limit = tokens.saturating_sub(estimate_tokens(note) + 1);
    let end = if text.is_ascii() {
        // Every ASCII character costs a quarter token, so the loop below would stop after
        // 4 × limit of them: taken at once (the summary prompt cuts hundreds of sections).
        let quarters = usize::try_from(limit.saturating_mul(4)).unwrap_or(usize::MAX);
        text.len().min(quarters)
    } else {
        let limit = limit as f64;
        let mut used = 0.0f64;
        let mut end = 0;
        for (i, c) in text.char_indices() {
            used += char_tokens(c);
            if used > limit {
                break;
            }
            end = i + c.len_utf8();
        }
        end
    };
    let mut kept = &text[..end];
    if let Some(nl) = kept.rfind('\n')
        && nl * 5 >= end * 4
    {
        kept = &kept[..nl];
    }
    format!("{}\n\n{note}", kept.trim_end())
}

#[cfg(test)]
mod tests;
