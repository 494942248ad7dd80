//! Data-quality checks of a completed section: a section that is too short, or that gives
//! no figure at all, is accepted but flagged on its task (failing it would block the tasks
//! that depend on it, for a fault a reader can judge). Pure.

use planwave_record::SectionWarning;

/// Below this many characters a section is flagged as short ("<300字").
pub const MIN_SECTION_CHARS: usize = 300;

/// The warnings of one section's text, in a fixed order (short first).
pub fn section_warnings(text: &str) -> Vec<SectionWarning> {
    let mut out = Vec::new();
    // Neither warning can apply once the body has both; the rest need not be read.
    let body = scan_until(text, MIN_SECTION_CHARS);
    if body.chars < MIN_SECTION_CHARS {
        out.push(SectionWarning::Short {
            chars: body.chars,
            min_chars: MIN_SECTION_CHARS,
        });
    }
    if !body.figures {
        out.push(SectionWarning::NoFigures);
    }
    out
}

/// What the checks need of a section's body.
struct Body {
    chars: usize,
    figures: bool,
}

/// The analysis itself, line by line: heading lines (`#`...) are left out, since a title is
/// not analysis and the 300-character minimum measures what the section says; each line is
/// trimmed, so indentation and line breaks do not count either. One pass: the checks run
/// over every section at the end of a run, and the separate `lines()` walks with a character
/// count per line were a twelfth of a zero-latency load test's instructions.
///
/// Characters are counted, not bytes (300 CJK characters count as 300). Quantitative data is
/// defined simply as a digit (ASCII or full-width) anywhere in the body: that covers
/// numbers, percentages, amounts, years. Not counted: headings (their `### 1.` numbering)
/// and the marker of an ordered list item (`1. `), which number the text rather than
/// measure anything.
#[cfg(test)]
fn scan(text: &str) -> Body {
    scan_until(text, usize::MAX)
}

/// [`scan`], stopped once the body has `enough` characters and a figure (`chars` is then a
/// lower bound).
fn scan_until(text: &str, enough: usize) -> Body {
    // Characters are bytes in ASCII text: checked once instead of counted line by line.
    let ascii = text.is_ascii();
    let mut body = Body {
        chars: 0,
        figures: false,
    };
    let mut start = 0;
    let ends = memchr::memchr_iter(b'\n', text.as_bytes()).chain(std::iter::once(text.len()));
    for end in ends {
        // A '\n' is a character boundary; a '\r' before it is trimmed as whitespace, as
        // `str::lines` would have dropped it.
        let line = trim(&text[start..end]);
        start = end + 1;
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        body.chars += if ascii {
            line.len()
        } else {
            line.chars().count()
        };
        body.figures = body.figures || has_digit(strip_list_marker(line));
        if body.figures && body.chars >= enough {
            break;
        }
    }
    body
}

/// `str::trim`, skipped when both ends are visible ASCII (most lines): only those bytes
/// rule out whitespace at either end, since any byte above 0x7F may belong to a Unicode space.
fn trim(line: &str) -> &str {
    let visible = |b: Option<&u8>| b.is_some_and(|b| (0x21..0x7F).contains(b));
    let bytes = line.as_bytes();
    if visible(bytes.first()) && visible(bytes.last()) {
        line
    } else {
        line.trim()
    }
}

/// An ASCII digit or a full-width one (`０`..`９`, U+FF10..U+FF19, encoded `EF BC 90`..`99`;
/// UTF-8 is self-synchronizing, so those bytes are that character wherever they occur).
fn has_digit(line: &str) -> bool {
    let b = line.as_bytes();
    b.iter().enumerate().any(|(i, &c)| {
        c.is_ascii_digit()
            || (c == 0xEF
                && b.get(i + 1) == Some(&0xBC)
                && b.get(i + 2).is_some_and(|d| (0x90..=0x99).contains(d)))
    })
}

/// `1. text` or `12) text` without its number.
fn strip_list_marker(line: &str) -> &str {
    let digits = line.len() - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let rest = &line[digits..];
    match rest.strip_prefix(['.', ')']) {
        Some(after) if digits > 0 && (after.is_empty() || after.starts_with(' ')) => after,
        _ => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The checks as first written (a `lines()` walk each): the one-pass scan must agree.
    mod reference {
        use super::super::strip_list_marker;

        fn body_lines(text: &str) -> impl Iterator<Item = &str> {
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
        }

        pub fn body_chars(text: &str) -> usize {
            body_lines(text).map(|l| l.chars().count()).sum()
        }

        pub fn has_figures(text: &str) -> bool {
            body_lines(text).any(|l| {
                let l = strip_list_marker(l);
                l.chars()
                    .any(|c| c.is_ascii_digit() || ('０'..='９').contains(&c))
            })
        }
    }

    /// Texts drawn from pieces that hit every edge: headings, list markers, ASCII and
    /// Unicode whitespace (vertical tab, NEL, no-break, ideographic space), `\r\n`, CJK,
    /// ASCII and full-width digits and their neighbours in UTF-8 (`＃`, `：`, U+FF0F, U+FF1A).
    fn varied_texts() -> Vec<String> {
        const PIECES: &[&str] = &[
            "#",
            "## ",
            "### 1. ",
            "1. ",
            "12) ",
            "3.",
            "7)",
            " ",
            "\t",
            "\u{b}",
            "\u{85}",
            "\u{a0}",
            "\u{3000}",
            "\r",
            "\n",
            "\r\n",
            "\n\n",
            "字",
            "分析",
            "a",
            "word ",
            "x",
            "0",
            "9",
            "３",
            "０",
            "９",
            "＃",
            "：",
            "\u{ff0f}",
            "\u{ff1a}",
            ".",
            ")",
            "—",
            "é",
            "Revenue grew 12% ",
            "## 标题\n",
            "\n- 2 rivals",
            "\u{1f600}",
        ];
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize
        };
        (0..4000)
            .map(|k| {
                let len = next() % (if k % 10 == 0 { 400 } else { 40 });
                (0..len).map(|_| PIECES[next() % PIECES.len()]).collect()
            })
            .collect()
    }

    #[test]
    fn the_one_pass_checks_agree_with_the_line_walks() {
        let mut texts = varied_texts();
        texts.extend(
            [
                "",
                "\n",
                "# only a heading",
                "1.",
                "12)",
                "1. ",
                "a\r",
                "\r\n2\r\n",
                "  ３ ",
                "\u{85}9\u{85}",
            ]
            .map(String::from),
        );
        let (mut short, mut no_figures) = (0, 0);
        for t in &texts {
            assert_eq!(body_chars(t), reference::body_chars(t), "{t:?}");
            assert_eq!(has_figures(t), reference::has_figures(t), "{t:?}");
            let w = section_warnings(t);
            // The warnings, from the scan stopped early, are those of the whole body.
            let chars = reference::body_chars(t);
            let mut want = Vec::new();
            if chars < MIN_SECTION_CHARS {
                want.push(SectionWarning::Short {
                    chars,
                    min_chars: MIN_SECTION_CHARS,
                });
            }
            if !reference::has_figures(t) {
                want.push(SectionWarning::NoFigures);
            }
            assert_eq!(w, want, "{t:?}");
            short += usize::from(w.iter().any(|w| !w.is_no_figures()));
            no_figures += usize::from(w.iter().any(SectionWarning::is_no_figures));
        }
        // Both outcomes of both checks are exercised.
        assert!(short > 0 && short < texts.len(), "{short}");
        assert!(no_figures > 0 && no_figures < texts.len(), "{no_figures}");
    }

    fn body_chars(text: &str) -> usize {
        scan(text).chars
    }

    fn has_figures(text: &str) -> bool {
        scan(text).figures
    }

    #[test]
    fn characters_are_counted_not_bytes_and_headings_do_not_count() {
        let zh = format!("## 标题很长很长\n\n{}\n", "字".repeat(299));
        assert_eq!(body_chars(&zh), 299);
        assert_eq!(
            section_warnings(&zh)[0],
            SectionWarning::Short {
                chars: 299,
                min_chars: 300
            }
        );
        let long = format!("## t\n\n{}1\n", "字".repeat(299));
        assert_eq!(section_warnings(&long), Vec::new());
    }

    #[test]
    fn numbers_percentages_and_amounts_are_figures_list_and_heading_numbers_are_not() {
        for yes in [
            "Revenue grew 12% in 2024.",
            "营收 ３ 亿元",
            "costs $5m",
            "- 2 rivals",
        ] {
            assert!(has_figures(yes), "{yes}");
        }
        for no in [
            "## 1. Outlook\n\nSteady.",
            "1. steady growth\n2) wide moat",
            "No numbers here.",
        ] {
            assert!(!has_figures(no), "{no}");
        }
    }
}
