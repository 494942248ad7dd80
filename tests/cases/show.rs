//! `planwave show DIR` over a real run directory.

use crate::support::{plan, planwave, read_json, run_plan, task, tempdir, write_json};

#[test]
fn show_tabulates_each_task_and_the_totals_of_run_json() {
    let dir = tempdir();
    let p = plan(
        "shown",
        &[
            ("1", "first part", &[]),
            ("2", "second part", &["1"]),
            ("3", "third part", &["2"]),
            ("4", "fourth part", &[]),
        ],
    );
    let file = write_json(dir.path(), "plan.json", &p);
    let out = dir.path().join("out");
    run_plan(&file, &out)
        .opt("--llm", "sim")
        .opt("--sim-fail", "2")
        .fast_retries()
        .quiet()
        .run()
        .expect_code(3);
    let record = read_json(&out.join("run.json"));
    let shown = planwave(["show"]).arg(&out).run();
    shown.expect_ok();
    let lines: Vec<&str> = shown.stdout.lines().collect();
    assert!(lines[0].starts_with(&format!(
        "run {}  shown",
        record["run_id"].as_str().expect("id")
    )));
    assert!(
        lines[1].starts_with("status partial  model planwave-sim-1 (sim, simulated)"),
        "{}",
        lines[1]
    );
    let row = |id: &str| -> Vec<String> {
        lines
            .iter()
            .find(|l| l.split_whitespace().next() == Some(id))
            .unwrap_or_else(|| panic!("no row for {id}:\n{}", shown.stdout))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    for (id, status, wave, attempts) in [
        ("1", "completed", "0", "1"),
        ("2", "failed", "1", "2"),
        ("3", "blocked", "2", "0"),
        ("4", "completed", "0", "1"),
    ] {
        let r = row(id);
        assert_eq!(
            (r[1].as_str(), r[2].as_str(), r[5].as_str()),
            (status, wave, attempts),
            "task {id}: {r:?}"
        );
        let t = task(&record, id);
        assert_eq!(
            r[6],
            t["usage"]["prompt_tokens"].to_string(),
            "task {id} tokens in"
        );
        assert_eq!(
            r[7],
            t["usage"]["completion_tokens"].to_string(),
            "task {id} tokens out"
        );
    }
    assert_eq!(row("3")[3], "-", "a blocked task never started");
    let total = row("total");
    assert_eq!(total[1], "2/4");
    assert_eq!(total[5], "4", "attempts summed");
    let tin: u64 = ["1", "2", "3", "4"]
        .iter()
        .map(|id| {
            task(&record, id)["usage"]["prompt_tokens"]
                .as_u64()
                .expect("n")
        })
        .sum();
    assert_eq!(total[6], tin.to_string());
    assert!(
        shown.stdout.contains(&format!(
            "tokens: {} total",
            record["stats"]["usage"]["prompt_tokens"]
                .as_u64()
                .expect("n")
                + record["stats"]["usage"]["completion_tokens"]
                    .as_u64()
                    .expect("n")
        )),
        "{}",
        shown.stdout
    );
    assert!(shown.stdout.contains("task 3 blocked: blocked by 2"));
    assert!(
        shown
            .stdout
            .contains("task 2 failed: sim (planwave-sim-1): simulated failure"),
        "{}",
        shown.stdout
    );
}

#[test]
fn show_on_a_directory_without_run_json_is_invalid_input() {
    let dir = tempdir();
    let res = planwave(["show"]).arg(dir.path()).run();
    res.expect_code(2);
    assert!(res.stderr.contains("no run.json here"), "{}", res.stderr);
}
