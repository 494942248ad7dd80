//! The queue's trust boundary through the real binary and a real `nats-server`: a message
//! anyone could publish on `planwave.jobs.>` is refused when any field of it is not what
//! `planwave batch` would have sent (terminated, not redelivered, recorded), and nothing it
//! names is written or removed outside the worker's cache; the worker's `--cache` is never a
//! directory it does not own.
//!
//! Hand-crafted messages go through a minimal client of the NATS text protocol (the test
//! binary links no NATS client): a publish and JetStream's API are requests with a reply
//! subject, answered by the server itself.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::nats::{Nats, WorkerProc, start_worker, wait_status};
use crate::support::{SimLlm, planwave, tempdir};

/// One connection speaking the NATS client protocol: enough for requests.
struct RawNats {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
    next: u64,
}

impl RawNats {
    fn connect(port: u16) -> RawNats {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to nats-server");
        stream
            .set_read_timeout(Some(Duration::from_secs(15)))
            .expect("timeout");
        let mut c = RawNats {
            writer: stream.try_clone().expect("clone"),
            reader: BufReader::new(stream),
            next: 0,
        };
        let info = c.line();
        assert!(info.starts_with("INFO "), "{info}");
        c.send(b"CONNECT {\"verbose\":false,\"pedantic\":false,\"protocol\":1}\r\n");
        c
    }

    fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).expect("write to nats-server");
    }

    fn line(&mut self) -> String {
        let mut l = String::new();
        self.reader
            .read_line(&mut l)
            .expect("read from nats-server");
        assert!(!l.is_empty(), "nats-server closed the connection");
        l.trim_end().to_owned()
    }

    /// Publishes `payload` on `subject` and returns the one reply, as JSON.
    fn request(&mut self, subject: &str, payload: &[u8]) -> Value {
        self.next += 1;
        let inbox = format!("_INBOX.hardening.{}", self.next);
        let mut out = format!("SUB {inbox} {n}\r\nUNSUB {n} 1\r\n", n = self.next).into_bytes();
        out.extend(format!("PUB {subject} {inbox} {}\r\n", payload.len()).as_bytes());
        out.extend(payload);
        out.extend(b"\r\n");
        self.send(&out);
        loop {
            let l = self.line();
            if l == "PING" {
                self.send(b"PONG\r\n");
            } else if let Some(head) = l.strip_prefix("MSG ") {
                let len: usize = head
                    .rsplit(' ')
                    .next()
                    .and_then(|n| n.parse().ok())
                    .expect("MSG length");
                let mut body = vec![0; len + 2];
                self.reader.read_exact(&mut body).expect("MSG body");
                body.truncate(len);
                return serde_json::from_slice(&body).expect("a JSON reply");
            } else {
                assert!(!l.starts_with("-ERR"), "nats-server: {l}");
            }
        }
    }

    /// Stored in the job stream (JetStream's publish acknowledgement says so).
    fn publish(&mut self, subject: &str, message: &Value) -> u64 {
        let ack = self.request(subject, message.to_string().as_bytes());
        assert_eq!(ack["stream"], "PLANWAVE_JOBS", "{ack}");
        ack["seq"].as_u64().expect("seq")
    }

    fn jobs_stream(&mut self) -> Value {
        self.request("$JS.API.STREAM.INFO.PLANWAVE_JOBS", b"")
    }

    fn workers_consumer(&mut self) -> Value {
        self.request("$JS.API.CONSUMER.INFO.PLANWAVE_JOBS.planwave-workers", b"")
    }

    /// Polls the workers' consumer until nothing is pending or awaiting an ack (at most
    /// 60 s): every message was settled for good.
    fn wait_settled(&mut self) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let c = self.workers_consumer();
            if c["num_ack_pending"] == 0 && c["num_pending"] == 0 {
                return c;
            }
            assert!(Instant::now() < deadline, "never settled: {c:#}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn one_task_plan(id: &str) -> Value {
    json!({"research_type": "company", "topic": id, "objectives": ["know it"],
           "tasks": [{"id": format!("{id}t1"), "description": "the one part",
                      "dependencies": [], "hints": {"key_questions": ["what?"]}}]})
}

/// A message as `planwave batch` sends it, but for `batch`, `id` and `dir` as given.
fn message(batch: &str, id: &str, dir: &str) -> Value {
    json!({"batch": batch, "id": id, "line": 1, "kind": "plan", "dir": dir,
           "work": {"plan": {"plan": "plan.json"}}, "options": {"meta": {}},
           "plan": one_task_plan("v")})
}

/// A message as the previous version sent it: the job as a raw job line.
fn old_message(batch: &str, id: &str) -> Value {
    json!({"batch": batch, "id": id, "line": 1, "kind": "plan", "dir": id,
           "job": {"id": id, "metadata": {}, "plan": one_task_plan("v")}})
}

fn submit_one(url: &str, dir: &Path, batch: &str, id: &str) {
    let file = dir.join(format!("{batch}.jsonl"));
    let line = json!({"id": id, "plan": one_task_plan(id)}).to_string();
    std::fs::write(&file, line + "\n").expect("write jobs");
    planwave(["batch"])
        .arg(&file)
        .opt("--nats", url)
        .opt("--batch", batch)
        .run()
        .expect_ok();
}

fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_message_naming_a_path_as_its_batch_is_terminated_and_removes_nothing_outside_the_cache() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "5", "--sigma", "0"], &[]);
    // What `cache.join("{batch}-{hex id}")` reached: the id "\0" is "00" in hex.
    let victim = dir.path().join("victim");
    for d in [victim.clone(), dir.path().join("victim-00")] {
        std::fs::create_dir_all(&d).expect("victim dir");
        std::fs::write(d.join("keep.txt"), "the operator's data").expect("victim file");
    }
    // A short ack-wait: a message left unsettled would come back within the test.
    let cache = dir.path().join("cache");
    let mut w = start_worker(&url, &sim, &cache, &["--ack-wait", "1s", "--jobs", "1"]);
    // Once it waits, the job stream exists (a publish before it would find no stream).
    w.running().wait_for("waiting for jobs", 1);
    let mut raw = RawNats::connect(nats.port);
    let absolute = victim.display().to_string();
    raw.publish("planwave.jobs.victim", &message(&absolute, "\0", "x"));
    raw.publish("planwave.jobs.victim", &message("../victim", "\0", "x"));
    w.running().wait_for("refused a message", 2);
    let seen = w.running().seen().to_vec();
    assert!(
        seen.iter().any(|l| l.contains(&format!(
            "batch name {absolute:?}: use 1-64 letters, digits, '_' or '-'"
        ))),
        "{seen:#?}"
    );
    assert!(
        seen.iter()
            .any(|l| l.contains("batch name \"../victim\": use 1-64")),
        "{seen:#?}"
    );
    // A real job after them runs: the worker is not stuck on them.
    submit_one(&url, dir.path(), "after", "ok");
    wait_status(&url, "after", 60, |s| s["counts"]["completed"] == 1);

    let consumer = raw.wait_settled();
    assert_eq!(consumer["num_redelivered"], 0, "{consumer:#}");
    // Terminated on a work queue: gone from the stream, not waiting for another delivery.
    let stream = raw.jobs_stream();
    assert_eq!(stream["state"]["messages"], 0, "{stream:#}");
    for d in [victim, dir.path().join("victim-00")] {
        assert_eq!(
            std::fs::read_to_string(d.join("keep.txt")).ok().as_deref(),
            Some("the operator's data"),
            "{}",
            d.display()
        );
        assert_eq!(entries(&d), ["keep.txt"], "{}", d.display());
    }
    let (code, seen) = w.terminate();
    assert_eq!(code, 0, "{seen:#?}");
    assert!(!cache.exists(), "a cache the worker made is removed");
}

#[test]
fn a_broken_message_for_a_submitted_job_ends_it_failed_once_with_the_reason_in_batch_status() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "5", "--sigma", "0"], &[]);
    submit_one(&url, dir.path(), "rec", "j1");
    // In place of the job's own message (seq 1), one a submitter could get wrong.
    let mut raw = RawNats::connect(nats.port);
    let deleted = raw.request(
        "$JS.API.STREAM.MSG.DELETE.PLANWAVE_JOBS",
        json!({"seq": 1}).to_string().as_bytes(),
    );
    assert_eq!(deleted["success"], true, "{deleted}");
    raw.publish("planwave.jobs.rec", &message("rec", "j1", "../../etc"));

    // A message of the previous version left in the stream: refused for good, saying so.
    submit_one(&url, dir.path(), "old", "j1");
    let seq = raw.jobs_stream()["state"]["last_seq"]
        .as_u64()
        .expect("seq");
    let deleted = raw.request(
        "$JS.API.STREAM.MSG.DELETE.PLANWAVE_JOBS",
        json!({"seq": seq}).to_string().as_bytes(),
    );
    assert_eq!(deleted["success"], true, "{deleted}");
    raw.publish("planwave.jobs.old", &old_message("old", "j1"));

    let mut w = start_worker(&url, &sim, &dir.path().join("cache"), &["--jobs", "1"]);
    let s = wait_status(&url, "rec", 60, |s| s["counts"]["failed"] == 1);
    let job = &s["jobs"][0];
    assert_eq!(job["state"], "failed", "{job}");
    let reason = job["reason"].as_str().unwrap_or("");
    assert!(
        reason.starts_with("its message was refused: job directory \"../../etc\""),
        "{reason}"
    );
    let consumer = raw.wait_settled();
    assert_eq!(consumer["num_redelivered"], 0, "{consumer:#}");
    assert_eq!(raw.jobs_stream()["state"]["messages"], 0);
    assert_eq!(sim.stats()["requests"], 0, "the job never ran");

    let s = wait_status(&url, "old", 60, |s| s["counts"]["failed"] == 1);
    let reason = s["jobs"][0]["reason"].as_str().unwrap_or("");
    assert!(
        reason.starts_with("its message was refused: a message of the previous version"),
        "{reason}"
    );

    assert_eq!(sim.stats()["requests"], 0, "the job never ran");
    let (code, seen) = w.terminate();
    assert_eq!(code, 0, "{seen:#?}");
    assert!(
        seen.iter()
            .any(|l| l.contains("refused a message on \"planwave.jobs.rec\"")),
        "{seen:#?}"
    );
}

/// The worker's exit code, or a failure if it is still running after 30 s (it started).
fn exits_early(mut w: WorkerProc) -> (i32, Vec<String>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = w.running().child.try_wait().expect("wait") {
            let mut r = w.0.take().expect("running");
            // Every line it printed: waiting for one that never comes reads to the end.
            let _ =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| r.wait_for("\u{0}", 1)));
            return (status.code().unwrap_or(-1), r.seen().to_vec());
        }
        if Instant::now() > deadline {
            let (_, seen) = w.terminate();
            panic!("the worker started on a directory that is not its own: {seen:#?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn worker_cache_not_its_own_is_refused_and_one_it_was_given_is_left_as_found() {
    let dir = tempdir();
    let Some(nats) = Nats::start(&dir.path().join("js"), &[]) else {
        return;
    };
    let url = nats.url();
    let sim = SimLlm::start(&["--latency-ms", "5", "--sigma", "0"], &[]);

    // Someone's directory (the one a worker was started in, say): refused, untouched.
    let mine = dir.path().join("mine");
    std::fs::create_dir(&mine).expect("mkdir");
    std::fs::write(mine.join("notes.txt"), "mine").expect("write");
    let (code, seen) = exits_early(start_worker(&url, &sim, &mine, &[]));
    assert_eq!(code, 2, "{seen:#?}");
    assert!(
        seen.iter().any(|l| l.contains(&format!(
            "--cache {}: is not empty and is not a planwave worker's cache; choose a new or \
             empty directory",
            mine.display()
        ))),
        "{seen:#?}"
    );
    assert_eq!(entries(&mine), ["notes.txt"]);

    // An empty directory of the person's: used, and left there empty.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).expect("mkdir");
    let mut w = start_worker(&url, &sim, &empty, &["--jobs", "1"]);
    w.running().wait_for("waiting for jobs", 1);
    let (code, seen) = exits_early(start_worker(&url, &sim, &empty, &[]));
    assert_eq!(code, 2, "{seen:#?}");
    assert!(
        seen.iter()
            .any(|l| l.contains("is the cache of another running worker")),
        "{seen:#?}"
    );
    submit_one(&url, dir.path(), "own", "j1");
    wait_status(&url, "own", 60, |s| s["counts"]["completed"] == 1);
    let (code, seen) = w.terminate();
    assert_eq!(code, 0, "{seen:#?}");
    assert!(empty.is_dir(), "the person's directory stays");
    assert_eq!(
        entries(&empty),
        Vec::<String>::new(),
        "nothing of its own left"
    );

    // A directory the worker made: removed with what it wrote.
    let new = dir.path().join("new");
    let mut w = start_worker(&url, &sim, &new, &["--jobs", "1"]);
    w.running().wait_for("waiting for jobs", 1);
    submit_one(&url, dir.path(), "made", "j1");
    wait_status(&url, "made", 60, |s| s["counts"]["completed"] == 1);
    let (code, seen) = w.terminate();
    assert_eq!(code, 0, "{seen:#?}");
    assert!(!new.exists(), "made by the worker: removed");
}
