//! How the process meets its surroundings: closed pipes, signals from service managers,
//! credentials in URLs, control characters in what it prints.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

use crate::support::{tempdir, write_json};

/// A plan whose `waves` output (~130 KB) is larger than a pipe holds, so the writer must
/// still be writing when the reader goes away.
fn wide_plan(dir: &std::path::Path) -> std::path::PathBuf {
    let tasks: Vec<serde_json::Value> = (1..=20_000)
        .map(|i| serde_json::json!({"id": i, "description": format!("task number {i} with a long description")}))
        .collect();
    write_json(
        dir,
        "wide.json",
        &serde_json::json!({"topic": "wide", "tasks": tasks}),
    )
}

#[test]
fn a_closed_stdout_ends_the_process_by_sigpipe_without_a_panic() {
    let dir = tempdir();
    let plan = wide_plan(dir.path());
    // `planwave waves wide.json | head -c 10`
    let mut child = Command::new(env!("CARGO_BIN_EXE_planwave"))
        .arg("waves")
        .arg(&plan)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut head = [0u8; 10];
    stdout.read_exact(&mut head).expect("the first bytes");
    drop(stdout);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("stderr");
    let status = child.wait().expect("wait");
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}: {stderr}");
    assert_eq!(stderr, "", "quiet, as Unix tools are");

    // `planwave waves wide.json 2>&1 | head -c 10`: stderr is the same closed pipe.
    let (mut reader, writer) = std::io::pipe().expect("pipe");
    let mut child = Command::new(env!("CARGO_BIN_EXE_planwave"))
        .arg("waves")
        .arg(&plan)
        .stdout(writer.try_clone().expect("clone"))
        .stderr(writer)
        .spawn()
        .expect("spawn");
    reader.read_exact(&mut head).expect("the first bytes");
    drop(reader);
    let status = child.wait().expect("wait");
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{status:?}");
}

#[test]
fn sigterm_stops_like_ctrl_c_with_exit_143_and_stops_the_mcp_servers() {
    let dir = tempdir();
    let Some(python) = crate::support::peer("py/bin/python") else {
        return;
    };
    let starts = dir.path().join("starts.txt");
    let cfg = write_json(
        dir.path(),
        "mcp.json",
        &serde_json::json!({"mcpServers": {"counter": {
            "command": python,
            "args": [crate::support::repo_file("tests/peers/mcp_crashy.py")],
            "env": {"CRASHY_STARTS": starts.to_str().expect("utf-8")}}}}),
    );
    let plan = crate::cases::durable::nine_tasks(dir.path());
    let out = dir.path().join("out");
    let mut child = crate::cases::durable::on_sim(&plan, &out, "150")
        .opt("--mcp-config", &cfg)
        .spawn();
    child.wait_for(" completed in ", 2);
    child.terminate();
    let (code, stdout) = child.wait();
    assert_eq!(code, 143, "{stdout}");
    assert!(
        stdout.contains(&format!("Continue with: planwave resume {}", out.display())),
        "{stdout}"
    );
    let run = crate::support::read_json(&out.join("run.json"));
    assert_eq!(run["status"], "cancelled");
    // The server was stopped (and reaped) before planwave exited: not left to init.
    let pid = std::fs::read_to_string(&starts).expect("the server started");
    let pid = pid.lines().next().expect("a pid").trim();
    assert!(
        !std::path::Path::new("/proc").join(pid).exists(),
        "MCP server {pid} outlived planwave"
    );
}

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
    assert!(r.stderr.contains("analyst:***@127.0.0.1"), "{}", r.stderr);
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

#[test]
fn control_characters_from_a_plan_are_escaped_on_the_terminal_and_kept_in_files() {
    let dir = tempdir();
    let topic = "Acme \u{1b}]0;pwned\u{7}review";
    let p = write_json(
        dir.path(),
        "plan.json",
        &serde_json::json!({"topic": topic, "tasks": [
            {"id": "a\u{1b}[2Jb", "description": "clear \u{1b}[2J the screen"},
            {"id": "c", "description": "after", "dependencies": ["a\u{1b}[2Jb"], "hints": {"suggested_tools": ["x\u{1b}[31m"]}}
        ]}),
    );
    let out = dir.path().join("out");
    let outputs = [
        crate::support::planwave(["validate"]).arg(&p).run(),
        crate::support::planwave(["waves"]).arg(&p).run(),
        crate::support::run_plan(&p, &out).run(),
        crate::support::planwave(["show"]).arg(&out).run(),
    ];
    for o in &outputs {
        assert_eq!(o.code, 0, "{}", o.stderr);
        for text in [&o.stdout, &o.stderr] {
            assert!(
                !text.contains('\u{1b}') && !text.contains('\u{7}'),
                "{text:?}"
            );
        }
    }
    // Escaped visibly, not dropped: the reader sees something was there.
    assert!(
        outputs[1].stdout.contains("a\\x1b[2Jb"),
        "{}",
        outputs[1].stdout
    );
    // Files keep the text as it was.
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(report.contains(topic), "{report}");
}
