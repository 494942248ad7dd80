//! Goals that ask the same question in other words: "特斯拉公司深度分析" after
//! "深度分析特斯拉公司", "Analyze Tesla" after "Analyse Tesla", "请深度分析一下特斯拉公司".
//!
//! A goal becomes a sequence of units: each CJK character, each word of letters or digits
//! (lower case, British spellings and a plural `s` folded: `analyse` and `analyze`,
//! `organisation` and `organization` are one word), without the politeness around the
//! question (`请`, `帮我`, `一下`, `please`, `the`...). Two goals can share a plan only if
//! they have the same units (as sets): a unit that only one goal has is a subject of its own
//! (`nvidia` against `tesla`, `比亚迪` against `特斯拉`, `2024`, `财务`), and a plan for one
//! subject is never another's. Among goals with the same units the order still matters
//! ("特斯拉收购推特" is not "推特收购特斯拉"): the score is the Dice coefficient of their
//! unit bigrams, and a match needs [`THRESHOLD`] (measured: docs/guide/research.md).

use std::collections::{BTreeSet, HashMap};

/// The least score of a match; chosen between the pairs measured in docs/guide/research.md
/// (reordered questions score 0.75 and more, swapped roles 0.67 and less).
pub const THRESHOLD: f64 = 0.7;

/// What a cached goal has in common with the one asked.
#[derive(Clone, Debug, PartialEq)]
pub struct Similar {
    /// The cached entry's goal, as it was written.
    pub goal: String,
    pub score: f64,
}

/// The score of `a` against `b` (0 to 1), or `None` when their subjects differ (a unit
/// only one of them has).
pub fn similarity(a: &str, b: &str) -> Option<f64> {
    let (ua, ub) = (units(a), units(b));
    if ua.is_empty() || ub.is_empty() {
        return None;
    }
    let set = |u: &[String]| u.iter().cloned().collect::<BTreeSet<_>>();
    if set(&ua) != set(&ub) {
        return None;
    }
    Some(dice(&bigrams(&ua), &bigrams(&ub)))
}

/// Whether `a` may reuse the plan of `b`: same subjects and a score of at least
/// [`THRESHOLD`].
pub fn matches(a: &str, b: &str) -> Option<f64> {
    similarity(a, b).filter(|s| *s >= THRESHOLD)
}

/// Leading requests that do not change the question.
const ZH_OPENINGS: [&str; 6] = ["请你", "请", "帮我", "帮忙", "麻烦", "给我"];
/// Words that do not change the question, wherever they are.
const ZH_FILLERS: [&str; 1] = ["一下"];
const EN_FILLERS: [&str; 12] = [
    "please", "kindly", "the", "a", "an", "of", "for", "me", "can", "could", "would", "you",
];

fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x4E00..=0x9FFF | 0x3400..=0x4DBF | 0xF900..=0xFAFF)
}

/// The goal's units in order (see the module's documentation).
fn units(goal: &str) -> Vec<String> {
    let mut text = goal.trim().to_lowercase();
    loop {
        let t = text.trim_start();
        match ZH_OPENINGS.iter().find(|o| t.starts_with(**o)) {
            Some(o) => text = t[o.len()..].to_owned(),
            None => break,
        }
    }
    for f in ZH_FILLERS {
        text = text.replace(f, "");
    }
    let mut out = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() {
            let w = fold(word);
            if !EN_FILLERS.contains(&w.as_str()) {
                out.push(w);
            }
            word.clear();
        }
    };
    for c in text.chars() {
        if is_cjk(c) {
            flush(&mut word, &mut out);
            out.push(c.to_string());
        } else if c.is_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// One spelling per English word: British `-yse`, `-ise`, `-isation`, `-our` as American,
/// and a plural `s` dropped (`teslas`, `analyses`), the same on both sides of a comparison.
fn fold(word: &str) -> String {
    let mut w = word.to_owned();
    if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") {
        w.pop();
    }
    for (from, to) in [
        ("isation", "ization"),
        ("yse", "yze"),
        ("ysed", "yzed"),
        ("ysing", "yzing"),
        ("ise", "ize"),
        ("ised", "ized"),
        ("ising", "izing"),
        ("our", "or"),
    ] {
        if w.len() > from.len() + 2 && w.ends_with(from) {
            w.truncate(w.len() - from.len());
            w.push_str(to);
            break;
        }
    }
    w
}

/// Adjacent pairs of units; a single unit stands for itself.
fn bigrams(units: &[String]) -> HashMap<(String, String), usize> {
    let mut m = HashMap::new();
    if let [only] = units {
        *m.entry((only.clone(), String::new())).or_default() += 1;
    }
    for w in units.windows(2) {
        *m.entry((w[0].clone(), w[1].clone())).or_default() += 1;
    }
    m
}

/// Twice the shared bigrams over all bigrams (as multisets).
fn dice(a: &HashMap<(String, String), usize>, b: &HashMap<(String, String), usize>) -> f64 {
    let shared: usize = a
        .iter()
        .map(|(k, n)| (*n).min(b.get(k).copied().unwrap_or(0)))
        .sum();
    let total: usize = a.values().sum::<usize>() + b.values().sum::<usize>();
    if total == 0 {
        return 0.0;
    }
    2.0 * shared as f64 / total as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pairs docs/guide/research.md reports, with their scores.
    #[test]
    fn the_measured_pairs_score_as_documented() {
        let score = |a: &str, b: &str| similarity(a, b).map(|s| (s * 1000.0).round() / 1000.0);
        // Must match.
        assert_eq!(score("深度分析特斯拉公司", "深度分析特斯拉公司"), Some(1.0));
        assert_eq!(
            score("特斯拉公司深度分析", "深度分析特斯拉公司"),
            Some(0.875)
        );
        assert_eq!(
            score("请深度分析一下特斯拉公司", "深度分析特斯拉公司"),
            Some(1.0)
        );
        assert_eq!(score("帮我分析一下特斯拉公司", "分析特斯拉公司"), Some(1.0));
        assert_eq!(score("特斯拉分析", "分析特斯拉"), Some(0.75));
        assert_eq!(score("Analyze Tesla", "Analyse Tesla"), Some(1.0));
        assert_eq!(score("Please analyse Tesla.", "Analyze Tesla"), Some(1.0));
        assert_eq!(
            score(
                "Analyse the organisation of Tesla",
                "Analyze the organization of Tesla"
            ),
            Some(1.0)
        );
        // Must not match: the same units in another order.
        assert_eq!(score("特斯拉收购推特", "推特收购特斯拉"), Some(0.667));
        assert_eq!(
            score("Tesla acquires Twitter", "Twitter acquires Tesla"),
            Some(0.0)
        );
        assert_eq!(
            score("Tesla deep analysis", "Deep analysis of Tesla"),
            Some(0.5)
        );
        // Must not match: another subject, whatever the rest shares.
        for (a, b) in [
            ("Analyse Nvidia", "Analyse Tesla"),
            ("深度分析比亚迪公司", "深度分析特斯拉公司"),
            ("Analyse Tesla 2024", "Analyse Tesla"),
            ("深度分析特斯拉公司的财务", "深度分析特斯拉公司"),
            ("分析特斯拉公司", "深度分析特斯拉公司"),
            ("Analyse AMD", "Analyse AMC"),
            (
                "深度分析特斯拉公司2024年的财务状况与竞争格局",
                "深度分析比亚迪公司2024年的财务状况与竞争格局",
            ),
        ] {
            assert_eq!(score(a, b), None, "{a} / {b}");
            assert_eq!(matches(a, b), None);
        }
        assert!(matches("特斯拉公司深度分析", "深度分析特斯拉公司").is_some());
        assert!(matches("特斯拉收购推特", "推特收购特斯拉").is_none());
        assert_eq!(similarity("请", "一下"), None);
    }
}
