//! Finding the one JSON value in model output: BOM, prose before and after, ``` fences.
//!
//! Models wrap their JSON in prose that may itself contain braces, so every `{`/`[` is a
//! candidate start. Each candidate is parsed as ONE value with serde_json's stream
//! deserializer (trailing text is ignored) and serde's default recursion limit, which is
//! what keeps absurdly nested input off the stack: nothing here recurses on user data.

use serde_json::error::Category;
use serde_json::{Deserializer, Value};

use super::ParseError;

/// Parse attempts per input. Prose candidates fail within a few bytes, and candidates
/// inside an attempted value are skipped, so with this cap huge garbage stays linear.
const MAX_CANDIDATES: usize = 64;

pub(super) fn extract(text: &str) -> Result<Value, ParseError> {
    // Editors hide the BOM, so positions are reported as if it were not there.
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let mut budget = MAX_CANDIDATES;

    let mut fenced = Scan::default();
    for (start, end) in json_fences(text) {
        fenced.scan(text, start, end, &mut budget);
    }
    let fenced_best = match fenced.best {
        Some(Found {
            result: Ok(value), ..
        }) => return Ok(value),
        other => other,
    };

    // No fence, or its JSON is broken. A fence can also be cut short by a "```" inside a
    // JSON string (a code parameter), which the whole-text scan parses straight through.
    let mut whole = Scan::default();
    whole.scan(text, 0, text.len(), &mut budget);
    // Only a value that gets further than the fence's failure overrides it; the fence's own
    // error (say, truncation at its closing line) is more precise than a whole-text one.
    let best = match (fenced_best, whole.best) {
        (Some(f), Some(w)) if w.result.is_ok() && w.extent > f.extent => Some(w),
        (Some(f), _) => Some(f),
        (None, w) => w,
    };
    match best {
        Some(Found {
            result: Ok(value), ..
        }) => Ok(value),
        Some(Found {
            result: Err(failure),
            ..
        }) => Err(failure.into_error(text)),
        // Only prose braces: report the first `{`, the likeliest intended start.
        None => match whole.first_prose_brace.or(fenced.first_prose_brace) {
            Some(failure) => Err(failure.into_error(text)),
            None => Err(ParseError::NoJson),
        },
    }
}

/// Content ranges of fenced blocks that hold JSON: tagged `json` (or `json5`, `jsonc`), or
/// untagged with content starting like JSON. An unclosed fence runs to the end of the text,
/// which is how truncated output usually looks.
fn json_fences(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(found) = text[pos..].find("```") {
        let info_start = pos + found + 3;
        let Some(nl) = text[info_start..].find('\n') else {
            break;
        };
        let info = text[info_start..info_start + nl].trim();
        let content_start = info_start + nl + 1;
        let content_end = text[content_start..]
            .find("```")
            .map_or(text.len(), |i| content_start + i);
        let content = text[content_start..content_end].trim_start();
        let tagged_json = info.len() >= 4 && info.as_bytes()[..4].eq_ignore_ascii_case(b"json");
        let untagged_json =
            info.is_empty() && (content.starts_with('{') || content.starts_with('['));
        if tagged_json || untagged_json {
            out.push((content_start, content_end));
        }
        pos = (content_end + 3).min(text.len());
    }
    out
}

/// The outcome of the candidates of one scan.
#[derive(Default)]
struct Scan {
    /// The largest value, or the JSON-looking failure that got furthest.
    best: Option<Found>,
    /// The first `{` that turned out to be prose, for the error when nothing else exists.
    first_prose_brace: Option<Failure>,
}

struct Found {
    /// Bytes covered: the whole value, or up to the error for a failure.
    extent: usize,
    result: Result<Value, Failure>,
}

impl Scan {
    fn offer(&mut self, extent: usize, result: Result<Value, Failure>) {
        // Strictly larger wins, so ties keep the earlier candidate.
        if self.best.as_ref().is_none_or(|b| extent > b.extent) {
            self.best = Some(Found { extent, result });
        }
    }

    /// Tries candidate starts in `text[from..to]`, parsing each no further than `to`.
    fn scan(&mut self, text: &str, from: usize, to: usize, budget: &mut usize) {
        let bytes = text.as_bytes();
        let mut pos = from;
        while pos < to && *budget > 0 {
            let Some(off) = bytes[pos..to].iter().position(|&c| c == b'{' || c == b'[') else {
                break;
            };
            let start = pos + off;
            *budget -= 1;
            // `start` is an ASCII byte and `to` is a char boundary, so this slice is valid.
            let slice = &text[start..to];
            let mut stream = Deserializer::from_str(slice).into_iter::<Value>();
            match stream.next() {
                Some(Ok(value)) => {
                    let len = stream.byte_offset();
                    // `[1]` and `[1, 2]` are citations in prose; neither a plan nor an answer
                    // is an array of scalars, so only structured values count.
                    if !is_scalar_array(&value) {
                        self.offer(len, Ok(value));
                    }
                    // Objects nested inside a value are never plans of their own.
                    pos = start + len.max(1);
                }
                Some(Err(err)) => {
                    let eof = err.classify() == Category::Eof;
                    if !eof && !looks_like_json(&bytes[start + 1..to], bytes[start]) {
                        if bytes[start] == b'{' && self.first_prose_brace.is_none() {
                            self.first_prose_brace = Some(Failure::new(start, slice, &err));
                        }
                        pos = start + 1;
                        continue;
                    }
                    let failure = Failure::new(start, slice, &err);
                    let failed_at = failure.offset;
                    self.offer(failed_at - start, Err(failure));
                    if eof {
                        // The value would have run past `to`: everything after is inside it.
                        break;
                    }
                    // Skip the broken value whole, or a nested object after the error would
                    // be mistaken for the plan.
                    pos = balanced_end(bytes, start, to).max(failed_at).max(start + 1);
                }
                None => break,
            }
        }
    }
}

fn is_scalar_array(value: &Value) -> bool {
    match value {
        Value::Array(items) => !items.iter().any(|v| v.is_object() || v.is_array()),
        _ => false,
    }
}

/// Whether the text after an opening bracket reads like JSON rather than prose: `{tasks}`
/// and `[see below]` are prose and skipped cheaply, `{"` and `[[` are worth reporting.
fn looks_like_json(after: &[u8], open: u8) -> bool {
    match after.iter().find(|c| !c.is_ascii_whitespace()) {
        None => true,
        Some(&c) if open == b'{' => c == b'"' || c == b'}',
        Some(&c) => matches!(c, b'{' | b'[' | b'"' | b']' | b'-' | b'0'..=b'9'),
    }
}

/// End of the bracketed region starting at `start` (string-aware), or `to` if it never closes.
fn balanced_end(bytes: &[u8], start: usize, to: usize) -> usize {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &c) in bytes.iter().enumerate().take(to).skip(start) {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
            continue;
        }
        match c {
            b'"' => in_string = true,
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    to
}

/// A candidate that failed, with its error located in the whole text.
struct Failure {
    /// Byte offset in the whole text just past the byte where serde stopped.
    offset: usize,
    kind: FailureKind,
    msg: String,
}

enum FailureKind {
    Truncated,
    TooDeep,
    Syntax,
}

impl Failure {
    fn new(start: usize, slice: &str, err: &serde_json::Error) -> Failure {
        let offset = start + offset_in(slice, err.line(), err.column());
        let full = err.to_string();
        // serde appends its own position, which is relative to the candidate: drop it.
        let suffix = format!(" at line {} column {}", err.line(), err.column());
        let msg = full
            .strip_suffix(suffix.as_str())
            .unwrap_or(&full)
            .to_owned();
        let kind = if err.classify() == Category::Eof {
            FailureKind::Truncated
        } else if msg.starts_with("recursion limit exceeded") {
            FailureKind::TooDeep
        } else {
            FailureKind::Syntax
        };
        Failure { offset, kind, msg }
    }

    fn into_error(self, text: &str) -> ParseError {
        let (line, column) = line_col(text, self.offset);
        match self.kind {
            FailureKind::Truncated => ParseError::Truncated {
                line,
                column,
                msg: self.msg,
            },
            FailureKind::TooDeep => ParseError::TooDeep { line, column },
            FailureKind::Syntax => ParseError::Syntax {
                line,
                column,
                msg: self.msg,
            },
        }
    }
}

/// Byte offset in `slice` of serde's 1-based `line` and `column` (bytes consumed on the line).
fn offset_in(slice: &str, line: usize, column: usize) -> usize {
    let line_start = if line <= 1 {
        0
    } else {
        slice
            .bytes()
            .enumerate()
            .filter(|&(_, c)| c == b'\n')
            .nth(line - 2)
            .map_or(slice.len(), |(i, _)| i + 1)
    };
    (line_start + column).min(slice.len())
}

/// 1-based line and character column of the character ending at byte `offset` of `text`.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let bytes = text.as_bytes();
    let line_start = bytes[..offset]
        .iter()
        .rposition(|&c| c == b'\n')
        .map_or(0, |i| i + 1);
    let line = 1 + bytes[..line_start].iter().filter(|&&c| c == b'\n').count();
    // `offset` may fall inside a multi-byte character; count the characters that start
    // before it, which is the 1-based column of the character serde stopped on.
    let column = text[line_start..]
        .char_indices()
        .take_while(|&(i, _)| i < offset - line_start)
        .count();
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters_not_bytes() {
        let text = "ab\n特斯拉{x";
        // '{' is byte 12 (three 3-byte characters follow the newline at byte 2); 13 is past it.
        assert_eq!(line_col(text, 13), (2, 4));
        assert_eq!(line_col(text, 0), (1, 0));
        assert_eq!(line_col(text, 3), (2, 0));
    }

    #[test]
    fn offset_in_follows_serde_lines() {
        let slice = "{\n  \"a\": 1,\n  x";
        assert_eq!(offset_in(slice, 1, 1), 1);
        assert_eq!(offset_in(slice, 3, 3), slice.len());
    }

    #[test]
    fn fences_tagged_untagged_and_unclosed() {
        let text = "a\n```json\n{\"x\":1}\n```\n```python\n{}\n```\n```\n[1]\n```\n```JSON\n{";
        let fences = json_fences(text);
        let contents: Vec<&str> = fences.iter().map(|&(a, b)| text[a..b].trim()).collect();
        assert_eq!(contents, vec!["{\"x\":1}", "[1]", "{"]);
    }

    #[test]
    fn balanced_end_skips_strings() {
        let b = br#"{"a": "}{", "b": [1]} tail"#;
        assert_eq!(balanced_end(b, 0, b.len()), 21);
        assert_eq!(balanced_end(b"{{", 0, 2), 2);
    }
}
