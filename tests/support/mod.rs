//! Helpers to run the real binary and read what it wrote.

pub mod llama;
pub mod nats;
pub mod nats_proxy;
pub mod otlp;

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// What one finished run of the binary printed, and how it exited.
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// Asserts the exit code, showing both streams when it differs.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Output {
        assert_eq!(
            self.code, code,
            "exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Asserts a successful exit (code 0).
    #[track_caller]
    pub fn expect_ok(&self) -> &Output {
        self.expect_code(0)
    }
}

/// A temporary directory removed when dropped.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("tempdir")
}

/// One invocation of the real binary, built argument by argument: paths are taken as they
/// are (no `to_str` at each call), and a developer's model, config and tracing variables are
/// never inherited.
#[must_use]
pub struct Planwave {
    cmd: Command,
    stdin: Option<Vec<u8>>,
}

/// `planwave ARGS...`; more arguments, options and environment follow by builder calls.
pub fn planwave<I, S>(args: I) -> Planwave
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_planwave"));
    // Tests must not pick up a developer's real model settings.
    for var in [
        "PLANWAVE_LLM_BASE_URL",
        "PLANWAVE_LLM_API_KEY",
        "PLANWAVE_LLM_MODEL",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "PLANWAVE_CONFIG",
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "RUST_LOG",
        "PLANWAVE_SERVE_TOKEN",
    ] {
        cmd.env_remove(var);
    }
    cmd.args(args);
    Planwave { cmd, stdin: None }
}

/// `planwave run PLAN --out OUT --sim-latency-ms 0`: a plan on the instant simulator.
pub fn run_plan(plan: impl AsRef<OsStr>, out: impl AsRef<OsStr>) -> Planwave {
    planwave(["run"]).arg(plan).out(out).instant()
}

impl Planwave {
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Planwave {
        self.cmd.arg(arg);
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Planwave
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd.args(args);
        self
    }

    /// An option with its value: `--flag VALUE`.
    pub fn opt(self, flag: &str, value: impl AsRef<OsStr>) -> Planwave {
        self.arg(flag).arg(value)
    }

    /// `--out DIR`.
    pub fn out(self, dir: impl AsRef<OsStr>) -> Planwave {
        self.opt("--out", dir)
    }

    /// `-q`: no progress display.
    pub fn quiet(self) -> Planwave {
        self.arg("-q")
    }

    /// `--sim-latency-ms 0`: the simulated model answers at once.
    pub fn instant(self) -> Planwave {
        self.opt("--sim-latency-ms", "0")
    }

    /// `--retry-backoff-ms 1`: retries without waiting.
    pub fn fast_retries(self) -> Planwave {
        self.opt("--retry-backoff-ms", "1")
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Planwave {
        self.cmd.env(key, value);
        self
    }

    pub fn envs<'a>(self, vars: impl IntoIterator<Item = &'a (&'a str, &'a str)>) -> Planwave {
        vars.into_iter().fold(self, |p, (k, v)| p.env(k, v))
    }

    /// Runs in `dir` (for relative paths as a person types them).
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Planwave {
        self.cmd.current_dir(dir);
        self
    }

    /// Bytes written to the binary's standard input (otherwise it reads nothing).
    pub fn stdin(mut self, input: impl Into<Vec<u8>>) -> Planwave {
        self.stdin = Some(input.into());
        self
    }

    /// Runs to the end.
    pub fn run(mut self) -> Output {
        let stdin = self.stdin.take();
        self.cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            });
        let mut child = self.cmd.spawn().expect("spawn planwave");
        if let Some(input) = stdin {
            let mut pipe = child.stdin.take().expect("stdin pipe");
            pipe.write_all(&input).expect("write stdin");
        }
        let out = child.wait_with_output().expect("wait planwave");
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Starts in the background (see [`Running`]).
    pub fn spawn(self) -> Running {
        Running::start(self.cmd)
    }

    /// Starts in the background with stdout piped (for servers that print their address).
    pub fn spawn_server(mut self) -> ChildGuard {
        let child = self
            .cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn planwave");
        ChildGuard(child)
    }
}

pub fn repo_file(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

pub fn write_json(dir: &Path, name: &str, value: &serde_json::Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec_pretty(value).expect("json")).expect("write");
    p
}

pub fn read_json(path: &Path) -> serde_json::Value {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parse {}: {e}", path.display()))
}

/// Rewrites a run's journal, line by line, as a crash or damage would leave it.
pub fn edit_journal(out: &Path, edit: impl FnOnce(Vec<String>) -> Vec<String>) {
    let journal = out.join("events.jsonl");
    let lines = std::fs::read_to_string(&journal)
        .expect("journal")
        .lines()
        .map(str::to_owned)
        .collect();
    let text: String = edit(lines).iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&journal, text).expect("write the journal");
}

/// Waits (polling, at most a minute) until `path` holds `needle`: for a state a process has
/// written to a file but announces nowhere else. Written is enough for a `kill -9` test: the
/// page cache outlives the process.
pub fn wait_for_in_file(path: &Path, needle: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !std::fs::read_to_string(path).is_ok_and(|t| t.contains(needle)) {
        assert!(
            std::time::Instant::now() < deadline,
            "waited a minute for {needle:?} in {}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Subagent model calls of task `id` in the journal (`events.jsonl`) of `dir`.
pub fn journal_subagent_calls(dir: &Path, id: &str) -> usize {
    events(dir)
        .iter()
        .filter(|e| e["type"] == "llm_call" && e["role"] == "subagent" && id_text(&e["task"]) == id)
        .count()
}

pub fn events(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .expect("events.jsonl")
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad event line {l}: {e}")))
        .collect()
}

/// The `tasks[]` entry of `run.json` with this id (compared as text).
pub fn task<'a>(run: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    run["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| id_text(&t["id"]) == id)
        .unwrap_or_else(|| panic!("no task {id}"))
}

pub fn id_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub fn ts(v: &serde_json::Value) -> chrono::DateTime<chrono::FixedOffset> {
    chrono::DateTime::parse_from_rfc3339(
        v.as_str().unwrap_or_else(|| panic!("not a timestamp: {v}")),
    )
    .expect("rfc3339")
}

/// A plan from `(id, description, deps)` triples.
pub fn plan(topic: &str, tasks: &[(&str, &str, &[&str])]) -> serde_json::Value {
    let tasks: Vec<serde_json::Value> = tasks
        .iter()
        .map(|(id, d, deps)| {
            let id: serde_json::Value = id.parse::<i64>().map(Into::into).unwrap_or_else(|_| (*id).into());
            let deps: Vec<serde_json::Value> = deps.iter().map(|d| d.parse::<i64>().map(Into::into).unwrap_or_else(|_| (*d).into())).collect();
            serde_json::json!({"id": id, "description": d, "dependencies": deps, "hints": {"key_questions": [format!("what about {d}?")]}})
        })
        .collect();
    serde_json::json!({"research_type": "company", "topic": topic, "objectives": ["understand it"], "tasks": tasks})
}

/// A child process killed when dropped (so a failing test leaves no server behind).
pub struct ChildGuard(pub std::process::Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Reads the first stdout line of a child within 30 s.
pub(crate) fn first_line(child: &mut std::process::Child) -> String {
    use std::io::BufRead;
    let stdout = child.stdout.take().expect("stdout piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = std::io::BufReader::new(stdout);
        let mut line = String::new();
        let _ = reader.read_line(&mut line);
        let _ = tx.send(line);
        // Keep draining so the child never blocks on a full pipe.
        let mut sink = String::new();
        while reader.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
            sink.clear();
        }
    });
    rx.recv_timeout(std::time::Duration::from_secs(30))
        .expect("the server printed its address")
        .trim()
        .to_owned()
}

/// `planwave sim-llm serve` on 127.0.0.1 with a free port, as a real separate process.
pub struct SimLlm {
    pub base_url: String,
    _child: ChildGuard,
}

impl SimLlm {
    pub fn start(args: &[&str], env: &[(&str, &str)]) -> SimLlm {
        let mut child = planwave(["sim-llm", "serve", "--addr", "127.0.0.1:0"])
            .args(args)
            .envs(env)
            .spawn_server();
        let base_url = first_line(&mut child.0);
        assert!(
            base_url.starts_with("http://127.0.0.1:") && base_url.ends_with("/v1"),
            "{base_url}"
        );
        SimLlm {
            base_url,
            _child: child,
        }
    }

    /// `GET /planwave/stats`, over plain HTTP/1.0.
    pub fn stats(&self) -> serde_json::Value {
        http_get_json(&self.base_url.replace("/v1", "/planwave/stats"))
    }
}

/// A minimal HTTP/1.0 GET on loopback, for test servers' status endpoints.
pub fn http_get_json(url: &str) -> serde_json::Value {
    let body = http_get_text(url);
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("bad JSON from {url}: {e}: {body}"))
}

/// As [`http_get_json`], the body as text.
pub fn http_get_text(url: &str) -> String {
    use std::io::Read;
    let rest = url.strip_prefix("http://").expect("http url");
    let (host, path) = rest.split_once('/').expect("path");
    let mut s = std::net::TcpStream::connect(host).expect("connect");
    write!(s, "GET /{path} HTTP/1.0\r\nHost: {host}\r\n\r\n").expect("send");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read");
    text.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default()
}

/// Where the test peers (npm/PyPI programs) are installed: `$PLANWAVE_PEERS_DIR`, else
/// `target/test-peers` as `.ci/peers` defaults.
pub fn peers_dir() -> PathBuf {
    std::env::var_os("PLANWAVE_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_file("target/test-peers"))
}

/// The path of an installed peer file, or `None` when peer tests are skipped on purpose
/// (`PLANWAVE_SKIP_PEER_TESTS=1`). A missing peer otherwise fails the test, loudly.
pub fn peer(rel: &str) -> Option<PathBuf> {
    let p = peers_dir().join(rel);
    if p.exists() {
        return Some(p);
    }
    if std::env::var("PLANWAVE_SKIP_PEER_TESTS").as_deref() == Ok("1") {
        eprintln!("skipping: peer {} is not installed", p.display());
        return None;
    }
    panic!(
        "test peer {} is missing: run `.ci/peers {}` (or set PLANWAVE_SKIP_PEER_TESTS=1 to skip peer tests)",
        p.display(),
        peers_dir().display()
    );
}

/// Every file under `dir`, with its contents (lossy UTF-8).
pub fn all_files(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let text = String::from_utf8_lossy(&std::fs::read(&p).expect("read")).into_owned();
                out.push((p, text));
            }
        }
    }
    out
}

/// The binary running in the background, its stderr read line by line on a thread, so a
/// test can wait for what it prints (instead of sleeping) before acting on it.
pub struct Running {
    pub child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    /// Every stderr line read so far.
    seen: Vec<String>,
    stdout: std::thread::JoinHandle<String>,
}

impl Running {
    fn start(mut cmd: Command) -> Running {
        use std::io::BufRead;
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn planwave");
        let stderr = child.stderr.take().expect("stderr piped");
        let mut out = child.stdout.take().expect("stdout piped");
        let stdout = std::thread::spawn(move || {
            use std::io::Read;
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            s
        });
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Running {
            child,
            lines: rx,
            seen: Vec::new(),
            stdout,
        }
    }

    /// Sends SIGINT, as Ctrl-C in a terminal does.
    pub fn interrupt(&self) {
        self.signal("-INT");
    }

    /// SIGTERM, as `docker stop`, systemd and `timeout` send it.
    pub fn terminate(&self) {
        self.signal("-TERM");
    }

    fn signal(&self, which: &str) {
        let ok = Command::new("kill")
            .args([which, &self.child.id().to_string()])
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill {which} failed");
    }

    /// Waits for the exit; returns the exit code and everything printed on stdout.
    pub fn wait(mut self) -> (i32, String) {
        let status = self.child.wait().expect("wait");
        let out = self.stdout.join().unwrap_or_default();
        (status.code().unwrap_or(-1), out)
    }

    /// Waits (at most 60 s) until `n` stderr lines so far contain `needle`.
    pub fn wait_for(&mut self, needle: &str, n: usize) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut hits = self.seen.iter().filter(|l| l.contains(needle)).count();
        while hits < n {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    hits += usize::from(l.contains(needle));
                    self.seen.push(l);
                }
                Err(_) => panic!("waited for {n} lines with {needle:?}; saw {:#?}", self.seen),
            }
        }
    }

    /// Every stderr line read so far (by [`Running::wait_for`]).
    pub fn seen(&self) -> &[String] {
        &self.seen
    }

    /// SIGKILL: no chance to clean up, like a crash or an OOM kill.
    pub fn kill_9(mut self) {
        self.child.kill().expect("kill");
        let _ = self.child.wait();
    }
}

/// The string value of the first `key = "value"` line of a repository TOML file.
pub fn read_toml_value(rel: &str, key: &str) -> String {
    let text = std::fs::read_to_string(repo_file(rel)).expect("toml file");
    text.lines()
        .find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().trim_matches('"').to_owned())
        })
        .unwrap_or_else(|| panic!("no {key} in {rel}"))
}
