//! The simulator's prose: sections and executive summaries in the plan's language.
//!
//! Figures are drawn from a seeded generator so a seed replays the same report; every text
//! says that its data is simulated, so a simulated report is never mistaken for research.

use std::fmt::Write;

use planwave_plan::Lang;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use planwave_llm::{RequestContext, SectionRef};

pub(super) const SOURCES_ZH: &[&str] = &[
    "公司年报",
    "Wind 金融终端",
    "交易所公告",
    "行业协会统计",
    "券商研报汇编",
];
pub(super) const SOURCES_EN: &[&str] = &[
    "annual report",
    "exchange filings",
    "industry association data",
    "broker research digest",
    "company investor deck",
];

/// Rough token count: CJK-heavy text is about 1.5 characters a token, English about 4.
pub fn estimate_tokens(chars: usize) -> u64 {
    (chars as u64).div_ceil(3).max(1)
}

/// The fixed parts of a section in one language; [`section`] puts the task's words and the
/// drawn figures between them.
struct Phrases {
    /// Around the task id, title and topic of the opening sentence.
    intro: [&'static str; 4],
    /// When no topic was given.
    no_topic: &'static str,
    /// The prerequisite sections: lead-in, separator, then around each id and title, tail.
    prior: [&'static str; 6],
    /// Around the list of data needs, and its separator.
    data: [&'static str; 3],
    /// Around the source, year, growth, share, question and year of an answer.
    answer: [&'static str; 7],
    /// Around the title and the source of the closing lines.
    close: [&'static str; 3],
    sources: &'static [&'static str],
}

const ZH: Phrases = Phrases {
    intro: [
        "本节（任务 ",
        "）围绕「",
        "」展开，服务于「",
        "」这一研究主题。以下分析基于模拟数据源，数值仅用于演示流程。\n\n",
    ],
    no_topic: "本研究",
    prior: [
        "在前序章节 ",
        "、",
        "任务 ",
        "「",
        "」",
        " 的结论基础上，本节进一步展开分析，避免重复其已覆盖的内容。\n\n",
    ],
    data: ["数据覆盖：", "、", "。\n\n"],
    answer: [
        "据",
        "（",
        "年）统计，相关指标同比变化 ",
        "%，所占比重约 ",
        "%。这一变化说明「",
        "」的答案取决于规模效应与成本控制的相互作用；若延续 ",
        " 年的趋势，未来两年该指标仍将处于行业前列，但波动性值得持续跟踪。\n\n",
    ],
    close: [
        "**小结**：综合以上数据，",
        "呈现出稳中有变的特征，建议在后续章节中结合财务与竞争维度交叉验证。\n\n> 来源：",
        "；（模拟 LLM 生成，数据为示例）\n",
    ],
    sources: SOURCES_ZH,
};

const EN: Phrases = Phrases {
    intro: [
        "This section (task ",
        ") covers \"",
        "\" as part of \"",
        "\". The analysis below is drawn from simulated data sources; its figures only demonstrate the workflow.\n\n",
    ],
    no_topic: "this research",
    prior: [
        "It builds on the findings of ",
        ", ",
        "task ",
        " (\"",
        "\")",
        " and does not repeat what they already cover.\n\n",
    ],
    data: ["Data covered: ", ", ", ".\n\n"],
    answer: [
        "According to the ",
        " (",
        "), the relevant metric changed ",
        "% year over year and accounts for about ",
        "% of the total. The answer to \"",
        "\" therefore hinges on scale effects versus cost control; if the ",
        " trend holds, the metric stays near the top of the industry, though its volatility deserves monitoring.\n\n",
    ],
    close: [
        "**Takeaway**: ",
        " shows steady change overall; later sections should cross-check it against the financial and competitive views.\n\n> Source: ",
        " (simulated LLM output; figures are illustrative)\n",
    ],
    sources: SOURCES_EN,
};

/// Appends `n` in decimal, as `{n}` prints it, without `core::fmt` (whose machinery was
/// most of the simulator's time writing a section).
fn push_uint(out: &mut String, n: u64) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// Appends a figure in tenths as `{:.1}` (or, with `plus`, `{:+.1}`) prints it divided by
/// ten, without float formatting.
fn push_tenths(out: &mut String, tenths: i32, plus: bool) {
    if tenths < 0 {
        out.push('-');
    } else if plus {
        out.push('+');
    }
    let abs = tenths.unsigned_abs();
    push_uint(out, u64::from(abs / 10));
    out.push('.');
    out.push(char::from(b'0' + (abs % 10) as u8));
}

fn pick<'a>(rng: &mut StdRng, items: &[&'a str]) -> &'a str {
    items[rng.random_range(0..items.len())]
}

/// A section for one task: names the task, answers each key question with simulated figures,
/// and builds on the prerequisite sections it was given. Assembled from fixed pieces: the
/// text is the same, byte for byte, as the `write!`-based version it replaced (pinned by
/// `tests::sections_are_byte_identical_to_the_formatted_ones`), so seeded runs replay.
pub fn section(ctx: &RequestContext, seed: u64) -> String {
    let mut rng = StdRng::seed_from_u64(seed);
    let title = if ctx.task_title.trim().is_empty() {
        "Section"
    } else {
        ctx.task_title.trim()
    };
    let id = ctx.task_id.as_deref().unwrap_or("?");
    let p = match ctx.lang {
        Lang::Zh => &ZH,
        Lang::En => &EN,
    };
    let topic = if ctx.topic.is_empty() {
        p.no_topic
    } else {
        ctx.topic.as_str()
    };
    let mut out = String::with_capacity(2048);
    for part in ["## ", title, "\n\n", p.intro[0], id, p.intro[1], title] {
        out.push_str(part);
    }
    for part in [p.intro[2], topic, p.intro[3]] {
        out.push_str(part);
    }
    if !ctx.sections.is_empty() {
        out.push_str(p.prior[0]);
        for (i, s) in ctx.sections.iter().enumerate() {
            let sep = if i == 0 { "" } else { p.prior[1] };
            for part in [sep, p.prior[2], &s.id, p.prior[3], &s.title, p.prior[4]] {
                out.push_str(part);
            }
        }
        out.push_str(p.prior[5]);
    }
    if !ctx.data_needs.is_empty() {
        out.push_str(p.data[0]);
        for (i, need) in ctx.data_needs.iter().enumerate() {
            out.push_str(if i == 0 { "" } else { p.data[1] });
            out.push_str(need);
        }
        out.push_str(p.data[2]);
    }
    if ctx.key_questions.is_empty() {
        let (before, after) = match ctx.lang {
            Lang::Zh => ("", "的核心结论是什么"),
            Lang::En => ("What is the key finding on ", "?"),
        };
        answer(&mut out, p, 0, [before, title, after], &mut rng);
    } else {
        for (i, q) in ctx.key_questions.iter().enumerate() {
            answer(&mut out, p, i, ["", q, ""], &mut rng);
        }
    }
    let source = pick(&mut rng, p.sources);
    for part in [p.close[0], title, p.close[1], source, p.close[2]] {
        out.push_str(part);
    }
    out
}

/// The answer to key question `i`: its heading and a paragraph of drawn figures (drawn in
/// this order: year, growth, share, source). The question comes in three parts, so the
/// default one is not built as a string of its own.
fn answer(out: &mut String, p: &Phrases, i: usize, question: [&str; 3], rng: &mut StdRng) {
    // i32, as the formatted version drew them: a draw of another width would change the
    // generator's stream.
    let year: i32 = 2022 + rng.random_range(0..3);
    let growth: i32 = rng.random_range(-80..=450);
    let share: i32 = rng.random_range(50..=650);
    let src = pick(rng, p.sources);
    out.push_str("### ");
    push_uint(out, i as u64 + 1);
    out.push_str(". ");
    for part in question
        .into_iter()
        .chain(["\n\n", p.answer[0], src, p.answer[1]])
    {
        out.push_str(part);
    }
    push_uint(out, year.unsigned_abs().into());
    out.push_str(p.answer[2]);
    push_tenths(out, growth, true);
    out.push_str(p.answer[3]);
    push_tenths(out, share, false);
    out.push_str(p.answer[4]);
    for part in question {
        out.push_str(part);
    }
    out.push_str(p.answer[5]);
    push_uint(out, year.unsigned_abs().into());
    out.push_str(p.answer[6]);
}

/// A section of one sentence and no figures (`--sim-terse`): short and unquantified, so the
/// data-quality checks flag it.
pub fn terse_section(ctx: &RequestContext) -> String {
    let title = ctx.task_title.trim();
    match ctx.lang {
        Lang::Zh => {
            format!("## {title}\n\n关于「{title}」，现有资料不足，暂无可靠结论（模拟）。\n")
        }
        Lang::En => format!(
            "## {title}\n\nOn \"{title}\", the sources at hand allow no firm conclusion yet (simulated).\n"
        ),
    }
}

/// An executive summary over the sections the integrator was given.
pub fn summary(ctx: &RequestContext, seed: u64) -> String {
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5u64);
    let done: Vec<&SectionRef> = ctx
        .sections
        .iter()
        .filter(|s| s.status == "completed")
        .collect();
    let missing: Vec<&SectionRef> = ctx
        .sections
        .iter()
        .filter(|s| s.status != "completed")
        .collect();
    let mut out = String::new();
    match ctx.lang {
        Lang::Zh => {
            let _ = write!(
                out,
                "本报告围绕「{}」展开，共 {} 个章节",
                ctx.topic,
                ctx.sections.len()
            );
            if missing.is_empty() {
                let _ = writeln!(out, "，全部完成。");
            } else {
                let ids: Vec<&str> = missing.iter().map(|s| s.id.as_str()).collect();
                let _ = writeln!(
                    out,
                    "，其中 {} 个已完成，任务 {} 未能完成，相关结论需谨慎看待。",
                    done.len(),
                    ids.join("、")
                );
            }
            for o in &ctx.objectives {
                let _ = writeln!(
                    out,
                    "- 针对目标「{o}」：主要发现见相关章节，整体判断为{}。",
                    pick(&mut rng, &["积极", "中性偏积极", "中性", "需关注风险"])
                );
            }
            let _ = write!(out, "\n（模拟 LLM 生成的摘要，数据为示例）");
            transitions(&mut out, &done, "\n\n### 章节衔接\n", |a, b| {
                format!("「{}」在「{}」的基础上继续展开。", b.title, a.title)
            });
        }
        Lang::En => {
            let _ = write!(
                out,
                "This report on \"{}\" has {} sections",
                ctx.topic,
                ctx.sections.len()
            );
            if missing.is_empty() {
                let _ = writeln!(out, ", all completed.");
            } else {
                let ids: Vec<&str> = missing.iter().map(|s| s.id.as_str()).collect();
                let _ = writeln!(
                    out,
                    "; {} completed and tasks {} did not, so related conclusions need care.",
                    done.len(),
                    ids.join(", ")
                );
            }
            for o in &ctx.objectives {
                let _ = writeln!(
                    out,
                    "- On \"{o}\": see the sections below; the overall view is {}.",
                    pick(
                        &mut rng,
                        &[
                            "positive",
                            "moderately positive",
                            "neutral",
                            "watch the risks"
                        ]
                    )
                );
            }
            let _ = write!(
                out,
                "\n(Summary written by the simulated LLM; figures are illustrative.)"
            );
            transitions(&mut out, &done, "\n\n### Transitions\n", |a, b| {
                format!("\"{}\" builds on \"{}\".", b.title, a.title)
            });
        }
    }
    out
}

/// One line per pair of adjacent completed sections, in the `- (A → B) sentence` form the
/// integrator prompts ask for (the engine places each before section B).
fn transitions(
    out: &mut String,
    done: &[&SectionRef],
    heading: &str,
    sentence: impl Fn(&SectionRef, &SectionRef) -> String,
) {
    if done.len() < 2 {
        return;
    }
    out.push_str(heading);
    for pair in done.windows(2) {
        let _ = write!(
            out,
            "\n- ({} → {}) {}",
            pair[0].id,
            pair[1].id,
            sentence(pair[0], pair[1])
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx(lang: Lang) -> RequestContext {
        RequestContext {
            lang,
            topic: "特斯拉公司深度分析".into(),
            task_id: Some("4".into()),
            task_title: "综合评估与投资建议".into(),
            key_questions: vec!["综合评价".into(), "投资价值判断".into()],
            sections: vec![SectionRef {
                id: "1".into(),
                title: "公司概况".into(),
                status: "completed".into(),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn section_names_task_questions_and_prerequisites() {
        let s = section(&ctx(Lang::Zh), 9);
        assert!(s.starts_with("## 综合评估与投资建议\n"));
        assert!(s.contains("任务 4") && s.contains("综合评价") && s.contains("投资价值判断"));
        assert!(s.contains("任务 1「公司概况」"));
        assert!(s.contains("模拟"));
        assert_eq!(s, section(&ctx(Lang::Zh), 9), "deterministic for a seed");
        assert_ne!(s, section(&ctx(Lang::Zh), 10));
    }

    #[test]
    fn tenths_print_as_the_float_formatting_did() {
        for t in -80..=650 {
            let f = t as f64 / 10.0;
            for (plus, want) in [(true, format!("{f:+.1}")), (false, format!("{f:.1}"))] {
                let mut s = String::new();
                push_tenths(&mut s, t, plus);
                assert_eq!(s, want, "{t}");
            }
        }
        for n in [0, 7, 10, 2024, 99_999, u64::MAX] {
            let mut s = String::new();
            push_uint(&mut s, n);
            assert_eq!(s, n.to_string());
        }
    }

    /// Contexts that take every branch of [`section`]: both languages, a blank title and
    /// topic, no task id, zero to three prerequisites and data needs, no key question (the
    /// default one) up to eleven (two-digit numbering).
    fn varied_contexts() -> Vec<RequestContext> {
        let mut out = Vec::new();
        for lang in [Lang::Zh, Lang::En] {
            for (k, n) in [0usize, 1, 3, 11].into_iter().enumerate() {
                let base = ctx(lang);
                out.push(RequestContext {
                    topic: if k == 1 {
                        String::new()
                    } else {
                        base.topic.clone()
                    },
                    task_id: (k != 2).then(|| format!("t_{k}")),
                    task_title: match k {
                        0 => "  ".into(),
                        1 => " Market \"size\" ".into(),
                        _ => base.task_title.clone(),
                    },
                    key_questions: (0..n).map(|q| format!("问题 {q}? q{q}")).collect(),
                    data_needs: (0..k).map(|d| format!("need {d}")).collect(),
                    sections: (0..k.min(3))
                        .map(|s| SectionRef {
                            id: format!("{s}"),
                            title: format!("Prior「{s}」"),
                            status: "completed".into(),
                        })
                        .collect(),
                    ..base
                });
            }
        }
        out
    }

    #[test]
    fn sections_are_byte_identical_to_the_formatted_ones() {
        for c in varied_contexts() {
            for seed in (0..64).chain([u64::MAX, 0x5eed_5eed]) {
                assert_eq!(
                    section(&c, seed),
                    super::super::text_reference::section(&c, seed),
                    "seed {seed}, {c:?}"
                );
            }
        }
    }

    #[test]
    fn a_seeded_section_is_pinned() {
        let c = RequestContext {
            lang: Lang::En,
            topic: "EV makers".into(),
            task_id: Some("2".into()),
            task_title: "Margins".into(),
            ..Default::default()
        };
        assert_eq!(
            section(&c, 42),
            "## Margins\n\nThis section (task 2) covers \"Margins\" as part of \"EV makers\". \
             The analysis below is drawn from simulated data sources; its figures only demonstrate \
             the workflow.\n\n### 1. What is the key finding on Margins?\n\nAccording to the \
             industry association data (2022), the relevant metric changed +19.9% year over year \
             and accounts for about 19.9% of the total. The answer to \"What is the key finding \
             on Margins?\" therefore hinges on scale effects versus cost control; if the 2022 \
             trend holds, the metric stays near the top of the industry, though its volatility \
             deserves monitoring.\n\n**Takeaway**: Margins shows steady change overall; later \
             sections should cross-check it against the financial and competitive views.\n\n> \
             Source: company investor deck (simulated LLM output; figures are illustrative)\n"
        );
    }

    #[test]
    fn a_terse_section_is_one_sentence_without_figures() {
        for lang in [Lang::Zh, Lang::En] {
            let s = terse_section(&ctx(lang));
            let body = s.lines().skip(1).collect::<String>();
            assert!(s.starts_with("## 综合评估与投资建议\n"), "{s}");
            assert!(body.chars().count() < 100, "{s}");
            assert!(!s.chars().any(|c| c.is_ascii_digit()), "{s}");
        }
    }

    #[test]
    fn english_section_is_english() {
        let s = section(&ctx(Lang::En), 1);
        assert!(s.contains("This section (task 4)") && s.contains("simulated"));
    }
}
