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

/// Headless Chromium from `.ci/peers` (Debian's `chromium`).
fn chromium() -> Option<std::path::PathBuf> {
    crate::support::peer("bin/chromium")
}

/// Loads `page` in headless Chromium with every request sent to a proxy on loopback that
/// records what was asked for; returns the DOM and the hosts the page itself asked for.
/// Chromium's own background traffic (its clock, accounts and update services at Google)
/// goes through the proxy too and is left out: it is the browser's, not the page's.
fn load_recording_requests(
    chromium: &std::path::Path,
    page: &std::path::Path,
) -> (String, Vec<String>) {
    use std::io::{BufRead, BufReader};
    let trap = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = trap.local_addr().expect("addr").port();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for conn in trap.incoming() {
            let Ok(conn) = conn else { break };
            let _ = conn.set_read_timeout(Some(std::time::Duration::from_secs(5)));
            let mut line = String::new();
            let _ = BufReader::new(&conn).read_line(&mut line);
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let profile = tempdir();
    let out = std::process::Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--virtual-time-budget=3000",
            &format!("--proxy-server=127.0.0.1:{port}"),
            "--proxy-bypass-list=<-loopback>",
            &format!("--user-data-dir={}", profile.path().display()),
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    // Chromium has exited: every connection it made was accepted and read (or timed out).
    let own = ["google.com", "gvt1.com", "googleapis.com", "gstatic.com"];
    let hosts = rx
        .try_iter()
        .filter_map(|line| {
            let target = line.split_whitespace().nth(1)?.to_owned();
            let host = target
                .trim_start_matches("http://")
                .trim_start_matches("https://")
                .split(['/', ':'])
                .next()?
                .to_owned();
            (!own
                .iter()
                .any(|o| host == *o || host.ends_with(&format!(".{o}"))))
            .then_some(host)
        })
        .collect();
    (String::from_utf8_lossy(&out.stdout).into_owned(), hosts)
}

#[test]
fn the_html_report_loads_in_chromium_without_a_request_and_prints_to_pdf() {
    let Some(chromium) = chromium() else {
        return;
    };
    let dir = tempdir();
    let plan = write_json(
        dir.path(),
        "plan.json",
        &serde_json::json!({"topic": "Acme review", "tasks": [
            {"id": 1, "description": "Business model", "dependencies": []},
            {"id": 2, "description": "Outlook", "dependencies": [1]}
        ]}),
    );
    let out = dir.path().join("out");
    let r = run_plan(&plan, &out).quiet().opt("--pdf", "").run();
    // `--pdf` is a switch: a value is refused.
    r.expect_code(2);
    let r = planwave(["run", "--pdf"])
        .arg(&plan)
        .out(&out)
        .opt("--llm", "sim")
        .opt("--sim-latency-ms", "0")
        .quiet()
        .env("PLANWAVE_CHROMIUM", &chromium)
        .run();
    r.expect_ok();
    let pdf = std::fs::read(out.join("report.pdf")).expect("report.pdf");
    assert!(pdf.starts_with(b"%PDF-"), "not a PDF");
    assert!(pdf.len() > 1000, "an empty page? {} bytes", pdf.len());

    // The page loads with nothing fetched, and the browser sees the DAG.
    let (dom, hosts) = load_recording_requests(&chromium, &out.join("report.html"));
    assert!(dom.contains("data-task=\"2\""), "{dom}");
    assert!(hosts.is_empty(), "report.html asked for {hosts:?}");
    // The trap works: a page that does fetch is caught.
    let fetching = dir.path().join("fetching.html");
    std::fs::write(&fetching, "<img src=\"http://example.invalid/x.png\">").expect("page");
    assert_eq!(
        load_recording_requests(&chromium, &fetching).1,
        ["example.invalid"]
    );
}

#[test]
fn pdf_without_a_browser_says_so_after_saving_the_run() {
    let dir = tempdir();
    let plan = write_json(
        dir.path(),
        "plan.json",
        &serde_json::json!({"topic": "Acme", "tasks": [
            {"id": 1, "description": "Business model", "dependencies": []}
        ]}),
    );
    let out = dir.path().join("out");
    let r = planwave(["run", "--pdf"])
        .arg(&plan)
        .out(&out)
        .opt("--llm", "sim")
        .opt("--sim-latency-ms", "0")
        .quiet()
        .env("PLANWAVE_CHROMIUM", dir.path().join("no-such-browser"))
        .run();
    r.expect_code(1);
    assert!(
        r.stderr.contains("--pdf: PLANWAVE_CHROMIUM=") && r.stderr.contains("is not a file"),
        "{}",
        r.stderr
    );
    assert!(out.join("report.html").is_file() && out.join("run.json").is_file());
    assert!(!out.join("report.pdf").exists());
}
