//! The real binary against `planwave sim-llm serve` over real HTTP on 127.0.0.1: retries,
//! 401, usage, and that the API key appears nowhere.

use crate::cases::report_content::one_task_plan;
use crate::support::{Planwave, SimLlm, all_files, planwave, read_json, tempdir};

const FAKE_KEY: &str = "pw-FAKE-KEY-do-not-leak-7f3a9c1e5b";

/// `research` of the Tesla goal against the simulator over HTTP, retrying without waiting.
fn research_via(server: &SimLlm, out: &std::path::Path) -> Planwave {
    planwave(["research", "深度分析特斯拉公司"])
        .out(out)
        .opt("--llm-base-url", &server.base_url)
        .opt("--model", "planwave-sim-1")
        .fast_retries()
}

#[test]
fn research_over_http_retries_429_and_500_and_repairs_the_plan() {
    // Requests 1 and 3 fail (both planner calls); the client retries them itself.
    let server = SimLlm::start(
        &[
            "--fault-script",
            "429,ok,500",
            "--retry-after-secs",
            "0",
            "--planner-faults",
            "cycle",
        ],
        &[],
    );
    let dir = tempdir();
    let out = dir.path().join("http");
    // Whole plans only: with a streamed plan the first tasks' requests would come between
    // the planner's, and the scripted faults would hit them instead.
    let res = research_via(&server, &out)
        .quiet()
        .arg("--no-stream-plan")
        .run();
    res.expect_ok();
    assert!(
        res.stderr
            .contains(&format!("via openai-compatible at {}", server.base_url)),
        "{}",
        res.stderr
    );
    assert!(!res.stderr.contains("simulated LLM"));
    assert!(
        res.stdout.starts_with("planned in 2 attempt(s): 5 tasks"),
        "{}",
        res.stdout
    );

    let stats = server.stats();
    // 2 planning attempts + 2 transport retries, 5 sections, 1 summary and 1 evaluation (a
    // clean run's correctness ends the loop by its own rule: no reflection is asked for).
    assert_eq!(stats["requests"], 11, "{stats}");
    assert_eq!(stats["roles"]["planner"], 4, "{stats}");
    assert_eq!(stats["roles"]["subagent"], 5);
    assert_eq!(stats["roles"]["integrator"], 1);
    assert_eq!(stats["roles"]["evaluator"], 1);
    assert!(
        stats["roles"].get("reflector").is_none_or(|n| n == 0),
        "{stats}"
    );
    assert_eq!(
        (
            stats["faults"]["ratelimit"].as_u64(),
            stats["faults"]["servererror"].as_u64()
        ),
        (Some(1), Some(1))
    );

    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "completed");
    assert_eq!(run["llm"]["base_url"], server.base_url.as_str());
    assert_eq!(run["llm"]["simulated"], false);
    let calls = run["calls"].as_array().expect("calls");
    assert_eq!(
        calls.len(),
        9,
        "one record per call: retries stay inside their call"
    );
    assert!(
        calls
            .iter()
            .all(|c| c["outcome"] == "ok" && c["prompt_tokens"].as_u64() > Some(0))
    );
}

#[test]
fn non_streaming_mode_gives_the_same_report_shape() {
    let server = SimLlm::start(&[], &[]);
    let dir = tempdir();
    let out = dir.path().join("plain");
    let res = research_via(&server, &out).quiet().arg("--no-stream").run();
    res.expect_ok();
    assert!(res.stderr.contains("not streaming"), "{}", res.stderr);
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(
        report.starts_with("# 特斯拉公司深度分析\n") && report.contains("## 综合评估与投资建议")
    );
}

#[test]
fn unauthorized_fails_at_once_naming_provider_url_and_model_without_the_key() {
    let server = SimLlm::start(
        &["--api-key-env", "SIM_REQUIRED_KEY"],
        &[("SIM_REQUIRED_KEY", "the-right-key-11111111")],
    );
    let dir = tempdir();
    let out = dir.path().join("denied");
    let res = research_via(&server, &out)
        .env("PLANWAVE_LLM_API_KEY", FAKE_KEY)
        .run();
    res.expect_code(1);
    let err = res
        .stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .expect("error line");
    assert!(err.contains("HTTP 401"), "{err}");
    assert!(
        err.contains("openai-compatible (planwave-sim-1)") && err.contains(&server.base_url),
        "{err}"
    );
    assert!(
        !res.stderr.contains("FAKE-KEY") && !res.stdout.contains("FAKE-KEY"),
        "{}",
        res.stderr
    );
    assert_eq!(server.stats()["requests"], 1, "401 is not retried");
    // Nothing is lost: the failed attempt is on disk.
    let attempts = read_json(&out.join("planner/attempts.json"));
    assert!(
        attempts[0]["error"]
            .as_str()
            .unwrap_or("")
            .contains("HTTP 401")
    );
}

/// The fake key is given through the environment and through a config file, the run logs
/// at debug level (HTTP client included), and one request is answered 401 so the server's
/// echo of the key is exercised too. The key must appear in no output and no file.
#[test]
fn a_fake_api_key_appears_nowhere() {
    // Request 2 (the first section) is answered 401, whose body echoes the key masked.
    let server = SimLlm::start(
        &["--fault-script", "ok,401", "--api-key-env", "SIM_KEY"],
        &[("SIM_KEY", FAKE_KEY)],
    );
    let dir = tempdir();
    let cfg = dir.path().join("planwave.toml");
    std::fs::write(
        &cfg,
        format!("[llm]\napi_key = \"{FAKE_KEY}\"\nmodel = \"planwave-sim-1\"\n"),
    )
    .expect("config");
    let outs = [dir.path().join("env"), dir.path().join("file")];
    let mut texts = Vec::new();
    let first = research_via(&server, &outs[0])
        .arg("-vv")
        .env("PLANWAVE_LLM_API_KEY", FAKE_KEY)
        .env("RUST_LOG", "trace")
        .run();
    // One task failed on the 401 (not retried, so not transient): the loop replaced it and
    // what it blocked (replan_from_failure), and the run completed.
    first.expect_ok();
    let run = read_json(&outs[0].join("run.json"));
    let pass = &run["rounds"][0]["passes"][0];
    assert_eq!(pass["recovery"], "replan_from_failure", "{run}");
    assert_eq!(pass["failed_tasks"][0]["failure_kind"], "fatal");
    let error = pass["failed_tasks"][0]["error"].as_str().unwrap_or("");
    assert!(
        error.contains("HTTP 401") && error.contains("[redacted]"),
        "{error}"
    );
    texts.push(("env run stdout".to_string(), first.stdout));
    texts.push(("env run stderr".to_string(), first.stderr));
    let second = research_via(&server, &outs[1])
        .arg("-vv")
        .opt("--config", &cfg)
        .env("RUST_LOG", "debug")
        .run();
    second.expect_ok();
    assert!(
        second.stderr.contains("key from config file"),
        "{}",
        second.stderr
    );
    assert!(second.stderr.contains("DEBUG"), "debug logging was on");
    texts.push(("file run stdout".to_string(), second.stdout));
    texts.push(("file run stderr".to_string(), second.stderr));
    for out in &outs {
        for (path, text) in all_files(out) {
            texts.push((path.display().to_string(), text));
        }
    }
    assert!(texts.iter().any(|(p, _)| p.ends_with("run.json")));
    assert!(texts.iter().any(|(p, _)| p.ends_with("events.jsonl")));
    assert!(texts.iter().any(|(p, _)| p.ends_with("report.md")));
    for (name, text) in &texts {
        for needle in [FAKE_KEY, "do-not-leak", "7f3a9c1e5b"] {
            assert!(!text.contains(needle), "{needle} leaked into {name}");
        }
    }
    assert_eq!(
        server.stats()["authorized"],
        server.stats()["requests"],
        "the key was sent"
    );
}

#[test]
fn an_unreachable_server_is_a_runtime_error_not_invalid_input() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let dir = tempdir();
    let cfg = dir.path().join("planwave.toml");
    std::fs::write(
        &cfg,
        "[llm]\nmodel = \"m\"\n[llm.retry]\nmax_retries = 1\nbase_ms = 1\n",
    )
    .expect("config");
    let base = format!("http://127.0.0.1:{port}/v1");
    let res = planwave(["plan", "goal"])
        .opt("--config", &cfg)
        .opt("--llm-base-url", &base)
        .opt("--planner-attempts", "2")
        .run();
    res.expect_code(1);
    let err = res
        .stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .expect("error line");
    assert!(err.starts_with("error: planning failed: the model call failed on all 2 attempt(s); last error: openai-compatible (m): at http://127.0.0.1:"), "{err}");
    assert!(err.contains("gave up after 2 attempt(s)"), "{err}");
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
