//! Issue 33, round 2 of hardening: absurd numbers refused where they are parsed, links in
//! the report page kept only to the web, mail and the page itself, the plan cache's temporary
//! files never following a planted link, `--pdf` with a relative `--out`, and a base URL
//! with a query.

use std::path::Path;

use serde_json::json;

use crate::cases::serve::{Serve, post_json};
use crate::support::{SimLlm, planwave, run_plan, tempdir, write_json};

fn one_task_plan(dir: &Path, description: &str) -> std::path::PathBuf {
    write_json(
        dir,
        "plan.json",
        &json!({"topic": "Links", "tasks": [
            {"id": 1, "description": description, "dependencies": []}
        ]}),
    )
}

/// Every number flag the probe found panicking with exit 101 is refused as bad input (exit
/// 2) with a message naming the value.
#[test]
fn absurd_and_non_finite_numbers_are_refused_with_exit_2() {
    let dir = tempdir();
    let plan = one_task_plan(dir.path(), "a");
    let out = dir.path().join("out");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", "--sim-latency-ms", "1e300"],
            "\"1e300\" milliseconds is longer than a year",
        ),
        (
            vec!["run", "--sim-latency-ms", "NaN"],
            "\"NaN\" is not a finite number",
        ),
        (
            vec!["run", "--sim-sigma", "inf"],
            "\"inf\" is not a finite number",
        ),
        (
            vec!["sim-llm", "serve", "--retry-after-secs", "1e300"],
            "\"1e300\" seconds is longer than a year",
        ),
        (
            vec!["sim-llm", "serve", "--prefill-us-per-token", "1e300"],
            "more than a second per token",
        ),
        (
            vec!["sim-llm", "serve", "--latency-ms", "1e300"],
            "longer than a year",
        ),
        (
            vec!["loadtest", "--tasks", "3", "--latency", "fixed:1e300"],
            "latency \"fixed:1e300\": \"1e300\" milliseconds is longer than a year",
        ),
        (
            vec!["loadtest", "--requests", "3", "--rate", "1e-300"],
            "\"1e-300\" is not a rate from 1e-6 to 1e6 per second",
        ),
        (
            vec!["loadtest", "--rate", "1", "--duration", "1e300s"],
            "\"1e300s\" is not a duration",
        ),
        (
            vec!["loadtest", "--tasks", "2", "--plan-rate", "1e-300"],
            "\"1e-300\" is not a rate",
        ),
        (
            vec!["loadtest", "--rate", "1e6", "--duration", "100000s"],
            "is more than 10000000 requests",
        ),
        (
            vec![
                "loadtest",
                "--tasks",
                "2",
                "--plan-rate",
                "1000",
                "--duration",
                "1h",
            ],
            "is more than 100000 plans",
        ),
    ];
    for (args, says) in cases {
        let mut cmd = planwave(&args);
        if args[0] == "run" {
            cmd = cmd.arg(&plan).out(&out);
        }
        let r = cmd.run();
        assert_eq!(r.code, 2, "{args:?}\n{}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("panic"), "{args:?}: {}", r.stderr);
    }
    assert!(!out.exists(), "a refused run writes nothing");
}

/// Over HTTP the same values are a 422 naming the option; the run is never started (it was
/// left in `error` with no run.json).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absurd_numbers_in_a_request_are_a_422() {
    let s = Serve::start(&[], &[]);
    for (options, field) in [
        (json!({"sim_latency_ms": 1e25}), "sim_latency_ms"),
        (json!({"sim_latency_ms": 1e300}), "sim_latency_ms"),
        (json!({"sim_latency_ms": -1}), "sim_latency_ms"),
        (json!({"sim_sigma": 1e300}), "sim_sigma"),
    ] {
        let plan = json!({"tasks": [{"id": 1, "description": "a", "dependencies": []}]});
        let (code, body) = post_json(
            &s.at("api/runs"),
            &json!({"plan": plan, "options": options}),
        )
        .await;
        assert_eq!(code, 422, "{options}: {body}");
        let problem = body["problems"][0].as_str().unwrap_or_default();
        assert!(problem.starts_with(&format!("options.{field}: ")), "{body}");
    }
    let runs: Vec<_> = std::fs::read_dir(&s.data)
        .map(|d| {
            d.flatten()
                .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    assert!(runs.is_empty(), "no run was started: {runs:?}");
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

/// A temporary file name planted as a symbolic link in the cache is never written through:
/// the file it points at is unchanged and the plan is still stored.
#[test]
fn the_plan_cache_never_writes_through_a_planted_link() {
    let dir = tempdir();
    let cache = dir.path().join("cache");
    let research = |out: &str| {
        planwave(["research", "Acme outlook", "--max-rounds", "1", "-q"])
            .opt("--sim-latency-ms", "0")
            .opt("--plan-cache", &cache)
            .out(dir.path().join(out))
    };
    research("first").run().expect_ok();
    let entry = std::fs::read_dir(&cache)
        .expect("cache")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.ends_with(".json") && n != "call-times.json")
        .expect("an entry");
    let key = entry.trim_end_matches(".json").to_owned();
    std::fs::remove_file(cache.join(&entry)).expect("forget the entry");
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious\n").expect("victim");
    // The shell plants `.tmp-KEY-PID-0` for its own pid, then becomes planwave (same pid).
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg("ln -s \"$1\" \"$2/.tmp-$3-$$-0\" && exec \"$0\" research 'Acme outlook' --max-rounds 1 -q --sim-latency-ms 0 --plan-cache \"$2\" --out \"$4\"")
        .arg(env!("CARGO_BIN_EXE_planwave"))
        .arg(&victim)
        .arg(&cache)
        .arg(&key)
        .arg(dir.path().join("second"))
        .env_remove("PLANWAVE_CONFIG")
        .status()
        .expect("sh");
    assert!(status.success(), "{status}");
    assert_eq!(
        std::fs::read_to_string(&victim).expect("victim"),
        "precious\n"
    );
    assert!(
        cache.join(&entry).is_file(),
        "the plan was stored all the same"
    );
}

/// A base URL with a query (Azure's `…/v1?api-version=…`) keeps it: the call goes to
/// `/v1/chat/completions?api-version=…`, not to `/v1?api-version=…/chat/completions`.
#[test]
fn a_base_url_with_a_query_keeps_it() {
    let sim = SimLlm::start(&[], &[]);
    let dir = tempdir();
    let plan = one_task_plan(dir.path(), "a");
    let r = planwave(["run", "--llm", "openai", "--model", "planwave-sim-1", "-q"])
        .opt(
            "--llm-base-url",
            format!("{}?api-version=2024-10-21", sim.base_url),
        )
        .arg(&plan)
        .out(dir.path().join("out"))
        .run();
    r.expect_ok();
    assert!(
        sim.stats()["requests"].as_u64().unwrap_or(0) >= 2,
        "{}",
        sim.stats()
    );
}

/// SIGTERM stops a load test whose calls take ten minutes: it exits 143 with the figures of
/// what it measured (the first task answered at once, the second was in flight), instead of
/// waiting for the calls in flight to end.
#[test]
fn loadtest_stops_on_sigterm_with_what_it_measured() {
    let dir = tempdir();
    let latencies = write_json(dir.path(), "lat.json", &json!({"1": 0}));
    let latency_file = latencies.to_string_lossy().into_owned();
    let sim = SimLlm::start(
        &[
            "--latency-ms",
            "600000",
            "--sigma",
            "0",
            "--latency-file",
            &latency_file,
        ],
        &[],
    );
    let mut lt = planwave([
        "loadtest",
        "--requests",
        "3",
        "--concurrency",
        "1",
        "--json",
    ])
    .opt("--llm-url", &sim.base_url)
    .spawn();
    lt.wait_for("planwave loadtest:", 1);
    // With one call at a time, the second request means the first task has completed.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while sim.stats()["requests"].as_u64().unwrap_or(0) < 2 {
        assert!(std::time::Instant::now() < deadline, "{}", sim.stats());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    lt.terminate();
    let (code, stdout) = lt.wait();
    assert_eq!(code, 143, "{stdout}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("the JSON report");
    let run = &report["runs"][0];
    assert_eq!(run["tasks"], 3, "{report:#}");
    assert_eq!(run["completed"], 1, "{report:#}");
    assert_eq!(report["workload"]["tasks"], 3, "{report:#}");
}
