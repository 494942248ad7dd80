//! The simulator's prose: sections and executive summaries in the plan's language.
//!
//! Figures are drawn from a seeded generator so a seed replays the same report; every text
//! says that its data is simulated, so a simulated report is never mistaken for research.

use std::fmt::Write;

use planwave_plan::Lang;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use crate::{RequestContext, SectionRef};

const SOURCES_ZH: &[&str] = &[
    "公司年报",
    "Wind 金融终端",
    "交易所公告",
    "行业协会统计",
    "券商研报汇编",
];
const SOURCES_EN: &[&str] = &[
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

/// A figure in tenths printed as `{:.1}` (or `{:+.1}`) prints it divided by ten, without
/// float formatting (which was a quarter of the simulator's time writing a section).
struct Tenths {
    tenths: i32,
    plus: bool,
}

impl Tenths {
    fn signed(tenths: i32) -> Tenths {
        Tenths { tenths, plus: true }
    }
    fn plain(tenths: i32) -> Tenths {
        Tenths {
            tenths,
            plus: false,
        }
    }
}

impl std::fmt::Display for Tenths {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let abs = self.tenths.unsigned_abs();
        let sign = match (self.tenths < 0, self.plus) {
            (true, _) => "-",
            (false, true) => "+",
            (false, false) => "",
        };
        write!(f, "{sign}{}.{}", abs / 10, abs % 10)
    }
}

fn pick<'a>(rng: &mut StdRng, items: &[&'a str]) -> &'a str {
    items[rng.random_range(0..items.len())]
}

/// A section for one task: names the task, answers each key question with simulated figures,
/// and builds on the prerequisite sections it was given.
pub fn section(ctx: &RequestContext, seed: u64) -> String {
    let mut rng = StdRng::seed_from_u64(seed);
    let title = if ctx.task_title.trim().is_empty() {
        "Section"
    } else {
        ctx.task_title.trim()
    };
    let id = ctx.task_id.as_deref().unwrap_or("?");
    let mut out = String::with_capacity(2048);
    let _ = writeln!(out, "## {title}\n");
    match ctx.lang {
        Lang::Zh => section_zh(&mut out, ctx, id, title, &mut rng),
        Lang::En => section_en(&mut out, ctx, id, title, &mut rng),
    }
    out
}

fn section_zh(out: &mut String, ctx: &RequestContext, id: &str, title: &str, rng: &mut StdRng) {
    let topic = if ctx.topic.is_empty() {
        "本研究"
    } else {
        ctx.topic.as_str()
    };
    let _ = writeln!(
        out,
        "本节（任务 {id}）围绕「{title}」展开，服务于「{topic}」这一研究主题。以下分析基于模拟数据源，数值仅用于演示流程。\n"
    );
    if !ctx.sections.is_empty() {
        out.push_str("在前序章节 ");
        for (i, s) in ctx.sections.iter().enumerate() {
            let sep = if i == 0 { "" } else { "、" };
            let _ = write!(out, "{sep}任务 {}「{}」", s.id, s.title);
        }
        out.push_str(" 的结论基础上，本节进一步展开分析，避免重复其已覆盖的内容。\n\n");
    }
    if !ctx.data_needs.is_empty() {
        let _ = writeln!(out, "数据覆盖：{}。\n", ctx.data_needs.join("、"));
    }
    let questions: Vec<String> = if ctx.key_questions.is_empty() {
        vec![format!("{title}的核心结论是什么")]
    } else {
        ctx.key_questions.clone()
    };
    for (i, q) in questions.iter().enumerate() {
        let year = 2022 + rng.random_range(0..3);
        let growth = Tenths::signed(rng.random_range(-80..=450));
        let share = Tenths::plain(rng.random_range(50..=650));
        let src = pick(rng, SOURCES_ZH);
        let _ = writeln!(out, "### {}. {q}\n", i + 1);
        let _ = writeln!(
            out,
            "据{src}（{year}年）统计，相关指标同比变化 {growth}%，所占比重约 {share}%。这一变化说明「{q}」的答案取决于规模效应与成本控制的相互作用；若延续 {year} 年的趋势，未来两年该指标仍将处于行业前列，但波动性值得持续跟踪。\n"
        );
    }
    let _ = writeln!(
        out,
        "**小结**：综合以上数据，{title}呈现出稳中有变的特征，建议在后续章节中结合财务与竞争维度交叉验证。\n\n> 来源：{}；（模拟 LLM 生成，数据为示例）",
        pick(rng, SOURCES_ZH)
    );
}

fn section_en(out: &mut String, ctx: &RequestContext, id: &str, title: &str, rng: &mut StdRng) {
    let topic = if ctx.topic.is_empty() {
        "this research"
    } else {
        ctx.topic.as_str()
    };
    let _ = writeln!(
        out,
        "This section (task {id}) covers \"{title}\" as part of \"{topic}\". The analysis below is drawn from simulated data sources; its figures only demonstrate the workflow.\n"
    );
    if !ctx.sections.is_empty() {
        out.push_str("It builds on the findings of ");
        for (i, s) in ctx.sections.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            let _ = write!(out, "{sep}task {} (\"{}\")", s.id, s.title);
        }
        out.push_str(" and does not repeat what they already cover.\n\n");
    }
    if !ctx.data_needs.is_empty() {
        let _ = writeln!(out, "Data covered: {}.\n", ctx.data_needs.join(", "));
    }
    let questions: Vec<String> = if ctx.key_questions.is_empty() {
        vec![format!("What is the key finding on {title}?")]
    } else {
        ctx.key_questions.clone()
    };
    for (i, q) in questions.iter().enumerate() {
        let year = 2022 + rng.random_range(0..3);
        let growth = Tenths::signed(rng.random_range(-80..=450));
        let share = Tenths::plain(rng.random_range(50..=650));
        let src = pick(rng, SOURCES_EN);
        let _ = writeln!(out, "### {}. {q}\n", i + 1);
        let _ = writeln!(
            out,
            "According to the {src} ({year}), the relevant metric changed {growth}% year over year and accounts for about {share}% of the total. The answer to \"{q}\" therefore hinges on scale effects versus cost control; if the {year} trend holds, the metric stays near the top of the industry, though its volatility deserves monitoring.\n"
        );
    }
    let _ = writeln!(
        out,
        "**Takeaway**: {title} shows steady change overall; later sections should cross-check it against the financial and competitive views.\n\n> Source: {} (simulated LLM output; figures are illustrative)",
        pick(rng, SOURCES_EN)
    );
}

/// A section of one sentence and no figures (`--sim-terse`): short and unquantified, as the
/// seed's data-quality rules describe.
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
            assert_eq!(Tenths::signed(t).to_string(), format!("{f:+.1}"), "{t}");
            assert_eq!(Tenths::plain(t).to_string(), format!("{f:.1}"), "{t}");
        }
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
