//! `report.html`: the report as one self-contained page next to `report.md`, with the DAG
//! and the timeline as inline SVG, statuses shown by label as well as colour, and nothing
//! to fetch.

use crate::support::{planwave, run_plan, tempdir, write_json};

fn page(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("report.html")).expect("report.html")
}

/// No script, no stylesheet, image, frame or font from elsewhere: the page opens offline.
fn assert_self_contained(html: &str) {
    for needle in [
        "<script", "<link", "<img", "<iframe", "src=", "@import", "url(",
    ] {
        assert!(!html.contains(needle), "{needle} in report.html");
    }
}

#[test]
fn run_writes_a_self_contained_html_report_with_the_dag_and_timeline() {
    let dir = tempdir();
    let plan = write_json(
        dir.path(),
        "plan.json",
        &serde_json::json!({"topic": "Acme review", "tasks": [
            {"id": 1, "description": "Business model", "dependencies": []},
            {"id": 2, "description": "Finances", "dependencies": []},
            {"id": 3, "description": "Outlook", "dependencies": [1, 2]}
        ]}),
    );
    let out = dir.path().join("out");
    run_plan(&plan, &out)
        .quiet()
        .opt("--sim-fail", "2")
        .run()
        .expect_code(3);
    let html = page(&out);
    assert!(html.starts_with("<!DOCTYPE html>"), "{html}");
    assert!(html.contains("<title>Acme review</title>"));
    assert_self_contained(&html);
    // The DAG: one node per task, its status as a class and as a label.
    for (id, class, label) in [
        ("1", "completed", "✓ completed"),
        ("2", "failed", "✗ failed"),
        ("3", "blocked", "⊘ blocked"),
    ] {
        let node = format!("<g class=\"node {class}\" data-task=\"{id}\">");
        let at = html.find(&node).unwrap_or_else(|| panic!("no node {node}"));
        let end = at + html[at..].find("</g>").expect("node end");
        assert!(
            html[at..end].contains(label),
            "task {id}: {}",
            &html[at..end]
        );
    }
    // Two edges into task 3, drawn as paths; the timeline has bars for the tasks that ran.
    assert_eq!(html.matches("class=\"edge\"").count(), 2);
    assert!(html.contains("<svg class=\"gantt\""));
    assert_eq!(html.matches("class=\"bar ").count(), 2, "tasks 1 and 2 ran");
    // The same content as report.md: every section heading and the placeholders.
    let md = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    for line in md.lines().filter(|l| l.starts_with("## ")) {
        assert!(
            html.contains(&format!(">{}</h2>", line.trim_start_matches("## "))),
            "{line}"
        );
    }
    assert!(html.contains("[Data retrieval failed: "));
    assert!(!html.contains("```mermaid"));
}

#[test]
fn research_publishes_the_html_report_of_its_shown_round() {
    let dir = tempdir();
    let out = dir.path().join("r");
    planwave(["research", "Deep analysis of Tesla"])
        .out(&out)
        .instant()
        .quiet()
        .run()
        .expect_ok();
    assert_eq!(page(&out), page(&out.join("rounds/1")));
    assert_self_contained(&page(&out));
}
