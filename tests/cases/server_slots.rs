//! A queue is not a stall: llama.cpp works on `total_slots` requests at once and holds the
//! response headers of any more until a slot frees, so a client sending more than that sees
//! its own queue as stalls. planwave reads the slots from `/props` and keeps its requests in
//! flight to them: a wave wider than the server never waits in the server's queue.

use serde_json::Value;

use crate::support::llama::Llama;
use crate::support::{plan, planwave, read_json, tempdir, write_json};

/// `llamacpp:requests_deferred` (requests waiting for a slot) from the server's metrics.
fn deferred(server: &Llama) -> u64 {
    let (_, metrics) = server.get("/metrics");
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("llamacpp:requests_deferred "))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .map_or(0, |v| v as u64)
}

#[test]
fn a_wave_wider_than_the_servers_slots_waits_for_them_not_in_its_queue() {
    // One slot, three tasks that can all start at once.
    let Some(server) = Llama::start(2048, 1) else {
        return;
    };
    let dir = tempdir();
    let tasks: &[(&str, &str, &[&str])] = &[
        ("1", "Acme's products", &[]),
        ("2", "Acme's customers", &[]),
        ("3", "Acme's rivals", &[]),
    ];
    let plan = write_json(dir.path(), "p.json", &plan("Acme", tasks));
    let out = dir.path().join("r");
    let mut run = planwave(["run"])
        .arg(&plan)
        .out(&out)
        .opt("--llm-base-url", &server.base_url)
        .opt("--model", "smollm2")
        .opt("--max-output", "subagent=8,integrator=8")
        .quiet()
        .spawn();
    // The run takes seconds per call on two busy cores; a request waiting for the slot is
    // deferred for as long as the one ahead of it runs.
    let mut most_deferred = 0;
    while run.child.try_wait().expect("wait").is_none() {
        most_deferred = most_deferred.max(deferred(&server));
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let (code, stdout) = run.wait();
    assert_eq!(
        most_deferred, 0,
        "a request waited in the server's queue: {stdout}"
    );
    // Every task got its answer (cut at the small cap: `truncated`, exit 3), none failed on
    // a stall.
    let run: Value = read_json(&out.join("run.json"));
    for t in run["tasks"].as_array().expect("tasks") {
        assert!(
            t["status"] == "completed" || t["status"] == "truncated",
            "{t}"
        );
    }
    assert!(code == 0 || code == 3, "{stdout}");
}
