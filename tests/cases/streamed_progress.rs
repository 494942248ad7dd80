//! The progress lines of a streamed plan: each task's line is timed by when it happened and
//! names the task, though the display opened on the plan's first tasks and got the events
//! that waited for it all at once (they used to read `[0.000s]`).

use crate::support::{planwave, tempdir};

/// `(seconds, text)` of every `[   1.234s] text` line.
fn timed_lines(stderr: &str) -> Vec<(f64, String)> {
    stderr
        .lines()
        .filter_map(|l| {
            let (t, text) = l.strip_prefix('[')?.split_once("s] ")?;
            Some((t.trim().parse().ok()?, text.to_owned()))
        })
        .collect()
}

#[test]
fn a_streamed_plans_task_lines_carry_their_times_and_titles() {
    let dir = tempdir();
    let res = planwave(["research", "深度分析特斯拉公司"])
        .out(dir.path().join("r"))
        .opt("--llm", "sim")
        // Every call takes exactly 100 ms; the plan streams, so tasks start while it is written.
        .opt("--sim-latency-ms", "100")
        .opt("--sim-sigma", "0")
        .opt("--sim-tokens-per-sec", "planner=200")
        .opt("--max-rounds", "1")
        .run();
    res.expect_ok();
    let lines = timed_lines(&res.stderr);
    let started: Vec<&(f64, String)> = lines
        .iter()
        .filter(|(_, l)| l.contains(" started (wave "))
        .collect();
    assert!(started.len() >= 3, "{}", res.stderr);
    for (t, line) in &started {
        let (head, title) = line.split_once("): ").expect("a title");
        assert!(!title.trim().is_empty(), "{line}");
        let id = head
            .trim_start_matches("task ")
            .split(' ')
            .next()
            .expect("an id");
        let done = lines
            .iter()
            .find(|(_, l)| l.starts_with(&format!("task {id} completed in ")))
            .unwrap_or_else(|| panic!("task {id} completed: {}", res.stderr));
        // The call between the two lines took 100 ms of simulated latency.
        assert!(done.0 - t >= 0.099, "{t} -> {}: {}", done.0, res.stderr);
    }
}
