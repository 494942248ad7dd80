//! Data-quality rules: a short section is accepted with a warning,
//! and a section without figures is flagged and named to the integrator.

use crate::cases::aimock::{aimock_requests, aimock_with};
use crate::support::{plan, planwave, read_json, run_plan, task, tempdir, write_json};

#[test]
fn a_short_section_without_figures_is_accepted_with_warnings_in_run_json_report_and_show() {
    let dir = tempdir();
    let p = plan(
        "Acme review",
        &[
            ("1", "Acme business", &[]),
            ("2", "Acme finances", &["1"]),
            ("3", "Acme outlook", &["2"]),
        ],
    );
    let file = write_json(dir.path(), "plan.json", &p);
    let out = dir.path().join("out");
    // Task 2 answers in one sentence without figures; it still completes, and task 3 runs.
    run_plan(&file, &out)
        .opt("--llm", "sim")
        .opt("--sim-terse", "2")
        .quiet()
        .run()
        .expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed");
    let t2 = task(&run, "2");
    assert_eq!(t2["status"], "completed");
    let warnings = t2["warnings"].as_array().expect("warnings on task 2");
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert_eq!(warnings[0]["kind"], "short");
    assert_eq!(warnings[0]["min_chars"], 300);
    let chars = warnings[0]["chars"].as_u64().expect("chars");
    assert!(chars > 0 && chars < 300, "{chars}");
    assert_eq!(warnings[1], serde_json::json!({"kind": "no_figures"}));
    for id in ["1", "3"] {
        assert!(task(&run, id).get("warnings").is_none(), "task {id}: {run}");
    }

    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    let appendix = &report[report.find("## Appendix").expect("appendix")..];
    assert!(
        appendix.contains(&format!(
            "### Section warnings\n\n- Task 2 \"Acme finances\": short section: {chars} characters (under 300), accepted; no quantitative data (no number, percentage or amount)\n"
        )),
        "{appendix}"
    );
    assert!(!appendix.contains("Task 1 \""), "{appendix}");

    let shown = planwave(["show"]).arg(&out).run();
    shown.expect_ok();
    let lines: Vec<&str> = shown
        .stdout
        .lines()
        .filter(|l| l.contains("warning"))
        .collect();
    assert_eq!(
        lines,
        [
            format!("task 2 warning: short section: {chars} characters (under 300), accepted"),
            "task 2 warning: no quantitative data (no number, percentage or amount)".to_owned(),
        ],
        "{}",
        shown.stdout
    );
}

#[test]
fn the_integrator_is_told_which_sections_lack_figures() {
    let dir = tempdir();
    // aimock writes the sections: figures for the business and finances, none for the outlook.
    let Some((base, _server)) = aimock_with(
        dir.path(),
        serde_json::json!([
            {"match": {"userMessage": "editor integrating"},
             "response": {"content": "Acme is steady.\n\n### Consistency check\nNo material contradictions found."}},
            {"match": {"userMessage": "Acme outlook"},
             "response": {"content": "## Acme outlook\n\nThe outlook looks steady, but the sources give no firm figures."}},
            {"match": {}, "response": {"content": "## Acme section\n\nRevenue grew 12% in 2024 to $3.1 billion, and the operating margin reached 18.5% according to the annual report; free cash flow covered capital spending 1.4 times, leaving room for dividends. Management guides to growth of 8-10% in 2025, with the new plant in Texas adding 40,000 units of capacity by the end of the year."}}
        ]),
    ) else {
        return;
    };
    let p = plan(
        "Acme review",
        &[
            ("1", "Acme business", &[]),
            ("2", "Acme finances", &[]),
            ("3", "Acme outlook", &["1", "2"]),
        ],
    );
    let file = write_json(dir.path(), "plan.json", &p);
    let out = dir.path().join("out");
    planwave(["run"])
        .arg(&file)
        .out(&out)
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .arg("--no-stream")
        .quiet()
        .run()
        .expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(
        task(&run, "3")["warnings"],
        serde_json::json!([{"kind": "short", "chars": 63, "min_chars": 300}, {"kind": "no_figures"}])
    );
    assert!(task(&run, "1").get("warnings").is_none(), "{run}");

    let integrator: Vec<String> = aimock_requests(&base)
        .iter()
        .map(|r| r["body"].to_string())
        .filter(|b| b.contains("editor integrating"))
        .collect();
    assert_eq!(integrator.len(), 1, "one summary request");
    // The instructions (shared by every job, for the prompt cache) say what to do with
    // such sections; the list of them comes with the report's own data.
    for needle in [
        "if sections are named as giving no quantitative data, say so in the summary",
        "No quantitative data (no figures, percentages or amounts): Acme outlook",
    ] {
        assert!(
            integrator[0].contains(needle),
            "{needle}: {}",
            integrator[0]
        );
    }
}

/// A resumed run keeps the sections the first attempt completed without asking for them
/// again; its `run.json` flags them as the first attempt's did.
#[test]
fn a_resumed_run_flags_the_sections_it_kept() {
    let dir = tempdir();
    let p = plan(
        "Acme review",
        &[("1", "Acme business", &[]), ("2", "Acme finances", &[])],
    );
    let file = write_json(dir.path(), "plan.json", &p);
    let out = dir.path().join("out");
    // Task 1 answers tersely and completes; task 2 fails, so the run can be resumed.
    run_plan(&file, &out)
        .opt("--llm", "sim")
        .opt("--sim-terse", "1")
        .opt("--sim-fail", "2")
        .quiet()
        .run()
        .expect_code(3);
    let first = task(&read_json(&out.join("run.json")), "1").clone();
    assert_eq!(first["status"], "completed");
    assert_eq!(
        first["warnings"].as_array().map(Vec::len),
        Some(2),
        "{first}"
    );

    planwave(["resume"]).arg(&out).quiet().run().expect_code(3);
    let run = read_json(&out.join("run.json"));
    let kept = task(&run, "1");
    assert_eq!(kept["status"], "completed");
    assert_eq!(kept["warnings"], first["warnings"], "{run}");
    assert_eq!(task(&run, "2")["status"], "failed");
}
