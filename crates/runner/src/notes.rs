//! Lines for the person running a job: planning attempts, warnings, servers that did not
//! start. The CLI prints them on stderr; a server would log them or send them to a client.

/// Where the runner's human-readable lines go.
pub trait Notes: Send + Sync {
    fn note(&self, line: &str);
}

/// Every line on stderr, as the CLI shows them.
pub struct Stderr;

impl Notes for Stderr {
    fn note(&self, line: &str) {
        eprintln!("{}", printable(line));
    }
}

/// `text` safe to print on a terminal: control characters other than line feed, tab and
/// carriage return (ESC, BEL, C1 controls, DEL) are shown as `\x1b`-style escapes, so text
/// from a plan or a model (ids, topics, errors) cannot clear the screen, retitle the window or
/// hide what follows. Files keep text as it is; only what is printed goes through this.
pub fn printable(text: &str) -> std::borrow::Cow<'_, str> {
    let escaped = planwave_engine::is_hiding_char;
    if !text.chars().any(escaped) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escaped(c) {
            let n = c as u32;
            if n <= 0xff {
                out.push_str(&format!("\\x{n:02x}"));
            } else {
                out.push_str(&format!("\\u{{{n:x}}}"));
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Lines are dropped (tests, embedding).
pub struct Silent;

impl Notes for Silent {
    fn note(&self, _line: &str) {}
}
