//! The run's timeline as a Mermaid Gantt chart for the report's appendix: one bar per task
//! that ran, from its start to its end, grouped by wave. Pure rendering, like `report.rs`.

use std::fmt::Write as _;

use planwave_plan::{Lang, ValidatedPlan};

use planwave_record::{TaskRecord, TaskStatus};

use crate::markdown::mermaid_label;

/// Bigger runs get a note instead (the DAG has the same cap).
const GANTT_MAX_TASKS: usize = 200;

pub fn heading(lang: Lang) -> &'static str {
    match lang {
        Lang::Zh => "运行时间线",
        Lang::En => "Timeline",
    }
}

/// Real start and end times (epoch milliseconds, `dateFormat x`), so the axis shows wall-clock
/// time. Completed bars are `done`, failed ones `crit`; tasks that never ran have no bar.
pub fn mermaid_gantt(plan: &ValidatedPlan, records: &[TaskRecord]) -> String {
    let lang = plan.lang();
    if plan.len() > GANTT_MAX_TASKS {
        return match lang {
            Lang::Zh => format!(
                "（计划含 {} 个任务，超过 {GANTT_MAX_TASKS} 个，不绘制时间线；见 run.json。）\n",
                plan.len()
            ),
            Lang::En => format!(
                "(The plan has {} tasks, more than {GANTT_MAX_TASKS}; the timeline is omitted, see run.json.)\n",
                plan.len()
            ),
        };
    }
    let mut bars: Vec<(u32, usize, i64, i64, &'static str)> = records
        .iter()
        .enumerate()
        .take(plan.len())
        .filter_map(|(i, r)| {
            let (s, f) = (r.started_at?, r.finished_at?);
            let tag = match r.status {
                TaskStatus::Completed | TaskStatus::Truncated => "done",
                TaskStatus::Failed => "crit",
                _ => "active",
            };
            let start = s.timestamp_millis();
            // Mermaid drops zero-length bars; a task always took some time.
            let end = f.timestamp_millis().max(start + 1);
            Some((r.wave, i, start, end, tag))
        })
        .collect();
    if bars.is_empty() {
        return match lang {
            Lang::Zh => "（没有任务运行。）\n".into(),
            Lang::En => "(No task ran.)\n".into(),
        };
    }
    bars.sort_by_key(|&(wave, i, start, _, _)| (wave, start, i));
    let mut out = String::from("```mermaid\ngantt\n    dateFormat x\n    axisFormat %H:%M:%S\n");
    let mut wave = None;
    for (w, i, start, end, tag) in bars {
        if wave != Some(w) {
            let _ = match lang {
                Lang::Zh => writeln!(out, "    section 第 {w} 波"),
                Lang::En => writeln!(out, "    section wave {w}"),
            };
            wave = Some(w);
        }
        let label = format!("{} {}", plan.id(i), plan.task(i).title());
        // `:` ends a Gantt task name and `#`/`;` start comments or entities.
        let label = mermaid_label(&label).replace([':', ';', '#'], " ");
        let _ = writeln!(out, "    {label} :{tag}, t{i}, {start}, {end}");
    }
    out.push_str("```\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{TimeZone, Utc};

    fn record(
        plan: &ValidatedPlan,
        i: usize,
        status: TaskStatus,
        span: Option<(i64, i64)>,
    ) -> TaskRecord {
        TaskRecord {
            status,
            attempts: 1,
            started_at: span.map(|(s, _)| Utc.timestamp_millis_opt(s).unwrap()),
            finished_at: span.map(|(_, f)| Utc.timestamp_millis_opt(f).unwrap()),
            ..TaskRecord::pending(plan, i)
        }
    }

    #[test]
    fn bars_per_wave_with_real_times_and_no_bar_for_tasks_that_never_ran() {
        let plan = ValidatedPlan::new(planwave_plan::generate::chain(3)).expect("valid");
        let recs = vec![
            record(&plan, 0, TaskStatus::Completed, Some((1_000, 1_500))),
            record(&plan, 1, TaskStatus::Failed, Some((1_500, 1_500))),
            record(&plan, 2, TaskStatus::Blocked, None),
        ];
        let g = mermaid_gantt(&plan, &recs);
        let lines: Vec<&str> = g.lines().collect();
        assert_eq!(lines[1], "gantt");
        assert!(lines.contains(&"    section wave 0"), "{g}");
        let bar0 = lines
            .iter()
            .find(|l| l.ends_with(":done, t0, 1000, 1500"))
            .expect("bar 0");
        assert!(!bar0.trim_start().starts_with(':'));
        assert!(
            g.contains(":crit, t1, 1500, 1501"),
            "zero-length bars get 1 ms: {g}"
        );
        assert!(!g.contains(", t2,"), "a blocked task has no bar: {g}");
    }
}
