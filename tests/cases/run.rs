//! `planwave run`: the run directory contract and the failure policy, through the real binary.

use std::path::Path;

use crate::support::{
    Planwave, events, id_text, plan, planwave, read_json, repo_file, run_plan, task, tempdir, ts,
    write_json,
};

fn is_micro_rfc3339(v: &serde_json::Value) -> bool {
    let s = v.as_str().unwrap_or("");
    // 2026-11-22T07:44:57.440765Z
    s.len() == 27
        && s.as_bytes()[10] == b'T'
        && s.ends_with('Z')
        && s.as_bytes()[19] == b'.'
        && s[20..26].bytes().all(|b| b.is_ascii_digit())
}

/// A plan on the instant simulator, retrying without waiting.
fn quick(plan: &Path, out: &Path) -> Planwave {
    run_plan(plan, out).fast_retries()
}

/// Five tasks: 1 -> 3 -> 4 and 2 -> 5.
fn five(dir: &Path) -> std::path::PathBuf {
    write_json(
        dir,
        "five.json",
        &plan(
            "Five tasks",
            &[
                ("1", "one", &[]),
                ("2", "two", &[]),
                ("3", "three", &["1"]),
                ("4", "four", &["3"]),
                ("5", "five", &["2"]),
            ],
        ),
    )
}

#[test]
fn a_valid_plan_writes_the_whole_run_directory() {
    let dir = tempdir();
    let out = dir.path().join("tesla");
    let res = quick(&repo_file("examples/tesla.json"), &out).run();
    res.expect_ok();
    assert!(res.stderr.contains("simulated LLM"), "{}", res.stderr);
    // No MCP server is configured: the plan's suggested tools are named once, not per task.
    let warnings: Vec<&str> = res
        .stderr
        .lines()
        .filter(|l| l.contains("warning"))
        .collect();
    assert_eq!(
        warnings,
        [format!(
            "{}: warning: no MCP tools are configured (--mcp-config): suggested tools ignored: \
             info_search_finance_db, info_search_stock_db",
            repo_file("examples/tesla.json").display()
        )],
        "{}",
        res.stderr
    );
    assert!(
        res.stdout
            .starts_with("completed: 4 completed, 0 failed, 0 blocked of 4 tasks"),
        "{}",
        res.stdout
    );

    let run = read_json(&out.join("run.json"));
    assert!(uuid::Uuid::parse_str(run["run_id"].as_str().expect("run_id")).is_ok());
    assert_eq!(run["status"], "completed");
    assert!(
        is_micro_rfc3339(&run["started_at"]) && is_micro_rfc3339(&run["finished_at"]),
        "{run}"
    );
    assert_eq!(run["llm"]["simulated"], true);
    for t in run["tasks"].as_array().expect("tasks") {
        assert_eq!(t["status"], "completed");
        assert_eq!(t["attempts"], 1);
        assert!(
            is_micro_rfc3339(&t["started_at"]) && is_micro_rfc3339(&t["finished_at"]),
            "{t}"
        );
        assert!(t["error"].is_null() && t["blocked_by"].is_null());
        let file = out.join(t["section_file"].as_str().expect("section_file"));
        assert!(
            std::fs::read_to_string(&file)
                .expect("section")
                .starts_with("## ")
        );
    }
    assert_eq!(task(&run, "4")["wave"], 1);
    assert_eq!(
        task(&run, "4")["context_from"],
        serde_json::json!([1, 2, 3])
    );

    let plan_json = read_json(&out.join("plan.json"));
    assert_eq!(plan_json["tasks"].as_array().map(Vec::len), Some(4));
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(report.starts_with("# 特斯拉公司深度分析\n"));
    let pos = |needle: &str| {
        report
            .find(needle)
            .unwrap_or_else(|| panic!("report lacks {needle}"))
    };
    assert!(pos("## 执行摘要") < pos("## 公司概况与业务模式分析"));
    assert!(pos("## 公司概况与业务模式分析") < pos("## 财务表现与关键指标分析"));
    assert!(pos("## 竞争格局与市场地位") < pos("## 综合评估与投资建议"));
    assert!(pos("## 综合评估与投资建议") < pos("```mermaid"));
    assert!(report.contains(":::completed") && report.contains("t0 --> t3"));
    // The subagent of task 4 was given the three prerequisite sections and says so.
    let s4 = std::fs::read_to_string(out.join("sections/4.md")).expect("section 4");
    assert!(
        s4.contains("任务 1「公司概况与业务模式分析」")
            && s4.contains("任务 3「竞争格局与市场地位」"),
        "{s4}"
    );

    let ev = events(&out);
    assert_eq!(
        ev.first().map(|e| e["type"].clone()),
        Some("run_started".into())
    );
    assert_eq!(
        ev.last().map(|e| e["type"].clone()),
        Some("run_finished".into())
    );
    assert_eq!(
        ev.iter().filter(|e| e["type"] == "task_completed").count(),
        4
    );
}

#[test]
fn a_failed_task_blocks_its_descendants_and_independent_tasks_go_on() {
    let dir = tempdir();
    let out = dir.path().join("out");
    let res = quick(&five(dir.path()), &out).opt("--sim-fail", "1").run();
    res.expect_code(3);
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "partial");
    let t1 = task(&run, "1");
    assert_eq!(t1["status"], "failed");
    assert_eq!(t1["attempts"], 2, "one retry by default");
    assert!(
        t1["error"]
            .as_str()
            .expect("error")
            .contains("simulated failure of task 1")
    );
    for id in ["3", "4"] {
        let t = task(&run, id);
        assert_eq!(t["status"], "blocked");
        assert_eq!(t["blocked_by"], 1);
        assert_eq!(t["attempts"], 0);
        assert!(t["started_at"].is_null(), "a blocked task never starts");
    }
    for id in ["2", "5"] {
        assert_eq!(task(&run, id)["status"], "completed");
    }
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(
        report.contains(
            "[Data retrieval failed: sim (planwave-sim-1): simulated failure of task 1 (attempt 2)]"
        ),
        "{report}"
    );
    assert_eq!(
        report
            .matches("[Not executed: prerequisite task 1 failed]")
            .count(),
        2
    );
    assert!(!out.join("sections/3.md").exists());
    let ev = events(&out);
    let kinds = |k: &str| {
        ev.iter()
            .filter(|e| e["type"] == k)
            .map(|e| id_text(&e["task"]))
            .collect::<Vec<_>>()
    };
    assert_eq!(kinds("task_retry"), ["1"]);
    assert_eq!(kinds("task_failed"), ["1"]);
    let mut blocked = kinds("task_blocked");
    blocked.sort();
    assert_eq!(blocked, ["3", "4"]);
}

#[test]
fn a_flaky_task_is_retried_and_completes() {
    let dir = tempdir();
    let out = dir.path().join("out");
    let res = quick(&five(dir.path()), &out).opt("--sim-flaky", "3").run();
    res.expect_ok();
    let run = read_json(&out.join("run.json"));
    assert_eq!(task(&run, "3")["attempts"], 2);
    assert_eq!(task(&run, "3")["status"], "completed");
    assert_eq!(run["stats"]["retries"], 1);
    assert_eq!(
        events(&out)
            .iter()
            .filter(|e| e["type"] == "task_retry")
            .count(),
        1
    );
}

#[test]
fn retries_zero_fails_a_flaky_task_at_once() {
    let dir = tempdir();
    let out = dir.path().join("out");
    let res = quick(&five(dir.path()), &out)
        .opt("--sim-flaky", "2")
        .opt("--retries", "0")
        .run();
    res.expect_code(3);
    let run = read_json(&out.join("run.json"));
    assert_eq!(task(&run, "2")["attempts"], 1);
    assert_eq!(task(&run, "5")["status"], "blocked");
}

#[test]
fn a_panicking_subagent_is_a_failed_task_not_a_crash() {
    let dir = tempdir();
    let out = dir.path().join("out");
    let res = quick(&five(dir.path()), &out).opt("--sim-panic", "2").run();
    res.expect_code(3);
    let run = read_json(&out.join("run.json"));
    let t2 = task(&run, "2");
    assert_eq!(t2["status"], "failed");
    assert!(
        t2["error"]
            .as_str()
            .expect("error")
            .starts_with("subagent panicked: simulated panic in task 2"),
        "{t2}"
    );
    assert_eq!(task(&run, "5")["status"], "blocked");
    assert_eq!(task(&run, "5")["blocked_by"], 2);
    for id in ["1", "3", "4"] {
        assert_eq!(task(&run, id)["status"], "completed");
    }
    assert!(
        std::fs::read_to_string(out.join("report.md"))
            .expect("report")
            .contains("[Not executed: prerequisite task 2 failed]")
    );
}

#[test]
fn chinese_plans_get_chinese_placeholders() {
    let dir = tempdir();
    let out = dir.path().join("out");
    let res = quick(&repo_file("examples/tesla.json"), &out)
        .opt("--sim-fail", "2")
        .run();
    res.expect_code(3);
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    assert!(
        report.contains(
            "[数据获取失败：sim (planwave-sim-1): simulated failure of task 2 (attempt 2)]"
        )
    );
    assert!(report.contains("[未执行：依赖任务 2 失败]"));
}

/// A (slow) and B (fast) have no prerequisites; C needs only B.
fn slow_fast(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let p = write_json(
        dir,
        "sf.json",
        &plan(
            "Slow and fast",
            &[
                ("A", "slow", &[]),
                ("B", "fast", &[]),
                ("C", "after fast", &["B"]),
            ],
        ),
    );
    let lat = write_json(
        dir,
        "lat.json",
        &serde_json::json!({"A": 400, "B": 5, "C": 5}),
    );
    (p, lat)
}

#[test]
fn dataflow_starts_a_task_when_its_own_prerequisites_finish() {
    let dir = tempdir();
    let (p, lat) = slow_fast(dir.path());
    let out = dir.path().join("out");
    let res = quick(&p, &out).opt("--sim-latency-file", &lat).run();
    res.expect_ok();
    let run = read_json(&out.join("run.json"));
    let (a, b, c) = (task(&run, "A"), task(&run, "B"), task(&run, "C"));
    assert!(
        ts(&c["started_at"]) >= ts(&b["finished_at"]),
        "never before its prerequisite"
    );
    assert!(
        ts(&c["started_at"]) < ts(&a["finished_at"]),
        "C must not wait for the unrelated slow task A"
    );
    assert!(ts(&c["finished_at"]) < ts(&a["finished_at"]));
}

#[test]
fn waves_schedule_keeps_a_barrier_after_every_wave() {
    let dir = tempdir();
    let (p, lat) = slow_fast(dir.path());
    let out = dir.path().join("out");
    let res = quick(&p, &out)
        .opt("--sim-latency-file", &lat)
        .opt("--schedule", "waves")
        .run();
    res.expect_ok();
    let run = read_json(&out.join("run.json"));
    assert!(
        ts(&task(&run, "C")["started_at"]) >= ts(&task(&run, "A")["finished_at"]),
        "wave 1 waits for all of wave 0"
    );
    assert_eq!(run["stats"]["schedule"], "waves");
}

#[test]
fn concurrency_cap_is_never_exceeded() {
    let dir = tempdir();
    let tasks: Vec<(String, String)> = (1..=12)
        .map(|i| (i.to_string(), format!("task {i}")))
        .collect();
    let spec: Vec<(&str, &str, &[&str])> = tasks
        .iter()
        .map(|(i, d)| (i.as_str(), d.as_str(), &[][..]))
        .collect();
    let p = write_json(dir.path(), "wide.json", &plan("Wide", &spec));
    let out = dir.path().join("out");
    planwave(["run"])
        .arg(&p)
        .out(&out)
        .opt("--concurrency", "3")
        .opt("--sim-latency-ms", "15")
        .opt("--sim-sigma", "0.5")
        .quiet()
        .run()
        .expect_ok();
    let run = read_json(&out.join("run.json"));
    let mut edges: Vec<(chrono::DateTime<chrono::FixedOffset>, i32)> = Vec::new();
    for t in run["tasks"].as_array().expect("tasks") {
        edges.push((ts(&t["started_at"]), 1));
        edges.push((ts(&t["finished_at"]), -1));
    }
    // Ends sort before starts at the same instant: a slot is free once its task finished.
    edges.sort();
    let mut running = 0;
    let mut peak = 0;
    for (_, d) in edges {
        running += d;
        peak = peak.max(running);
    }
    assert!(
        peak <= 3,
        "peak {peak} subagents in flight with --concurrency 3"
    );
    assert_eq!(peak, 3, "12 independent tasks should fill all 3 slots");
}

#[test]
fn files_named_from_hostile_ids_stay_inside_the_output_directory() {
    let dir = tempdir();
    let p = write_json(
        dir.path(),
        "evil.json",
        &plan(
            "Evil",
            &[
                ("../../escape", "one", &[]),
                ("/etc/passwd", "two", &["../../escape"]),
                ("a/b", "three", &[]),
            ],
        ),
    );
    let out = dir.path().join("nested").join("out");
    let res = quick(&p, &out).run();
    res.expect_ok();
    let run = read_json(&out.join("run.json"));
    for t in run["tasks"].as_array().expect("tasks") {
        let f = t["section_file"].as_str().expect("section_file");
        assert!(f.starts_with("sections/") && !f.contains(".."), "{f}");
        assert!(out.join(f).is_file());
    }
    let mut top: Vec<String> = std::fs::read_dir(dir.path())
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    assert_eq!(top, ["evil.json", "nested"]);
    assert_eq!(
        std::fs::read_dir(dir.path().join("nested"))
            .expect("ls")
            .count(),
        1
    );
}

#[test]
fn the_same_seed_replays_the_same_sections() {
    let dir = tempdir();
    let p = five(dir.path());
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    quick(&p, &a).opt("--seed", "7").run().expect_ok();
    quick(&p, &b).opt("--seed", "7").run().expect_ok();
    for id in 1..=5 {
        let f = format!("sections/{id}.md");
        assert_eq!(
            std::fs::read_to_string(a.join(&f)).expect("a"),
            std::fs::read_to_string(b.join(&f)).expect("b")
        );
    }
    let c = dir.path().join("c");
    quick(&p, &c).opt("--seed", "8").run().expect_ok();
    assert_ne!(
        std::fs::read_to_string(a.join("sections/1.md")).expect("a"),
        std::fs::read_to_string(c.join("sections/1.md")).expect("c")
    );
}

/// The integrator's transition paragraphs go between the sections they
/// connect, not in a list under the summary.
#[test]
fn each_transition_sits_between_the_two_sections_it_connects() {
    let dir = tempdir();
    let out = dir.path().join("out");
    quick(&five(dir.path()), &out).quiet().run().expect_ok();
    let report = std::fs::read_to_string(out.join("report.md")).expect("report");
    let pos = |needle: &str| {
        report
            .find(needle)
            .unwrap_or_else(|| panic!("report lacks {needle:?}:\n{report}"))
    };
    // Report order 1, 2, 3, 4, 5: one sentence per adjacent pair.
    let titles = ["one", "two", "three", "four", "five"];
    for pair in titles.windows(2) {
        let sentence = pos(&format!("\n\"{}\" builds on \"{}\".\n", pair[1], pair[0]));
        assert!(pos(&format!("\n## {}\n", pair[0])) < sentence, "{pair:?}");
        assert!(
            sentence < pos(&format!("\n## {}\n", pair[1])),
            "{pair:?}:\n{report}"
        );
    }
    let summary = &report[pos("## Executive summary")..pos("\n## one\n")];
    assert!(
        !summary.contains("Transitions") && !summary.contains("\" builds on \""),
        "{summary}"
    );
    assert_eq!(report.matches("\" builds on \"").count(), 4, "{report}");
}
