//! The simulator's section text as it was written before it was assembled piece by piece
//! (`write!` into a `String`): kept for tests only, to pin the new text byte for byte.

use std::fmt::Write;

use planwave_plan::Lang;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

use super::text::{SOURCES_EN, SOURCES_ZH};
use planwave_llm::RequestContext;

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
