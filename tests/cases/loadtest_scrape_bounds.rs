//! `--scrape-metrics` keeps what it can show: the series named by `--scrape-series` (by
//! default the serving series of vLLM, SGLang and TGI), at most 200 a scrape, from a body of
//! at most 4 MiB; what it left out is said on stderr, in the JSON and in the HTML report.

use std::io::{Read, Write};

use serde_json::Value;

use crate::support::{SimLlm, planwave, tempdir};

/// A Prometheus endpoint on 127.0.0.1 answering every request with `body` (with a
/// Content-Length or, when `sized` is false, delimited by closing the connection); its
/// URL.
fn metrics_endpoint(body: String, sized: bool) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/metrics", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && conn.read(&mut byte).is_ok_and(|n| n == 1) {
                head.push(byte[0]);
            }
            let length = if sized {
                format!("Content-Length: {}\r\n", body.len())
            } else {
                String::new()
            };
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n{length}Connection: close\r\n\r\n{body}"
            );
        }
    });
    url
}

/// `planwave loadtest --json` of a few requests to a real simulator, scraping `metrics`.
fn scraping(metrics: &str, extra: &[&str]) -> (Value, String) {
    let server = SimLlm::start(&[], &[]);
    let out = planwave(["loadtest", "--json", "--requests", "4"])
        .opt("--llm-url", &server.base_url)
        .opt("--scrape-metrics", metrics)
        .args(extra)
        .run();
    out.expect_ok();
    let v = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stdout));
    (v, out.stderr)
}

#[test]
fn twenty_thousand_series_are_cut_to_the_cap_and_the_rest_is_named() {
    let mut body = String::from("# TYPE x gauge\nsome_other_series 7\n");
    for i in 0..20_000 {
        body.push_str(&format!("vllm:num_requests_running{{pod=\"{i}\"}} 1\n"));
    }
    let url = metrics_endpoint(body, true);
    let dir = tempdir();
    let html = dir.path().join("report.html");
    let (v, stderr) = scraping(&url, &["--html", html.to_str().expect("utf-8")]);
    let run = &v["runs"][0];
    let samples = run["server_metrics"].as_array().expect("samples");
    assert!(samples.len() >= 2, "{samples:?}");
    for s in samples {
        assert_eq!(s["series"].as_object().map(|o| o.len()), Some(200));
    }
    let dropped = &run["server_metrics_dropped"];
    assert_eq!(dropped["over_cap"], 19_800, "{dropped}");
    assert_eq!(dropped["not_named"], 1, "{dropped}");
    assert_eq!(
        dropped["examples"],
        serde_json::json!(["some_other_series"])
    );
    let said = "scraped metrics left out 1 series not named by --scrape-series (e.g. some_other_series); 19800 series past the 200 kept";
    assert!(stderr.contains(said), "{stderr}");
    let page = std::fs::read_to_string(&html).expect("html");
    assert!(page.contains(said), "the report says what it left out");
    assert!(page.len() < 2_000_000, "{} bytes", page.len());

    // Named, a series is kept; the default ones then are not.
    let (v, _) = scraping(&url, &["--scrape-series", "some_other_series"]);
    let run = &v["runs"][0];
    let last = run["server_metrics"]
        .as_array()
        .and_then(|s| s.last())
        .expect("a sample");
    assert_eq!(
        last["series"],
        serde_json::json!({"some_other_series": 7.0})
    );
    assert_eq!(run["server_metrics_dropped"]["not_named"], 20_000);
}

#[test]
fn a_body_over_the_cap_is_not_read_and_is_counted() {
    // Over 4 MiB of comment lines: nothing worth keeping, and too large to read.
    let body = "# padding padding padding padding padding padding padding\n".repeat(90_000);
    for sized in [true, false] {
        let url = metrics_endpoint(body.clone(), sized);
        let (v, stderr) = scraping(&url, &[]);
        let run = &v["runs"][0];
        assert_eq!(
            run["server_metrics"],
            serde_json::json!([]),
            "sized {sized}"
        );
        let oversized = run["server_metrics_dropped"]["oversized"].as_u64();
        assert!(oversized >= Some(2), "sized {sized}: {run}");
        assert!(stderr.contains("scrapes over 4 MiB, not read"), "{stderr}");
    }
}

#[test]
fn scrape_series_names_are_checked() {
    let out = planwave(["loadtest", "--requests", "2"])
        .opt("--scrape-metrics", "http://127.0.0.1:9/metrics")
        .opt("--scrape-series", "ok_name,bad name{x}")
        .run();
    out.expect_code(2);
    assert!(
        out.stderr
            .contains("--scrape-series: \"bad name{x}\" is not a metric name"),
        "{}",
        out.stderr
    );
}
