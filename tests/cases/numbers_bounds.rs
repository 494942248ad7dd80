//! Numbers out of any sensible range (absurd, negative, not finite) are refused where they
//! are parsed, with a message naming the value: flags exit 2, a request's options are a 422,
//! and nothing is started.

use serde_json::json;

use crate::cases::report_content::one_task_plan;
use crate::cases::serve::{Serve, post_json};
use crate::support::{planwave, tempdir};

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
