//! The Markdown report, rendered from a finished run. Pure: no actors, no I/O.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt::Write;
use std::sync::Arc;

use planwave_plan::{Lang, ValidatedPlan};

use planwave_record::{ProviderInfoRecord, RunStats, TaskRecord, TaskStatus};

/// Mermaid stops rendering well long before this; bigger plans get a note instead.
pub const MERMAID_MAX_TASKS: usize = 300;

pub struct ReportInput<'a> {
    pub plan: &'a ValidatedPlan,
    pub records: &'a [TaskRecord],
    pub sections: &'a [Option<Arc<str>>],
    /// The sections' order: [`dependency_order`] of `plan` (the integrator computes it once
    /// for the summary prompt and the report).
    pub order: &'a [usize],
    /// The summary without its transitions list (see `transitions.rs`).
    pub summary: &'a str,
    /// Transition sentences to put just before each task's section (index = plan order; a
    /// task past the end has none).
    pub transitions: &'a [Vec<String>],
    pub summary_error: Option<&'a str>,
    pub stats: &'a RunStats,
    pub provider: &'a ProviderInfoRecord,
}

/// Tasks in dependency order; among tasks available at the same time, the smaller id first.
pub fn dependency_order(plan: &ValidatedPlan) -> Vec<usize> {
    let n = plan.len();
    // The heap orders each task's rank by (id, index) rather than the ids themselves:
    // comparing `TaskId`s in every heap step was most of this at 10,000 tasks. Plans
    // usually list their ids in ascending order, which needs no sort.
    let mut by_rank: Vec<usize> = (0..n).collect();
    if !(1..n).all(|i| plan.id(i - 1) < plan.id(i)) {
        by_rank.sort_unstable_by(|&a, &b| (plan.id(a), a).cmp(&(plan.id(b), b)));
    }
    let mut rank = vec![0usize; n];
    for (r, &i) in by_rank.iter().enumerate() {
        rank[i] = r;
    }
    let mut waiting: Vec<usize> = (0..n).map(|i| plan.deps(i).len()).collect();
    let mut heap: BinaryHeap<Reverse<usize>> = (0..n)
        .filter(|&i| waiting[i] == 0)
        .map(|i| Reverse(rank[i]))
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(r)) = heap.pop() {
        let i = by_rank[r];
        order.push(i);
        for &d in plan.dependents(i) {
            let d = d as usize;
            waiting[d] -= 1;
            if waiting[d] == 0 {
                heap.push(Reverse(rank[d]));
            }
        }
    }
    order
}

/// The placeholder standing in for a section that was not written.
pub fn placeholder(lang: Lang, record: &TaskRecord) -> String {
    let reason = record.error.as_deref().unwrap_or("unknown");
    match (record.status, lang) {
        (TaskStatus::Blocked, Lang::Zh) => {
            format!("[未执行：依赖任务 {} 失败]", blocked_by(record))
        }
        (TaskStatus::Blocked, Lang::En) => format!(
            "[Not executed: prerequisite task {} failed]",
            blocked_by(record)
        ),
        (TaskStatus::Failed, Lang::Zh) => format!("[数据获取失败：{reason}]"),
        (TaskStatus::Failed, Lang::En) => format!("[Data retrieval failed: {reason}]"),
        (_, Lang::Zh) => format!("[未完成：{}]", record.status.as_str()),
        (_, Lang::En) => format!("[Not finished: {}]", record.status.as_str()),
    }
}

fn blocked_by(record: &TaskRecord) -> String {
    record
        .blocked_by
        .as_ref()
        .map(|b| b.to_string())
        .unwrap_or_else(|| "?".into())
}

/// Which round of the reflective loop (and which pass inside it) wrote a section.
pub fn round_note(lang: Lang, tag: planwave_record::RoundTag) -> String {
    match (lang, tag.pass) {
        (Lang::Zh, 1) => format!("*（本章节由第 {} 轮生成）*", tag.round),
        (Lang::Zh, p) => format!("*（本章节由第 {} 轮第 {p} 次执行生成）*", tag.round),
        (Lang::En, 1) => format!("*(Section written in round {})*", tag.round),
        (Lang::En, p) => format!("*(Section written in round {}, pass {p})*", tag.round),
    }
}

/// A summary written without a model, used when the model could not provide one.
pub fn plain_summary(plan: &ValidatedPlan, completed: usize, total: usize) -> String {
    match plan.lang() {
        Lang::Zh => format!(
            "本报告围绕「{}」共包含 {total} 个章节，其中 {completed} 个已完成。",
            plan.spec().topic
        ),
        Lang::En => format!(
            "This report on \"{}\" has {total} sections, {completed} of them completed.",
            plan.spec().topic
        ),
    }
}

struct Labels {
    objectives: &'static str,
    summary: &'static str,
    appendix: &'static str,
    dag: &'static str,
    stats: &'static str,
    simulated: &'static str,
}

fn labels(lang: Lang) -> Labels {
    match lang {
        Lang::Zh => Labels {
            objectives: "研究目标",
            summary: "执行摘要",
            appendix: "附录",
            dag: "任务依赖图",
            stats: "运行统计",
            simulated: "本报告由模拟 LLM 生成，内容与数据仅用于演示。",
        },
        Lang::En => Labels {
            objectives: "Objectives",
            summary: "Executive summary",
            appendix: "Appendix",
            dag: "Task graph",
            stats: "Run statistics",
            simulated: "This report was written by the simulated LLM; its content and figures are for demonstration only.",
        },
    }
}

pub fn render_markdown(input: &ReportInput<'_>) -> String {
    let plan = input.plan;
    let lang = plan.lang();
    let l = labels(lang);
    let spec = plan.spec();
    // Sections plus the per-task lines (DAG, timeline, tables): growing a report of tens of
    // MB by doubling showed up as a tenth of a 30,000-task load test.
    let mut out = String::with_capacity(
        4096 + plan.len() * 320
            + input
                .sections
                .iter()
                .flatten()
                .map(|s| s.len())
                .sum::<usize>(),
    );
    let title = if spec.topic.trim().is_empty() {
        "Research report"
    } else {
        spec.topic.trim()
    };
    let _ = writeln!(out, "# {title}\n");
    if input.provider.simulated {
        let _ = writeln!(out, "> {}\n", l.simulated);
    }
    if let Some(why) = spec.about.fallback() {
        let _ = writeln!(out, "> {}\n", fallback_note(lang, why));
    }
    // A step plan answers its goal: the answer first, the step outputs as an appendix.
    let steps = spec.format == planwave_plan::PlanFormat::Steps;
    if steps {
        crate::answer::answer_section(&mut out, plan, input.records, input.sections);
    }
    if !spec.objectives.is_empty() {
        let _ = writeln!(out, "## {}\n", l.objectives);
        for o in &spec.objectives {
            let _ = writeln!(out, "- {o}");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "## {}\n", l.summary);
    if let Some(err) = input.summary_error {
        let _ = match lang {
            Lang::Zh => writeln!(out, "（模型未能生成摘要，以下为自动汇总；原因：{err}）\n"),
            Lang::En => writeln!(
                out,
                "(The model could not write the summary; this one is automatic. Reason: {err})\n"
            ),
        };
    }
    let _ = writeln!(out, "{}\n", strip_summary_heading(input.summary));
    if steps {
        crate::answer::steps_appendix(&mut out, plan, input.records, input.sections, input.order);
    }
    // A step plan's outputs are in its appendix, so no chapters here.
    let chapters: &[usize] = if steps { &[] } else { input.order };
    for &i in chapters {
        let task = plan.task(i);
        let rec = &input.records[i];
        // Between the two sections they connect, closing the one before this.
        for t in input.transitions.get(i).into_iter().flatten() {
            let _ = writeln!(out, "{}\n", t.trim());
        }
        match (&input.sections[i], rec.status) {
            (Some(text), status) if status.has_section() => {
                let text = text.trim();
                if !text.starts_with("## ") {
                    let _ = writeln!(out, "## {}\n", task.title());
                }
                // Pushed, not formatted: this runs once per section.
                out.push_str(text);
                out.push_str("\n\n");
                if status == TaskStatus::Truncated {
                    let _ = writeln!(out, "{}\n", truncated_note(lang));
                }
                if let Some(tag) = rec.round {
                    let _ = writeln!(out, "{}\n", round_note(lang, tag));
                }
            }
            _ => {
                let _ = writeln!(out, "## {}\n\n{}\n", task.title(), placeholder(lang, rec));
            }
        }
    }
    let _ = writeln!(out, "## {}\n\n### {}\n", l.appendix, l.dag);
    out.push_str(&mermaid_dag(plan, input.records));
    let _ = writeln!(out, "\n### {}\n", crate::gantt::heading(lang));
    out.push_str(&crate::gantt::mermaid_gantt(plan, input.records));
    let _ = writeln!(out, "\n### {}\n", l.stats);
    out.push_str(&stats_table(input, lang));
    out.push_str(&crate::warnings::appendix(plan, input.records));
    out
}

/// Under a section the output cap cut: it ends mid-way, and says so.
fn truncated_note(lang: Lang) -> &'static str {
    match lang {
        Lang::Zh => "*（本节在输出上限处被截断，内容不完整）*",
        Lang::En => "*(This section was cut by the output limit and ends mid-way.)*",
    }
}

/// The summary without a heading of its own at the top (the report writes "Executive
/// summary" above it; a model that writes one too would make the report show it twice).
fn strip_summary_heading(summary: &str) -> &str {
    let s = summary.trim();
    let (first, rest) = s.split_once('\n').unwrap_or((s, ""));
    let heading = first.trim_start_matches('#');
    let is_heading = first.starts_with('#') && heading.starts_with(' ');
    let name: String = heading
        .chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect();
    if is_heading
        && matches!(
            name.as_str(),
            "executivesummary" | "summary" | "执行摘要" | "摘要"
        )
    {
        rest.trim()
    } else {
        s
    }
}

/// A node label safe inside Mermaid double quotes, shortened to 40 characters.
/// The note on a fallback plan: planning failed, so one task answered the goal directly.
fn fallback_note(lang: Lang, why: &str) -> String {
    let why = why.replace('\n', " ");
    match lang {
        Lang::Zh => {
            format!("降级计划：规划未能生成有效计划（{why}），由单个任务直接回答研究目标。")
        }
        Lang::En => format!(
            "Fallback plan: planning produced no valid plan ({why}), so a single task answered the goal directly."
        ),
    }
}

pub fn mermaid_label(text: &str) -> String {
    let short: String = text.chars().take(40).collect();
    let short = if short.len() < text.len() {
        format!("{short}…")
    } else {
        short
    };
    short.replace('"', "#quot;").replace(['\n', '\r'], " ")
}

/// The plan's waves as Mermaid subgraphs, left to right, arrows prerequisite -> dependent
/// (`planwave waves --format mermaid`: the plan alone, before anything ran).
pub fn waves_mermaid(plan: &ValidatedPlan) -> String {
    let mut s = String::from("graph LR\n");
    for (k, w) in plan.waves().iter().enumerate() {
        let _ = writeln!(s, "    subgraph wave{k} [\"wave {k}\"]");
        for &i in w {
            let i = i as usize;
            let label = mermaid_label(&format!("{}: {}", plan.id(i), plan.task(i).title()));
            let _ = writeln!(s, "        t{i}[\"{label}\"]");
        }
        let _ = writeln!(s, "    end");
    }
    for i in 0..plan.len() {
        for &d in plan.deps(i) {
            let _ = writeln!(s, "    t{d} --> t{i}");
        }
    }
    s
}

/// The plan's DAG as a Mermaid graph, nodes coloured by status, arrows prerequisite -> dependent.
pub fn mermaid_dag(plan: &ValidatedPlan, records: &[TaskRecord]) -> String {
    if plan.len() > MERMAID_MAX_TASKS {
        return match plan.lang() {
            Lang::Zh => format!(
                "（计划含 {} 个任务，超过 {MERMAID_MAX_TASKS} 个，不绘制依赖图；见 plan.json。）\n",
                plan.len()
            ),
            Lang::En => format!(
                "(The plan has {} tasks, more than {MERMAID_MAX_TASKS}; the graph is omitted, see plan.json.)\n",
                plan.len()
            ),
        };
    }
    let mut out = String::from("```mermaid\ngraph TD\n");
    for (i, rec) in records.iter().enumerate().take(plan.len()) {
        let label = format!("{}: {}", plan.id(i), plan.task(i).title());
        let _ = writeln!(
            out,
            "    t{i}[\"{}\"]:::{}",
            mermaid_label(&label),
            rec.status.as_str()
        );
    }
    for i in 0..plan.len() {
        for &d in plan.deps(i) {
            let _ = writeln!(out, "    t{d} --> t{i}");
        }
    }
    out.push_str("    classDef completed fill:#c8e6c9,stroke:#2e7d32\n");
    out.push_str("    classDef failed fill:#ffcdd2,stroke:#c62828\n");
    out.push_str("    classDef blocked fill:#eeeeee,stroke:#9e9e9e,stroke-dasharray:4 3\n");
    out.push_str("    classDef pending fill:#fff9c4,stroke:#f9a825\n");
    out.push_str("    classDef running fill:#bbdefb,stroke:#1565c0\n");
    out.push_str("```\n");
    out
}

fn stats_table(input: &ReportInput<'_>, lang: Lang) -> String {
    let s = input.stats;
    let cp: Vec<String> = s.critical_path.iter().map(|t| t.to_string()).collect();
    let model = if input.provider.simulated {
        format!(
            "{} ({}, simulated)",
            input.provider.model, input.provider.provider
        )
    } else {
        format!("{} ({})", input.provider.model, input.provider.provider)
    };
    let rows: Vec<(&str, &str, String)> = vec![
        ("任务", "Tasks", s.tasks.to_string()),
        ("已完成", "Completed", s.completed.to_string()),
        ("失败", "Failed", s.failed.to_string()),
        ("未执行", "Blocked", s.blocked.to_string()),
        ("波次", "Waves", s.waves.to_string()),
        ("最长依赖链", "Critical path", cp.join(" → ")),
        (
            "耗时",
            "Makespan",
            format!("{:.1} s", s.makespan_ms / 1000.0),
        ),
        (
            "调度",
            "Schedule",
            s.schedule
                .map(|x| x.as_str().to_owned())
                .unwrap_or_default(),
        ),
        (
            "并发上限",
            "Concurrency cap",
            s.concurrency
                .map(|c| c.to_string())
                .unwrap_or_else(|| "-".into()),
        ),
        ("重试次数", "Retries", s.retries.to_string()),
        ("模型", "Model", model),
        (
            "Token（输入/输出/推理）",
            "Tokens (prompt/completion/reasoning)",
            format!(
                "{}/{}/{}",
                s.usage.prompt_tokens, s.usage.completion_tokens, s.usage.reasoning_tokens
            ),
        ),
    ];
    let mut out = match lang {
        Lang::Zh => String::from("| 项目 | 值 |\n|---|---|\n"),
        Lang::En => String::from("| Item | Value |\n|---|---|\n"),
    };
    for (zh, en, v) in rows {
        let _ = writeln!(
            out,
            "| {} | {} |",
            if lang == Lang::Zh { zh } else { en },
            table_cell(&v)
        );
    }
    out
}

/// A value as one Markdown table cell: a line break (from a task id in the critical path)
/// would end the row, and `|` would split it.
fn table_cell(v: &str) -> String {
    v.split(['\r', '\n'])
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use planwave_plan::{PlanSpec, TaskId, TaskSpec};

    use super::*;

    #[test]
    fn dependency_order_breaks_ties_by_id() {
        let tasks = vec![
            TaskSpec::new(3, "c", vec![]),
            TaskSpec::new(1, "a", vec![]),
            TaskSpec::new(4, "d", vec![TaskId::Int(3), TaskId::Int(1)]),
            TaskSpec::new(2, "b", vec![TaskId::Int(1)]),
        ];
        let plan = ValidatedPlan::new(PlanSpec {
            tasks,
            ..Default::default()
        })
        .expect("valid");
        let ids: Vec<String> = dependency_order(&plan)
            .into_iter()
            .map(|i| plan.id(i).to_string())
            .collect();
        assert_eq!(ids, ["1", "2", "3", "4"]);
    }

    /// The order as first computed, with the ids themselves in the heap.
    fn reference_order(plan: &ValidatedPlan) -> Vec<usize> {
        let n = plan.len();
        let mut waiting: Vec<usize> = (0..n).map(|i| plan.deps(i).len()).collect();
        let mut heap: BinaryHeap<Reverse<(&TaskId, usize)>> = (0..n)
            .filter(|&i| waiting[i] == 0)
            .map(|i| Reverse((plan.id(i), i)))
            .collect();
        let mut order = Vec::with_capacity(n);
        while let Some(Reverse((_, i))) = heap.pop() {
            order.push(i);
            for &d in plan.dependents(i) {
                let d = d as usize;
                waiting[d] -= 1;
                if waiting[d] == 0 {
                    heap.push(Reverse((plan.id(d), d)));
                }
            }
        }
        order
    }

    #[test]
    fn dependency_order_by_rank_is_the_order_by_id() {
        let mut state: u64 = 7;
        let mut next = move |m: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as usize % m
        };
        for round in 0..40 {
            let n = 1 + next(80);
            // Integer and string ids, in plan order ascending (round 0) or not.
            let ids: Vec<TaskId> = (0..n)
                .map(|k| match (round, next(3)) {
                    (0, _) => TaskId::Int(k as i64),
                    (_, 0) => TaskId::Str(format!("t{}", k * 7 % 97)),
                    _ => TaskId::Int((k * 31 % 101) as i64 - 50),
                })
                .collect();
            let tasks: Vec<TaskSpec> = (0..n)
                .map(|k| {
                    let deps = (0..k)
                        .filter(|_| next(6) == 0)
                        .map(|j| ids[j].clone())
                        .collect();
                    TaskSpec::new(ids[k].clone(), format!("task {k}"), deps)
                })
                .collect();
            let Ok(plan) = ValidatedPlan::new(PlanSpec {
                tasks,
                ..Default::default()
            }) else {
                continue; // a duplicate key ("t7" twice): not a plan
            };
            let order = dependency_order(&plan);
            assert_eq!(order, reference_order(&plan), "round {round}");
            assert_eq!(order.len(), n);
        }
    }

    #[test]
    fn waves_become_subgraphs_and_prerequisites_arrows() {
        let tasks = vec![
            TaskSpec::new(1, "Market \"size\"", vec![]),
            TaskSpec::new(2, "b", vec![TaskId::Int(1)]),
        ];
        let plan = ValidatedPlan::new(PlanSpec {
            tasks,
            ..Default::default()
        })
        .expect("valid");
        assert_eq!(
            waves_mermaid(&plan),
            "graph LR\n    subgraph wave0 [\"wave 0\"]\n        t0[\"1: Market #quot;size#quot;\"]\n    end\n    subgraph wave1 [\"wave 1\"]\n        t1[\"2: b\"]\n    end\n    t0 --> t1\n"
        );
    }

    #[test]
    fn mermaid_labels_cannot_break_out_of_quotes() {
        assert_eq!(mermaid_label("a \"b\"\nc"), "a #quot;b#quot; c");
    }
}
