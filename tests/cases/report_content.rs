//! What the report says and links to: `report.html` and the printed PDF keep only links to
//! the web, mail and the page itself (also with a relative `--out`), and a summary that
//! brings its own heading is not headed twice in `report.md`.

use std::path::Path;

use serde_json::json;

use crate::cases::aimock::aimock_with;
use crate::support::{planwave, run_plan, tempdir, write_json};

pub(crate) fn one_task_plan(dir: &Path, description: &str) -> std::path::PathBuf {
    write_json(
        dir,
        "plan.json",
        &json!({"topic": "Links", "tasks": [
            {"id": 1, "description": description, "dependencies": []}
        ]}),
    )
}

/// The hrefs of a page, in order.
fn hrefs(page: &str) -> Vec<String> {
    page.split("href=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .map(str::to_owned)
        .collect()
}

const LINKS: &str = "See [evil](javascript:alert(1)) and [ok](https://example.com/ok), \
    [mail](mailto:a@example.com), [anchor](#sources), [rel](other.html), \
    <javascript:alert(2)> and [data](data:text/html,hi)";

#[test]
fn report_html_keeps_only_web_mail_and_in_page_links() {
    let dir = tempdir();
    let plan = one_task_plan(dir.path(), LINKS);
    let out = dir.path().join("out");
    run_plan(&plan, &out).quiet().run().expect_ok();
    let page = std::fs::read_to_string(out.join("report.html")).expect("report.html");
    let links = hrefs(&page);
    assert!(
        links.iter().any(|h| h == "https://example.com/ok"),
        "{links:?}"
    );
    assert!(
        links.iter().any(|h| h == "mailto:a@example.com"),
        "{links:?}"
    );
    assert!(links.iter().any(|h| h == "#sources"), "{links:?}");
    let unsafe_links: Vec<&String> = links
        .iter()
        .filter(|h| !(h.starts_with("https://") || h.starts_with("mailto:") || h.starts_with('#')))
        .collect();
    assert!(unsafe_links.is_empty(), "{unsafe_links:?}");
    // The dropped links' text is still there.
    assert!(page.contains("evil") && page.contains("rel"), "{page}");
}

/// The printed PDF carries the page's links as link annotations: the web one stays, the
/// script one is gone. A relative `--out` prints too (it once made `file://out/report.html`).
#[test]
fn pdf_with_a_relative_out_prints_and_keeps_only_safe_links() {
    let Some(chromium) = crate::support::peer("bin/chromium") else {
        return;
    };
    let dir = tempdir();
    one_task_plan(dir.path(), LINKS);
    let r = planwave(["run", "plan.json", "--out", "r15", "--pdf", "-q"])
        .opt("--sim-latency-ms", "0")
        .env("PLANWAVE_CHROMIUM", &chromium)
        .current_dir(dir.path())
        .run();
    r.expect_ok();
    let pdf = std::fs::read(dir.path().join("r15/report.pdf")).expect("report.pdf");
    assert!(pdf.starts_with(b"%PDF-"), "not a PDF");
    let text = String::from_utf8_lossy(&pdf);
    assert!(
        text.contains("https://example.com/ok"),
        "the web link is annotated"
    );
    assert!(
        !text.contains("javascript"),
        "a script link reached the PDF"
    );
    assert!(
        !dir.path()
            .join("r15")
            .read_dir()
            .expect("r15")
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with(".pdf.tmp")),
        "scratch left behind"
    );
}

#[test]
fn a_summary_with_its_own_heading_is_not_headed_twice() {
    let dir = tempdir();
    let Some((base, _server)) = aimock_with(
        dir.path(),
        json!([
            {"match": {"userMessage": "You are the editor integrating"},
             "response": {"content": "## Executive Summary\n\nSUMMARY-ONCE: the audit found nothing amiss."}},
            {"match": {}, "response": {"content": "## Finding\n\nThe audit ran (2024: 12%)."}}
        ]),
    ) else {
        return;
    };
    let plan = write_json(
        dir.path(),
        "plan.json",
        &crate::support::plan("Audit", &[("1", "Check the books", &[])]),
    );
    let out = dir.path().join("out");
    planwave(["run"])
        .arg(&plan)
        .out(&out)
        .opt("--llm-base-url", &base)
        .opt("--model", "gpt-4o")
        .quiet()
        .run()
        .expect_ok();
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(report.contains("SUMMARY-ONCE"), "{report}");
    assert_eq!(
        report
            .to_lowercase()
            .matches("## executive summary")
            .count(),
        1,
        "{report}"
    );
}
