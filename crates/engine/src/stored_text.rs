//! Text from a model or a tool on its way into a run's files (a section file, the journal,
//! `report.md`, `report.html`): the characters that act on a terminal or hide what text says
//! are dropped, as for a prompt ([`planwave_prompts::data::is_hiding_char`], and a
//! carriage return, which can overwrite a line on a terminal). Anyone may `cat` a report;
//! an ESC sequence from a web page must not retitle their terminal or clear it. The plan's
//! own text (the user's) is kept as written; a tool's raw output stays in the tool call's
//! record, where JSON escapes it.

use std::borrow::Cow;

/// `text` with the characters a stored text must not hold dropped.
pub fn for_files(text: &str) -> Cow<'_, str> {
    // Clean text, the common case, is decided on the bytes without decoding: only a control
    // byte or the lead byte of a C1 control (`C2`) or of a bidirectional control (`E2`)
    // needs a look at the characters.
    let suspect = text
        .bytes()
        .any(|b| (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f || b == 0xc2 || b == 0xe2);
    if !suspect || !text.chars().any(dropped) {
        return Cow::Borrowed(text);
    }
    Cow::Owned(text.chars().filter(|&c| !dropped(c)).collect())
}

fn dropped(c: char) -> bool {
    c == '\r' || planwave_prompts::data::is_hiding_char(c)
}

/// [`for_files`] in place (a copy only when something is dropped).
pub fn clean_in_place(text: &mut std::sync::Arc<str>) {
    if let Cow::Owned(clean) = for_files(text) {
        *text = clean.into();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_are_dropped_and_other_text_kept() {
        assert_eq!(
            for_files("a\u{1b}]0;x\u{7}b\r\n\u{202e}c\u{85}d\te — 中"),
            "a]0;xb\ncd\te — 中"
        );
        assert!(matches!(for_files("plain — text 中\n\t"), Cow::Borrowed(_)));
    }
}
