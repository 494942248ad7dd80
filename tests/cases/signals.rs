//! Signals from pipes and service managers: a closed stdout ends the process by SIGPIPE
//! without a panic; SIGTERM stops a run as Ctrl-C does (exit 143, its MCP servers stopped)
//! and stops a load test with the figures of what it measured.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

use serde_json::json;

use crate::support::{SimLlm, planwave, tempdir, write_json};

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
