//! The simulator's planner: a deterministic, plausible research plan for a goal, in the goal's
//! language, and scripted planner faults so the repair loop can be tested without a model.

use planwave_plan::Lang;
use serde_json::{Value, json};

/// What the simulated planner does wrong on a given planning attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlannerFault {
    /// The JSON stops in the middle (a model that ran out of tokens).
    Truncated,
    /// Task 1 depends on the last task, closing a cycle.
    Cycle,
    /// A task depends on an id that does not exist.
    UnknownDependency,
    /// Prose only, no JSON at all.
    Prose,
    /// A plan with an empty task list.
    NoTasks,
}

impl std::str::FromStr for PlannerFault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "truncated" => Ok(Self::Truncated),
            "cycle" => Ok(Self::Cycle),
            "unknown-dep" | "unknown_dependency" | "unknown-dependency" => {
                Ok(Self::UnknownDependency)
            }
            "prose" => Ok(Self::Prose),
            "no-tasks" | "empty" => Ok(Self::NoTasks),
            o => Err(format!(
                "unknown planner fault {o:?} (expected truncated, cycle, unknown-dep, prose or no-tasks)"
            )),
        }
    }
}

/// Whether a goal names nothing to research: only verbs and fillers ("分析一下",
/// "analyse this"), so a model would ask what it is about.
pub fn vague(goal: &str) -> bool {
    let fillers = [
        "",
        "一下",
        "这个",
        "那个",
        "它",
        "下",
        "this",
        "that",
        "it",
        "something",
        "stuff",
    ];
    let bare = goal
        .trim()
        .trim_end_matches(['。', '.', '!', '！', '?', '？'])
        .to_lowercase();
    let verbs = [
        "analyze", "analyse", "research", "study", "evaluate", "assess", "分析", "研究", "调研",
    ];
    let s = subject(goal).to_lowercase();
    let stripped = if s == bare {
        // `subject` keeps a goal it would strip to nothing.
        verbs
            .iter()
            .find_map(|v| bare.strip_prefix(v))
            .map_or(s.clone(), |rest| rest.trim().to_owned())
    } else {
        s
    };
    fillers.contains(&stripped.as_str())
}

/// The questions the simulated planner asks about a vague goal.
pub fn questions(lang: Lang) -> Value {
    match lang {
        Lang::Zh => json!({"questions": [
            "您想分析哪家公司、哪个行业或哪个主题？",
            "分析的重点是什么（例如财务表现、竞争格局、投资价值）？"
        ]}),
        Lang::En => json!({"questions": [
            "Which company, industry or topic should be analysed?",
            "What should the analysis focus on (financials, competition, investment view)?"
        ]}),
    }
}

/// The subject of a goal: "深度分析特斯拉公司" -> "特斯拉公司", "Deep analysis of Tesla" -> "Tesla".
pub fn subject(goal: &str) -> String {
    let g = goal
        .trim()
        .trim_end_matches(['。', '.', '!', '！', '?', '？']);
    let zh_prefixes = [
        "请",
        "帮我",
        "深度分析",
        "深入分析",
        "全面分析",
        "详细分析",
        "分析一下",
        "分析",
        "研究一下",
        "研究",
        "调研",
        "评估",
        "解读",
    ];
    let en_prefixes = [
        "please ",
        "a deep analysis of ",
        "deep analysis of ",
        "an analysis of ",
        "analysis of ",
        "deeply analyze ",
        "deeply analyse ",
        "analyze ",
        "analyse ",
        "research ",
        "study ",
        "evaluate ",
        "assess ",
    ];
    let mut s = g.to_owned();
    loop {
        let before = s.clone();
        for p in zh_prefixes {
            if let Some(rest) = s.strip_prefix(p) {
                s = rest.trim().to_owned();
            }
        }
        for p in en_prefixes {
            if s.to_ascii_lowercase().starts_with(p) {
                s = s[p.len()..].trim().to_owned();
            }
        }
        if s == before {
            break;
        }
    }
    if s.is_empty() { g.to_owned() } else { s }
}

/// Five chapter-level tasks with hints; dependencies are direct only and the longest chain
/// is three tasks (1 -> 4 -> 5), following the planning rules the prompts give real models.
pub fn plan(goal: &str, lang: Lang) -> Value {
    let s = subject(goal);
    match lang {
        Lang::Zh => json!({
            "research_type": "company",
            "topic": format!("{s}深度分析"),
            "objectives": [
                format!("全面评估{s}的业务模式与竞争优势"),
                "分析财务表现与增长驱动因素",
                "评估风险因素与未来展望"
            ],
            "tasks": [
                {"id": 1, "description": format!("{s}概况与业务模式分析"), "dependencies": [],
                 "hints": {"data_needs": ["公司背景", "主营业务", "收入结构"],
                           "key_questions": ["核心产品线是什么", "收入结构如何"], "suggested_tools": []}},
                {"id": 2, "description": "财务表现与关键指标分析", "dependencies": [],
                 "hints": {"data_needs": ["近3年营收与利润", "毛利率", "现金流"],
                           "key_questions": ["盈利能力趋势", "财务健康度"], "suggested_tools": []}},
                {"id": 3, "description": "竞争格局与市场地位", "dependencies": [],
                 "hints": {"data_needs": ["主要竞争对手", "市场份额"],
                           "key_questions": ["主要竞争对手有哪些", "差异化优势在哪里"], "suggested_tools": []}},
                {"id": 4, "description": "风险因素与增长前景", "dependencies": [1, 2],
                 "hints": {"data_needs": ["行业政策", "管理层指引"],
                           "key_questions": ["最大的经营风险是什么", "未来增长动力来自哪里"], "suggested_tools": []}},
                {"id": 5, "description": "综合评估与投资建议", "dependencies": [3, 4],
                 "hints": {"data_needs": ["估值水平", "分析师观点"],
                           "key_questions": ["综合评价", "投资价值判断"], "suggested_tools": []}}
            ]
        }),
        Lang::En => json!({
            "research_type": "company",
            "topic": format!("In-depth analysis of {s}"),
            "objectives": [
                format!("Assess {s}'s business model and competitive advantages"),
                "Analyse financial performance and growth drivers",
                "Evaluate risks and outlook"
            ],
            "tasks": [
                {"id": 1, "description": format!("{s}: company overview and business model"), "dependencies": [],
                 "hints": {"data_needs": ["company background", "main businesses", "revenue mix"],
                           "key_questions": ["What are the core product lines?", "How is revenue composed?"], "suggested_tools": []}},
                {"id": 2, "description": "Financial performance and key metrics", "dependencies": [],
                 "hints": {"data_needs": ["revenue and profit, last 3 years", "gross margin", "cash flow"],
                           "key_questions": ["How is profitability trending?", "How healthy is the balance sheet?"], "suggested_tools": []}},
                {"id": 3, "description": "Competitive landscape and market position", "dependencies": [],
                 "hints": {"data_needs": ["main competitors", "market share"],
                           "key_questions": ["Who are the main competitors?", "What differentiates it?"], "suggested_tools": []}},
                {"id": 4, "description": "Risks and growth outlook", "dependencies": [1, 2],
                 "hints": {"data_needs": ["regulation", "management guidance"],
                           "key_questions": ["What is the largest operating risk?", "Where will growth come from?"], "suggested_tools": []}},
                {"id": 5, "description": "Overall assessment and investment view", "dependencies": [3, 4],
                 "hints": {"data_needs": ["valuation", "analyst views"],
                           "key_questions": ["Overall assessment", "Is it worth investing in?"], "suggested_tools": []}}
            ]
        }),
    }
}

/// The planner's raw answer for a planning attempt, with `fault` applied.
pub fn answer(goal: &str, lang: Lang, fault: Option<PlannerFault>) -> String {
    answer_with_tools(goal, lang, fault, &[])
}

/// [`answer`] when tools are available: the financial task (task 2) suggests the first two,
/// so offline runs exercise real tool calls.
pub fn answer_with_tools(
    goal: &str,
    lang: Lang,
    fault: Option<PlannerFault>,
    tools: &[planwave_llm::ToolRef],
) -> String {
    let mut p = plan(goal, lang);
    if !tools.is_empty() {
        let names: Vec<&str> = tools.iter().take(2).map(|t| t.name.as_str()).collect();
        p["tasks"][1]["hints"]["suggested_tools"] = json!(names);
    }
    match fault {
        None => pretty(&p),
        Some(PlannerFault::Truncated) => {
            let full = pretty(&p);
            let cut = full
                .char_indices()
                .nth(full.chars().count() * 3 / 5)
                .map(|(i, _)| i)
                .unwrap_or(full.len());
            full[..cut].to_owned()
        }
        Some(PlannerFault::Cycle) => {
            p["tasks"][0]["dependencies"] = json!([5]);
            pretty(&p)
        }
        Some(PlannerFault::UnknownDependency) => {
            p["tasks"][2]["dependencies"] = json!([9]);
            pretty(&p)
        }
        Some(PlannerFault::NoTasks) => {
            p["tasks"] = json!([]);
            pretty(&p)
        }
        Some(PlannerFault::Prose) => match lang {
            Lang::Zh => "好的，我会先分析公司概况，然后研究财务表现，最后给出投资建议。".into(),
            Lang::En => {
                "Sure: first the company overview, then its financials, then a recommendation."
                    .into()
            }
        },
    }
}

/// The planner's answer to a partial replan: `ctx.sections` holds the kept (`completed`) tasks
/// and the ones to replace. Each replacement gets a fresh id after the largest one; a
/// replaced failed task's stand-in needs nothing, a replaced blocked task's stand-in builds
/// on the replacement before it, so the chain the failure broke is rebuilt.
pub fn replacement(ctx: &planwave_llm::RequestContext) -> String {
    let first = ctx
        .sections
        .iter()
        .filter_map(|s| s.id.parse::<u64>().ok())
        .max()
        .unwrap_or(0)
        + 1;
    let mut prev: Option<u64> = None;
    let mut tasks = Vec::new();
    for (next, s) in (first..).zip(ctx.sections.iter().filter(|s| s.status != "completed")) {
        let deps: Vec<u64> = match (s.status.as_str(), prev) {
            ("blocked", Some(p)) => vec![p],
            _ => Vec::new(),
        };
        let description = match ctx.lang {
            Lang::Zh => format!("{}（换一种角度重做）", s.title),
            Lang::En => format!("{} (another approach)", s.title),
        };
        tasks.push(
            json!({"id": next, "description": description, "dependencies": deps,
            "hints": {"data_needs": [], "key_questions": [], "suggested_tools": []}}),
        );
        prev = Some(next);
    }
    pretty(&json!({ "tasks": tasks }))
}

/// A plan as a model following the schema writes it: what the plan is about first, its task
/// (or step) array last, so a reader of the streamed answer knows the topic before the tasks.
pub(crate) fn pretty(v: &Value) -> String {
    let Value::Object(map) = v else {
        return serde_json::to_string_pretty(v).unwrap_or_default();
    };
    let mut head = map.clone();
    let list = ["tasks", "steps"]
        .into_iter()
        .find_map(|k| head.remove(k).map(|l| (k, l)));
    let Some((key, list)) = list else {
        return serde_json::to_string_pretty(v).unwrap_or_default();
    };
    let head = serde_json::to_string_pretty(&Value::Object(head)).unwrap_or_default();
    let list = serde_json::to_string_pretty(&list)
        .unwrap_or_default()
        .replace('\n', "\n  ");
    let body = head.trim_end().trim_end_matches('}').trim_end();
    let sep = if body.ends_with('{') { "" } else { "," };
    format!("{body}{sep}\n  \"{key}\": {list}\n}}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goals_that_name_nothing_are_vague() {
        for g in [
            "分析一下",
            "分析一下。",
            "研究",
            "analyse this",
            "Analyze",
            "research it",
        ] {
            assert!(vague(g), "{g}");
        }
        for g in [
            "深度分析特斯拉公司",
            "分析一下比亚迪",
            "Analyse Tesla",
            "特斯拉",
        ] {
            assert!(!vague(g), "{g}");
        }
    }

    #[test]
    fn subjects() {
        assert_eq!(subject("深度分析特斯拉公司"), "特斯拉公司");
        assert_eq!(subject("请深入分析比亚迪。"), "比亚迪");
        assert_eq!(subject("Deep analysis of Tesla"), "Tesla");
        assert_eq!(subject("Analyze NVIDIA"), "NVIDIA");
        assert_eq!(subject("分析"), "分析");
    }

    #[test]
    fn plans_are_valid_and_faults_are_not() {
        for lang in [Lang::Zh, Lang::En] {
            let ok = planwave_plan::parse_plan_str(&answer("深度分析特斯拉公司", lang, None))
                .expect("parses");
            assert_eq!(ok.tasks.len(), 5);
            assert!(planwave_plan::ValidatedPlan::new(ok).is_ok());
        }
        assert!(
            planwave_plan::parse_plan_str(&answer("x", Lang::En, Some(PlannerFault::Truncated)))
                .is_err()
        );
        let cyc = planwave_plan::parse_plan_str(&answer("x", Lang::En, Some(PlannerFault::Cycle)))
            .expect("parses");
        let errs = planwave_plan::ValidatedPlan::new(cyc).expect_err("cycle");
        assert!(errs.to_string().contains("cycle"), "{errs}");
    }
}
