//! Credentials are used where they are meant and shown nowhere: the load tester sends a key
//! only when `--api-key-env` names one, and credentials in URLs (model, OTLP, MCP) reach
//! their servers but never the terminal, the logs or the run directory.

use crate::support::{tempdir, write_json};

#[test]
fn loadtest_sends_a_key_only_when_api_key_env_names_one() {
    let server = crate::support::SimLlm::start(&[], &[]);
    let run = |extra: &[&str]| {
        crate::support::planwave(["loadtest", "--tasks", "5", "--shape", "wide"])
            .opt("--llm-url", &server.base_url)
            .args(extra)
            // Configured for planwave's own runs: not for somebody else's gateway.
            .env("PLANWAVE_LLM_API_KEY", "sk-configured-for-runs")
            .env("LOADTEST_KEY", "sk-meant-for-this-gateway")
            .run()
    };
    run(&[]).expect_ok();
    let stats = server.stats();
    assert_eq!(
        stats["authorized"], 0,
        "no key without --api-key-env: {stats}"
    );
    let requests = stats["requests"].as_u64().expect("requests");
    assert!(requests > 0, "{stats}");

    let named = run(&["--api-key-env", "LOADTEST_KEY"]);
    named.expect_ok();
    assert!(
        named.stderr.contains("key from $LOADTEST_KEY"),
        "{}",
        named.stderr
    );
    let stats = server.stats();
    assert_eq!(
        stats["authorized"].as_u64(),
        Some(stats["requests"].as_u64().expect("requests") - requests),
        "every request of the second run carried the key: {stats}"
    );
    let missing = run(&["--api-key-env", "NO_SUCH_VARIABLE_SET"]);
    missing.expect_code(2);
    assert!(
        missing
            .stderr
            .contains("--api-key-env: $NO_SUCH_VARIABLE_SET is not set or empty"),
        "{}",
        missing.stderr
    );
}

#[test]
fn credentials_in_urls_are_used_but_never_shown_or_recorded() {
    let server = crate::support::SimLlm::start(&[], &[]);
    let dir = tempdir();
    let secret = "S3CRET-in-the-url";
    let url = server
        .base_url
        .replace("http://", &format!("http://analyst:{secret}@"));
    let p = write_json(
        dir.path(),
        "plan.json",
        &crate::support::plan("t", &[("1", "a", &[]), ("2", "b", &["1"])]),
    );
    // An MCP server behind credentials that cannot be reached: its failure is reported.
    let mcp = write_json(
        dir.path(),
        "mcp.json",
        &serde_json::json!({"mcpServers": {"web": {"url": format!("http://tools:{secret}@127.0.0.1:9/mcp?token={secret}")}}}),
    );
    let out = dir.path().join("out");
    let r = crate::support::run_plan(&p, &out)
        .opt("--llm-base-url", &url)
        .opt("--model", "planwave-sim-1")
        .opt(
            "--otlp-endpoint",
            format!("http://collector:{secret}@127.0.0.1:9"),
        )
        .opt("--mcp-config", &mcp)
        .run();
    assert!(r.stderr.contains("MCP server web"), "{}", r.stderr);
    r.expect_ok();
    assert!(
        server.stats()["requests"].as_u64() >= Some(3),
        "the model was reached"
    );
    assert!(r.stderr.contains("://***@127.0.0.1"), "{}", r.stderr);
    let leaks = |stdout: &str, stderr: &str| {
        let mut places: Vec<String> = crate::support::all_files(&out)
            .into_iter()
            .filter(|(_, text)| text.contains(secret))
            .map(|(p, _)| p.display().to_string())
            .collect();
        if stdout.contains(secret) {
            places.push("stdout".into());
        }
        if stderr.contains(secret) {
            places.push("stderr".into());
        }
        places
    };
    assert_eq!(leaks(&r.stdout, &r.stderr), Vec::<String>::new());
    // Log lines too: libraries log the URLs they hold (rmcp's transport errors at -vv).
    let logged = crate::support::run_plan(&p, dir.path().join("logged"))
        .arg("-vv")
        .opt("--llm-base-url", &url)
        .opt("--model", "planwave-sim-1")
        .opt("--mcp-config", &mcp)
        .run();
    logged.expect_ok();
    assert!(
        logged.stderr.contains("token=***"),
        "the failure was logged: {}",
        logged.stderr
    );
    assert!(
        !logged.stderr.contains(secret),
        "a log line leaked the secret"
    );
    let inv = crate::support::read_json(&out.join("invocation.json"));
    assert_eq!(
        inv["redacted"],
        serde_json::json!(["--llm-base-url", "--otlp-endpoint"])
    );

    // Resuming needs the URL again, from the environment: it was not recorded.
    let r = crate::support::planwave(["resume"]).arg(&out).run();
    r.expect_code(2);
    assert!(
        r.stderr
            .contains("set PLANWAVE_LLM_BASE_URL to that URL to resume"),
        "{}",
        r.stderr
    );
    let r = crate::support::planwave(["resume"])
        .arg(&out)
        .env("PLANWAVE_LLM_BASE_URL", &url)
        .run();
    r.expect_ok();
    assert!(
        r.stderr.contains("--otlp-endpoint was not recorded"),
        "{}",
        r.stderr
    );
    assert_eq!(leaks(&r.stdout, &r.stderr), Vec::<String>::new());
}
