//! `planwave serve`: the API over real HTTP, against the real binary on 127.0.0.1:0 with a
//! temporary `--data`: create, list, live state, SSE replay and `Last-Event-ID`, cancel,
//! resume (by the API and by `planwave resume`), invalid plans, the token off loopback, the
//! body limit, ids that try to leave the data directory, batches and research rounds.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::{Value, json};

use crate::support::{ChildGuard, first_line, planwave, tempdir, write_json};

/// A running `planwave serve`.
pub(crate) struct Serve {
    pub url: String,
    pub data: PathBuf,
    pub child: ChildGuard,
    _dir: Option<tempfile::TempDir>,
}

impl Serve {
    pub(crate) fn start(args: &[&str], env: &[(&str, &str)]) -> Serve {
        let dir = tempdir();
        let data = dir.path().join("data");
        let mut s = Serve::start_in(&data, "127.0.0.1:0", args, env);
        s._dir = Some(dir);
        s
    }

    pub(crate) fn start_in(data: &Path, addr: &str, args: &[&str], env: &[(&str, &str)]) -> Serve {
        let mut child = planwave(["serve", "--addr", addr, "--data"])
            .arg(data)
            .args(args)
            .envs(env)
            .spawn_server();
        let url = first_line(&mut child.0);
        assert!(
            url.starts_with("http://") && url.ends_with('/'),
            "first line: {url}"
        );
        Serve {
            url,
            data: data.to_path_buf(),
            child,
            _dir: None,
        }
    }

    pub(crate) fn at(&self, path: &str) -> String {
        format!("{}{}", self.url, path.trim_start_matches('/'))
    }
}

pub(crate) fn client() -> reqwest::Client {
    planwave_tls::http_client()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("client")
}

pub(crate) async fn get_json(url: &str) -> (u16, Value) {
    let r = client().get(url).send().await.expect("GET");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

pub(crate) async fn post_json(url: &str, body: &Value) -> (u16, Value) {
    let r = client().post(url).json(body).send().await.expect("POST");
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

/// Polls `check` every 50 ms until it gives a value, for at most 60 s.
pub(crate) async fn wait_until<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The run's state once it is no longer live.
pub(crate) async fn wait_done(s: &Serve, id: &str) -> Value {
    let url = s.at(&format!("api/runs/{id}"));
    wait_until("the run to end", || async {
        let (_, v) = get_json(&url).await;
        (v["live"] == false).then_some(v)
    })
    .await
}

pub(crate) fn chain(n: usize) -> Value {
    let tasks: Vec<Value> = (1..=n)
        .map(|i| {
            let deps: Vec<usize> = if i > 1 { vec![i - 1] } else { vec![] };
            json!({"id": i, "description": format!("Step {i} of the review"), "dependencies": deps})
        })
        .collect();
    json!({"topic": "Acme review", "tasks": tasks})
}

/// `host:port` of the server.
pub(crate) fn authority(s: &Serve) -> String {
    s.url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned()
}

/// The runs `GET /api/runs` lists.
pub(crate) async fn runs(s: &Serve) -> Vec<Value> {
    let (_, list) = get_json(&s.at("api/runs")).await;
    list["runs"].as_array().cloned().unwrap_or_default()
}

/// The status and JSON body of an answer, checking it is JSON with an `error`.
pub(crate) async fn json_error(r: reqwest::Response) -> (u16, String) {
    let code = r.status().as_u16();
    let kind = r
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let text = r.text().await.unwrap();
    assert!(
        kind.starts_with("application/json"),
        "{code}: {kind}: {text}"
    );
    let v: Value = serde_json::from_str(&text).expect("a JSON error");
    let error = v["error"].as_str().expect("error").to_owned();
    assert!(!error.is_empty(), "{text}");
    (code, error)
}

/// `POST /api/runs` with `body`, which must be a 201; the new run's id.
pub(crate) async fn create(s: &Serve, body: &Value) -> String {
    let (code, created) = post_json(&s.at("api/runs"), body).await;
    assert_eq!(code, 201, "{created}");
    created["id"].as_str().unwrap().to_owned()
}

/// The `status` of run `id` from `GET /api/runs/{id}`.
pub(crate) async fn status(s: &Serve, id: &str) -> Value {
    get_json(&s.at(&format!("api/runs/{id}"))).await.1["status"].clone()
}

/// Every SSE event (`id`, `event`, `data`) until `event: end`.
async fn sse(url: &str, last_event_id: Option<usize>) -> Vec<(Option<usize>, String, String)> {
    let mut req = client().get(url);
    if let Some(n) = last_event_id {
        req = req.header("Last-Event-ID", n.to_string());
    }
    let resp = req.send().await.expect("GET events");
    assert_eq!(resp.status().as_u16(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut body = resp.bytes_stream();
    let mut buf = String::new();
    let mut out = Vec::new();
    while let Some(chunk) = body.next().await {
        buf.push_str(&String::from_utf8_lossy(&chunk.expect("chunk")));
        while let Some(at) = buf.find("\n\n") {
            let block: String = buf.drain(..at + 2).collect();
            let (mut id, mut event, mut data) = (None, "message".to_owned(), String::new());
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = v.parse().ok();
                } else if let Some(v) = line.strip_prefix("event: ") {
                    event = v.to_owned();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push_str(v);
                }
            }
            if data.is_empty() && id.is_none() {
                continue; // a keep-alive comment
            }
            let end = event == "end";
            out.push((id, event, data));
            if end {
                return out;
            }
        }
    }
    panic!("the event stream closed without `end`: {out:?}");
}

fn types(events: &[(Option<usize>, String, String)]) -> Vec<String> {
    events
        .iter()
        .filter(|e| e.1 == "message")
        .map(|e| {
            let v: Value = serde_json::from_str(&e.2).expect("event JSON");
            v["type"].as_str().unwrap_or("").to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_runs_a_plan_and_streams_it_live_then_replays_and_resumes_the_stream() {
    let dir = tempdir();
    let data = dir.path().join("data");
    let s = Serve::start_in(&data, "127.0.0.1:0", &[], &[]);
    let (code, created) = post_json(
        &s.at("api/runs"),
        &json!({"plan": chain(3), "options": {"sim_latency_ms": 200, "sim_sigma": 0}}),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let id = created["id"].as_str().expect("id").to_owned();
    assert_eq!(created["links"]["self"], format!("/api/runs/{id}"));
    assert_eq!(created["links"]["page"], format!("/runs/{id}"));
    // Followed while it runs: the journal from its first event, then live, to `end`.
    let live = sse(&s.at(&format!("api/runs/{id}/events")), None).await;
    let ids: Vec<usize> = live.iter().filter_map(|e| e.0).collect();
    assert_eq!(ids, (1..=ids.len()).collect::<Vec<_>>(), "ids count from 1");
    let kinds = types(&live);
    assert_eq!(kinds.first().map(String::as_str), Some("run_started"));
    assert_eq!(kinds.last().map(String::as_str), Some("run_finished"));
    assert_eq!(kinds.iter().filter(|k| *k == "task_completed").count(), 3);
    assert_eq!(live.last().unwrap().1, "end");

    let done = wait_done(&s, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    // The state of a finished run is its run.json.
    let on_disk: Value =
        serde_json::from_slice(&std::fs::read(s.data.join(&id).join("run.json")).unwrap()).unwrap();
    assert_eq!(done["run_id"], on_disk["run_id"]);
    assert_eq!(done["tasks"], on_disk["tasks"]);

    // The stream is the journal, line for line (a completion without its section text,
    // which the sections endpoint serves), so ids mean the same after a restart.
    let journal = std::fs::read_to_string(s.data.join(&id).join("events.jsonl")).unwrap();
    let streamed: Vec<Value> = live
        .iter()
        .filter(|e| e.1 == "message")
        .map(|e| serde_json::from_str(&e.2).unwrap())
        .collect();
    let journaled: Vec<Value> = journal
        .lines()
        .map(|l| {
            let mut v: Value = serde_json::from_str(l).unwrap();
            if v["type"] == "task_completed" {
                assert!(v["section"].is_string(), "the journal keeps the section");
                v.as_object_mut().unwrap().remove("section");
            }
            v
        })
        .collect();
    assert_eq!(streamed, journaled);
    // Replay from the start gives the same events; Last-Event-ID resumes after one.
    let replay = sse(&s.at(&format!("api/runs/{id}/events")), None).await;
    assert_eq!(replay, live);
    let k = 5;
    let rest = sse(&s.at(&format!("api/runs/{id}/events")), Some(k)).await;
    assert_eq!(rest, live[k..].to_vec());

    // Listed, with its report as Markdown or HTML, and each section.
    let (_, list) = get_json(&s.at("api/runs")).await;
    let row = list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id.as_str())
        .expect("listed");
    assert_eq!(row["status"], "completed");
    assert_eq!(row["tasks"], 3);
    assert_eq!(row["completed"], 3);
    assert!(row["tokens"].as_u64().unwrap() > 0);
    let md = client()
        .get(s.at(&format!("api/runs/{id}/report")))
        .send()
        .await
        .unwrap();
    assert!(
        md.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/markdown")
    );
    let md = md.text().await.unwrap();
    assert_eq!(
        md,
        std::fs::read_to_string(s.data.join(&id).join("report.md")).unwrap()
    );
    let html = client()
        .get(s.at(&format!("api/runs/{id}/report")))
        .header("Accept", "text/html")
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"));
    let (code, sec) = get_json(&s.at(&format!("api/runs/{id}/sections/2"))).await;
    assert_eq!(code, 200);
    assert_eq!(sec["task"]["status"], "completed");
    assert_eq!(
        sec["section"].as_str().unwrap(),
        std::fs::read_to_string(s.data.join(&id).join("sections/2.md")).unwrap()
    );
    assert_eq!(sec["model_calls"].as_array().unwrap().len(), 1);
    let (code, _) = get_json(&s.at(&format!("api/runs/{id}/sections/9"))).await;
    assert_eq!(code, 404);

    // Another server on the same data replays the run from its journal, ids unchanged.
    drop(s);
    let s = Serve::start_in(&data, "127.0.0.1:0", &[], &[]);
    let again = sse(&s.at(&format!("api/runs/{id}/events")), None).await;
    assert_eq!(again, live);
    let rest = sse(&s.at(&format!("api/runs/{id}/events")), Some(k)).await;
    assert_eq!(rest, live[k..].to_vec());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_gives_live_state_cancels_and_resumes_without_rerunning_completed_tasks() {
    let s = Serve::start(&[], &[]);
    let (code, created) = post_json(
        &s.at("api/runs"),
        &json!({"plan": chain(4), "options": {"sim_latency_ms": 400, "sim_sigma": 0}}),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let url = s.at(&format!("api/runs/{id}"));
    // Live state in the run.json shape while it runs.
    let live = wait_until("task 1 to complete", || async {
        let (_, v) = get_json(&url).await;
        (v["tasks"][0]["status"] == "completed").then_some(v)
    })
    .await;
    assert_eq!(live["live"], true);
    assert_eq!(live["status"], "running");
    assert_eq!(live["stats"]["tasks"], 4);
    assert_eq!(live["tasks"].as_array().unwrap().len(), 4);
    assert_eq!(live["tasks"][3]["status"], "pending");
    let (code, body) = post_json(&s.at(&format!("api/runs/{id}/cancel")), &json!({})).await;
    assert_eq!(code, 202, "{body}");
    let stopped = wait_done(&s, &id).await;
    assert_eq!(stopped["status"], "cancelled", "{stopped}");
    let kept = stopped["stats"]["completed"].as_u64().unwrap();
    assert!((1..4).contains(&kept), "{stopped}");
    let (code, _) = post_json(&s.at(&format!("api/runs/{id}/cancel")), &json!({})).await;
    assert_eq!(code, 409, "a stopped run cannot be cancelled");

    let (code, body) = post_json(&s.at(&format!("api/runs/{id}/resume")), &json!({})).await;
    assert_eq!(code, 202, "{body}");
    let done = wait_done(&s, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["stats"]["completed"], 4);
    // The tasks completed before the cancel were kept, not run again.
    let journal = std::fs::read_to_string(s.data.join(&id).join("events.jsonl")).unwrap();
    let resumed: Vec<Value> = journal
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "run_resumed")
        .collect();
    assert_eq!(resumed.len(), 1);
    assert_eq!(resumed[0]["completed"], kept);
    let (code, _) = post_json(&s.at(&format!("api/runs/{id}/resume")), &json!({})).await;
    assert_eq!(code, 409, "a completed run has nothing to resume");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_an_invalid_plan_with_every_problem_as_validate_prints_them() {
    let s = Serve::start(&[], &[]);
    let dir = tempdir();
    let bad = json!({"topic": "t", "tasks": [
        {"id": 1, "description": "a", "dependencies": [9]},
        {"id": 2, "description": "b", "dependencies": [3]},
        {"id": 3, "description": "c", "dependencies": [2]}]});
    let file = write_json(dir.path(), "bad.json", &bad);
    let out = planwave(["validate"]).arg(&file).run();
    out.expect_code(2);
    let prefix = format!("{}: ", file.display());
    let printed: Vec<String> = out
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix(&prefix).map(str::to_owned))
        .collect();
    assert_eq!(printed.len(), 2, "{}", out.stderr);
    let (code, body) = post_json(&s.at("api/runs"), &json!({"plan": bad})).await;
    assert_eq!(code, 422);
    assert_eq!(body["problems"], json!(printed));
    // Options: server paths refused and bad values, each named by its field.
    let (code, body) = post_json(
        &s.at("api/runs"),
        &json!({"plan": chain(1), "options": {"config": "/etc/passwd", "mcp_config": "x"}}),
    )
    .await;
    assert_eq!(code, 422);
    let problems: Vec<&str> = body["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(problems.len(), 2, "{body}");
    assert!(
        problems[0].starts_with("options.config: unknown field `config`"),
        "{body}"
    );
    assert!(
        problems[1].starts_with("options.mcp_config: unknown field"),
        "{body}"
    );
    for (options, field, says) in [
        (
            json!({"sim_latency_ms": "soon"}),
            "sim_latency_ms",
            "invalid type",
        ),
        (json!({"deadline": "-3s"}), "deadline", "cannot be negative"),
        (json!({"concurrency": 0}), "concurrency", "nonzero"),
        (
            json!({"sim_planner_faults": "cycle,oops"}),
            "sim_planner_faults",
            "\"oops\"",
        ),
        (json!({"max_rounds": 2}), "max_rounds", "only for a goal"),
    ] {
        let (code, body) = post_json(
            &s.at("api/runs"),
            &json!({"plan": chain(1), "options": options}),
        )
        .await;
        assert_eq!(code, 422, "{body}");
        let problem = body["problems"][0].as_str().unwrap();
        assert!(problem.starts_with(&format!("options.{field}: ")), "{body}");
        assert!(problem.contains(says), "{body}");
    }
    let (code, _) = post_json(&s.at("api/runs"), &json!({"plan": chain(1), "goal": "x"})).await;
    assert_eq!(code, 422);
    let r = client()
        .post(s.at("api/runs"))
        .header("Content-Type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 400);
    // Nothing was created by any of these.
    let (_, list) = get_json(&s.at("api/runs")).await;
    assert_eq!(list["runs"], json!([]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_limits_bodies_and_refuses_ids_that_leave_the_data_directory() {
    let s = Serve::start(&["--max-body", "64KiB"], &[]);
    let big = json!({"goal": "x".repeat(100_000)});
    let r = client()
        .post(s.at("api/runs"))
        .json(&big)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 413);
    // A file next to the data directory that a traversal would reach.
    std::fs::write(
        s.data.parent().unwrap().join("secret.json"),
        "{\"status\":\"secret\"}",
    )
    .unwrap();
    for path in [
        "api/runs/..%2Fsecret.json",
        "api/runs/%2E%2E",
        "api/runs/.hidden",
        "api/runs/..%2F..%2Fetc/report",
        "api/runs/x%00y",
        "runs/..%2Fsecret.json",
        "runs/%2E%2E/dag.svg",
    ] {
        let r = client().get(s.at(path)).send().await.unwrap();
        let code = r.status().as_u16();
        let text = r.text().await.unwrap();
        assert!(code == 400 || code == 404, "{path}: {code}");
        assert!(!text.contains("secret\""), "{path}: {text}");
    }
    let (code, created) = post_json(
        &s.at("api/runs"),
        &json!({"plan": chain(1), "options": {"sim_latency_ms": 0}}),
    )
    .await;
    assert_eq!(code, 201);
    let id = created["id"].as_str().unwrap();
    wait_done(&s, id).await;
    for task in ["..%2F..%2Fsecret.json", "..%2Frun.json", "%2Fetc%2Fpasswd"] {
        let r = client()
            .get(s.at(&format!("api/runs/{id}/sections/{task}")))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 400, "{task}");
    }
    let (code, _) = get_json(&s.at("api/runs/no-such-run")).await;
    assert_eq!(code, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_needs_a_token_off_loopback_and_checks_it_on_api_and_pages() {
    let dir = tempdir();
    let refused = planwave(["serve", "--addr", "0.0.0.0:0", "--data"])
        .arg(dir.path().join("d"))
        .run();
    assert_ne!(refused.code, 0);
    assert!(
        refused.stderr.contains("PLANWAVE_SERVE_TOKEN"),
        "{}",
        refused.stderr
    );
    assert!(
        refused.stdout.is_empty(),
        "nothing listened: {}",
        refused.stdout
    );

    let token = "t0ken-for-this-test";
    let s = Serve::start_in(
        &dir.path().join("d"),
        "0.0.0.0:0",
        &[],
        &[("PLANWAVE_SERVE_TOKEN", token)],
    );
    // Only ever spoken to over loopback.
    let port = s
        .url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    let base = format!("http://127.0.0.1:{port}/");
    let c = client();
    for path in ["api/runs", "", "api/openapi.json", "assets/run.js"] {
        let r = c.get(format!("{base}{path}")).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 401, "{path} without a token");
        let r = c
            .get(format!("{base}{path}"))
            .bearer_auth("wrong")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 401, "{path} with a wrong token");
        let r = c
            .get(format!("{base}{path}"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200, "{path} with the token");
        assert!(
            !r.text().await.unwrap().contains(token),
            "{path} echoes the token"
        );
    }
    let r = c
        .post(format!("{base}api/runs"))
        .json(&json!({"plan": chain(1)}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    // A browser: ?token= once (redirected away from it), then the cookie.
    let r = planwave_tls::http_client()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{base}?token={token}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 303);
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_owned();
    let r = c
        .get(format!("{base}api/runs"))
        .header("Cookie", pair)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_lists_cli_runs_runs_batches_and_research_with_rounds() {
    let dir = tempdir();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let plan = write_json(dir.path(), "plan.json", &chain(2));
    crate::support::run_plan(&plan, data.join("from-cli"))
        .quiet()
        .run()
        .expect_ok();
    let s = Serve::start_in(&data, "127.0.0.1:0", &[], &[]);
    let (_, list) = get_json(&s.at("api/runs")).await;
    let row = &list["runs"][0];
    assert_eq!(row["id"], "from-cli");
    assert_eq!(row["status"], "completed");
    let (code, page) = (
        client()
            .get(s.at("runs/from-cli"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16(),
        client()
            .get(s.at("runs/from-cli"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
    );
    assert_eq!(code, 200);
    assert!(page.contains("data-task=\"2\""), "the DAG is on the page");

    let jobs = format!(
        "{}\n{}\nnot json\n{}\n",
        json!({"id": "p", "plan": chain(2)}),
        json!({"id": "g", "goal": "Solar panel makers in Europe"}),
        json!({"id": "f", "plan_file": "/etc/passwd"}),
    );
    let r = client()
        .post(s.at("api/batches?options=%7B%22sim_latency_ms%22%3A0%2C%22max_rounds%22%3A1%7D"))
        .header("Content-Type", "application/x-ndjson")
        .body(jobs)
        .send()
        .await
        .unwrap();
    // max_rounds is a research option: refused for the plan job, taken by the goal job.
    assert_eq!(r.status().as_u16(), 201);
    let batch: Value = r.json().await.unwrap();
    let runs = batch["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{batch}");
    assert_eq!(runs[0]["job"], "g");
    assert_eq!(batch["bad_lines"].as_array().unwrap().len(), 3, "{batch}");
    let id = runs[0]["id"].as_str().unwrap();
    assert!(id.starts_with(batch["batch"].as_str().unwrap()));
    let batch_id = batch["batch"].as_str().unwrap();
    let batch_url = s.at(&format!("api/batches/{batch_id}"));
    let (code, view) = get_json(&batch_url).await;
    assert_eq!(code, 200, "{view}");
    assert_eq!(view["runs"][0]["job"], "g");
    assert_eq!(view["runs"][0]["id"], id);
    assert_eq!(view["bad_lines"].as_array().unwrap().len(), 3, "{view}");
    let done = wait_done(&s, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["kind"], "research");
    // The batch once its run ended: counted by status, its run's summary with the job id.
    let (_, view) = get_json(&batch_url).await;
    assert_eq!(view["status"], "completed", "{view}");
    assert_eq!(view["counts"], json!({"completed": 1}), "{view}");
    assert_eq!(view["runs_total"], 1);
    assert_eq!(view["runs"][0]["status"], "completed", "{view}");
    assert_eq!(view["runs"][0]["live"], false);
    assert_eq!(view["tokens"], view["runs"][0]["tokens"]);
    assert!(view["tokens"].as_u64().unwrap() > 0, "{view}");
    let (_, batches) = get_json(&s.at("api/batches")).await;
    let rows = batches["batches"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{batches}");
    assert_eq!(rows[0]["batch"], batch_id);
    assert_eq!(rows[0]["counts"], json!({"completed": 1}));
    assert!(
        rows[0].get("runs").is_none(),
        "the list leaves the runs out"
    );
    let (code, _) = get_json(&s.at("api/batches/b-nope")).await;
    assert_eq!(code, 404);
    let (code, _) = get_json(&s.at("api/batches/..%2F..%2Fetc")).await;
    assert_eq!(code, 400);
    // The batch's record is not a run.
    let (_, list) = get_json(&s.at("api/runs")).await;
    assert!(
        list["runs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| !r["id"].as_str().unwrap().starts_with('.')),
        "{list}"
    );
    let (_, rounds) = get_json(&s.at(&format!("api/runs/{id}/rounds"))).await;
    assert_eq!(rounds.as_array().unwrap().len(), 1);
    assert!(
        rounds[0]["evaluation"]["overall_score"].is_number(),
        "{rounds}"
    );
    // Correct enough: the loop ended by its own rule, with no reflection call.
    assert!(rounds[0]["reflection"].is_null(), "{rounds}");

    let (_, doc) = get_json(&s.at("api/openapi.json")).await;
    for path in [
        "/api/runs",
        "/api/runs/{id}",
        "/api/runs/{id}/events",
        "/api/runs/{id}/report",
        "/api/runs/{id}/sections/{task}",
        "/api/runs/{id}/cancel",
        "/api/runs/{id}/resume",
        "/api/batches",
        "/api/batches/{id}",
    ] {
        assert!(
            doc["paths"][path].is_object(),
            "{path} in the OpenAPI document"
        );
    }
    assert!(doc["components"]["schemas"]["CreateRun"].is_object());
    assert!(doc["paths"]["/api/batches"]["get"].is_object());
    assert!(doc["components"]["schemas"]["BatchView"].is_object());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_stops_on_ctrl_c_leaving_runs_that_planwave_resume_finishes() {
    let mut s = Serve::start(&[], &[]);
    let (code, created) = post_json(
        &s.at("api/runs"),
        &json!({"plan": chain(4), "options": {"sim_latency_ms": 400, "sim_sigma": 0}}),
    )
    .await;
    assert_eq!(code, 201);
    let id = created["id"].as_str().unwrap().to_owned();
    let url = s.at(&format!("api/runs/{id}"));
    wait_until("task 1 to complete", || async {
        let (_, v) = get_json(&url).await;
        (v["tasks"][0]["status"] == "completed").then_some(())
    })
    .await;
    let pid = s.child.0.id().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = s.child.0.wait().expect("wait serve");
    assert_eq!(status.code(), Some(0), "a clean stop");
    let dir = s.data.join(&id);
    let run: Value = serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["status"], "cancelled");
    let out = planwave(["resume"]).arg(&dir).arg("--quiet").run();
    out.expect_ok();
    let run: Value = serde_json::from_slice(&std::fs::read(dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(run["status"], "completed");
    assert_eq!(run["stats"]["completed"], 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_shares_one_model_client_and_never_shows_its_key() {
    let key = "sk-serve-test-4f2b9a71e0";
    let model = crate::support::SimLlm::start(
        &[
            "--latency-ms",
            "20",
            "--sigma",
            "0",
            "--api-key-env",
            "SIM_KEY",
        ],
        &[("SIM_KEY", key)],
    );
    let s = Serve::start(
        &[],
        &[
            ("PLANWAVE_LLM_BASE_URL", model.base_url.as_str()),
            ("PLANWAVE_LLM_API_KEY", key),
            ("PLANWAVE_LLM_MODEL", "planwave-sim-1"),
        ],
    );
    let mut ids = Vec::new();
    for _ in 0..2 {
        let (code, created) = post_json(&s.at("api/runs"), &json!({"plan": chain(3)})).await;
        assert_eq!(code, 201, "{created}");
        ids.push(created["id"].as_str().unwrap().to_owned());
    }
    let mut seen = String::new();
    for id in &ids {
        let done = wait_done(&s, id).await;
        assert_eq!(done["status"], "completed", "{done}");
        assert_eq!(
            done["llm"]["simulated"], false,
            "the server's model answered: {done}"
        );
        seen.push_str(&done.to_string());
        for path in ["", "/events", "/report", "/sections/1", "/rounds"] {
            let r = client()
                .get(s.at(&format!("api/runs/{id}{path}")))
                .send()
                .await
                .unwrap();
            seen.push_str(&r.text().await.unwrap());
        }
        for (file, text) in crate::support::all_files(&s.data.join(id)) {
            assert!(!text.contains(key), "the key in {}", file.display());
        }
    }
    let (_, list) = get_json(&s.at("api/runs")).await;
    seen.push_str(&list.to_string());
    assert!(!seen.contains(key), "a response carried the API key");
    // Both runs' subagents asked the one configured server, with the key (a wrong one is a
    // 401 and the runs would not have completed).
    let stats = model.stats();
    assert_eq!(stats["roles"]["subagent"], 6, "{stats}");
    assert_eq!(stats["authorized"], stats["requests"], "{stats}");
}

/// A config pricing the simulator's model (high prices so a few calls cost cents).
pub(crate) fn priced_config(dir: &Path) -> PathBuf {
    let cfg = dir.join("planwave.toml");
    std::fs::write(
        &cfg,
        "[llm]\nprovider = \"sim\"\n[prices]\ncurrency = \"USD\"\n[prices.models.\"planwave-sim-1\"]\ninput_per_mtok = 1000.0\noutput_per_mtok = 2000.0\n",
    )
    .expect("write config");
    cfg
}

/// The cost the config above gives `stats.usage`.
fn priced(stats: &Value) -> f64 {
    let u = &stats["usage"];
    let n = |k: &str| u[k].as_f64().unwrap_or(0.0);
    (n("prompt_tokens") * 1000.0 + (n("completion_tokens") + n("reasoning_tokens")) * 2000.0) / 1e6
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_shows_the_running_cost_while_a_priced_run_goes_and_the_final_one_after() {
    let dir = tempdir();
    let cfg = priced_config(dir.path());
    let s = Serve::start(&["--config", cfg.to_str().unwrap()], &[]);
    let (code, created) = post_json(
        &s.at("api/runs"),
        &json!({"plan": chain(3), "options": {"sim_latency_ms": 500, "sim_sigma": 0}}),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let url = s.at(&format!("api/runs/{id}"));
    // While it runs, after its first call: the cost of the usage so far, by the config's
    // prices, in the live state and in the runs list.
    let live = wait_until("a live state with a call priced", || async {
        let (_, v) = get_json(&url).await;
        (v["live"] == true && v["stats"]["cost"]["total"].as_f64().unwrap_or(0.0) > 0.0)
            .then_some(v)
    })
    .await;
    let cost = &live["stats"]["cost"];
    assert_eq!(cost["currency"], "USD", "{live}");
    let total = cost["total"].as_f64().unwrap();
    let expect = priced(&live["stats"]);
    assert!((total - expect).abs() < 1e-9, "{total} vs {expect}");
    assert!(cost["by_model"]["planwave-sim-1"].is_number(), "{cost}");
    let (_, list) = get_json(&s.at("api/runs")).await;
    let row = list["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["id"] == id.as_str())
        .expect("the run in the list")
        .clone();
    assert!(row["cost"].as_f64().unwrap_or(0.0) >= total, "{row}");
    assert_eq!(row["currency"], "USD");
    let (_, summary) = get_json(&format!("{url}?tasks=false")).await;
    assert!(summary["stats"]["cost"]["total"].as_f64().unwrap_or(0.0) >= total);

    // At the end: run.json's cost, priced the same way, and more than the partial one.
    let done = wait_done(&s, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let last = done["stats"]["cost"]["total"]
        .as_f64()
        .expect("a final cost");
    let expect = priced(&done["stats"]);
    assert!((last - expect).abs() < 1e-9, "{last} vs {expect}");
    assert!(
        last > total,
        "three tasks cost more than the first call: {last} vs {total}"
    );
    let (_, list) = get_json(&s.at("api/runs")).await;
    assert_eq!(list["runs"][0]["cost"].as_f64(), Some(last), "{list}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_resumes_a_killed_run_recover_as_planwave_resume_does() {
    let s = Serve::start(&[], &[]);
    let dir = tempdir();
    let out = s.data.join("cli-recover");
    crate::cases::recover::killed_recover(dir.path(), &out);
    let (code, body) = post_json(&s.at("api/runs/cli-recover/resume"), &json!({})).await;
    assert_eq!(code, 202, "{body}");
    let done = wait_done(&s, "cli-recover").await;
    assert_eq!(done["status"], "completed", "{done}");
    let run: Value = serde_json::from_slice(&std::fs::read(out.join("run.json")).unwrap()).unwrap();
    // Its one round went on recovering: no loop, no evaluation, tasks done before kept.
    assert_eq!(run["loop_stop_reason"], "run_finished", "{run}");
    assert!(!out.join("rounds/1/evaluation.json").exists());
    let round = out.join("rounds/1");
    let calls = |id: &str| crate::support::journal_subagent_calls(&round, id);
    assert_eq!((calls("1"), calls("2"), calls("3")), (1, 2, 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_refuses_to_resume_a_run_recorded_only_as_a_command_line() {
    let s = Serve::start(&[], &[]);
    let (code, created) = post_json(
        &s.at("api/runs"),
        &json!({"plan": chain(4), "options": {"sim_latency_ms": 400, "sim_sigma": 0}}),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let url = s.at(&format!("api/runs/{id}"));
    wait_until("task 1 to complete", || async {
        let (_, v) = get_json(&url).await;
        (v["tasks"][0]["status"] == "completed").then_some(())
    })
    .await;
    let (code, _) = post_json(&s.at(&format!("api/runs/{id}/cancel")), &json!({})).await;
    assert_eq!(code, 202);
    let stopped = wait_done(&s, &id).await;
    assert!(stopped["stats"]["completed"].as_u64().unwrap() >= 1);
    // The job's spec is recorded, the request's options in it named as their flags and the
    // server's own under "host".
    let dir = s.data.join(&id);
    let inv: Value =
        serde_json::from_slice(&std::fs::read(dir.join("invocation.json")).unwrap()).unwrap();
    assert_eq!(inv["spec"]["options"]["sim_latency_ms"], 400.0, "{inv}");
    assert!(inv["spec"]["options"]["host"].is_object(), "{inv}");
    assert!(
        inv.get("argv").is_none(),
        "the server builds no command line: {inv}"
    );
    // What unreleased builds wrote for the same request: only its command line.
    let d = dir.canonicalize().unwrap().display().to_string();
    let old = json!({
        "argv": ["run", "--out", d, "--sim-latency-ms=0", "--sim-sigma=0", "--",
                 format!("{d}/plan.json")],
        "cwd": s.data,
    });
    std::fs::write(dir.join("invocation.json"), old.to_string()).unwrap();
    let (code, body) = post_json(&s.at(&format!("api/runs/{id}/resume")), &json!({})).await;
    assert_eq!(code, 422, "{body}");
    let problem = body["problems"][0].as_str().unwrap();
    assert!(
        problem.contains("invocation.json records only a command line")
            && problem.contains("start the job again with `planwave run PLAN --out DIR`"),
        "{body}"
    );
}
