//! A goal too vague to plan: the planner answers with clarifying questions instead of a
//! plan. Without a terminal the job never blocks: it ends `needs_input` (exit 5) with the
//! questions in `run.json`, and `--answers FILE` plans with the answers; on a terminal the
//! questions are asked and the goal planned with what is typed; `--no-questions` plans with
//! what the goal says. Offline, on the simulator, which asks about goals that name nothing.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::{Planwave, planwave, read_json, tempdir};

fn research(goal: &str, out: &Path) -> Planwave {
    planwave(["research", goal])
        .out(out)
        .instant()
        .quiet()
        .opt("--max-rounds", "1")
}

fn topic(out: &Path) -> String {
    read_json(&out.join("plan.json"))["topic"]
        .as_str()
        .expect("topic")
        .to_owned()
}

const QUESTIONS: [&str; 2] = [
    "您想分析哪家公司、哪个行业或哪个主题？",
    "分析的重点是什么（例如财务表现、竞争格局、投资价值）？",
];

#[test]
fn a_vague_goal_without_a_terminal_ends_needs_input_with_the_questions_in_run_json() {
    let dir = tempdir();
    let out = dir.path().join("vague");
    let res = research("分析一下", &out).run();
    res.expect_code(5);
    let run = read_json(&out.join("run.json"));
    assert_eq!(run["status"], "needs_input");
    assert_eq!(run["goal"], "分析一下");
    assert_eq!(run["questions"], serde_json::json!(QUESTIONS));
    assert!(!out.join("plan.json").exists(), "no plan was made");
    assert!(!out.join("report.md").exists(), "nothing ran");
    for q in QUESTIONS {
        assert!(res.stderr.contains(q), "{}", res.stderr);
    }
    assert!(res.stderr.contains("--answers FILE"), "{}", res.stderr);
    // The planner's answer is kept as every attempt is.
    let attempts = read_json(&out.join("planner/attempts.json"));
    assert_eq!(attempts.as_array().map(Vec::len), Some(1));

    // `plan` answers the same way: the questions, exit 5.
    let plan = planwave(["plan", "分析一下"]).instant().run();
    plan.expect_code(5);
    assert!(plan.stderr.contains(QUESTIONS[0]), "{}", plan.stderr);
}

#[test]
fn answers_from_a_file_plan_and_run_the_goal_they_clarify() {
    let dir = tempdir();
    // One answer per line, in the order of the questions.
    let text = dir.path().join("answers.txt");
    std::fs::write(&text, "特斯拉公司\n\n财务表现\n").expect("write");
    let out = dir.path().join("text");
    research("分析一下", &out)
        .opt("--answers", &text)
        .run()
        .expect_ok();
    assert_eq!(topic(&out), "特斯拉公司深度分析");
    assert_eq!(read_json(&out.join("run.json"))["status"], "completed");
    // The answers are part of the job: recorded for `resume`.
    let inv = read_json(&out.join("invocation.json"));
    assert_eq!(
        inv["spec"]["work"]["goal"]["research"]["answers"],
        serde_json::json!(["特斯拉公司", "财务表现"])
    );

    // Or a JSON list, with the questions they answer.
    let json = dir.path().join("answers.json");
    std::fs::write(
        &json,
        r#"[{"question": "Which company?", "answer": "比亚迪"}, "竞争格局"]"#,
    )
    .expect("write");
    let out = dir.path().join("json");
    research("分析一下", &out)
        .opt("--answers", &json)
        .run()
        .expect_ok();
    assert_eq!(topic(&out), "比亚迪深度分析");
}

#[test]
fn bad_answers_files_are_refused_naming_the_flag() {
    let dir = tempdir();
    let cases: [(&str, &str, &str); 3] = [
        ("empty.txt", "\n \n", "no answers"),
        (
            "key.json",
            r#"[{"answer": "x", "why": 1}]"#,
            "unknown field `why`",
        ),
        (
            "blank.json",
            r#"["x", " "]"#,
            "answers[1]: the answer is empty",
        ),
    ];
    for (name, text, problem) in cases {
        let f = dir.path().join(name);
        std::fs::write(&f, text).expect("write");
        let res = research("分析一下", &dir.path().join(name.replace('.', "_")))
            .opt("--answers", &f)
            .run();
        res.expect_code(2);
        assert!(
            res.stderr.contains("--answers") && res.stderr.contains(problem),
            "{name}: {}",
            res.stderr
        );
    }
}

#[test]
fn no_questions_plans_with_what_the_goal_says() {
    let dir = tempdir();
    let out = dir.path().join("as-is");
    research("分析一下", &out)
        .arg("--no-questions")
        .run()
        .expect_ok();
    assert_eq!(topic(&out), "分析一下深度分析");
}

#[test]
fn a_clear_goal_is_planned_without_questions() {
    let dir = tempdir();
    let out = dir.path().join("clear");
    research("深度分析特斯拉公司", &out).run().expect_ok();
    assert_eq!(topic(&out), "特斯拉公司深度分析");
}

/// On a terminal (a pseudo-terminal made by util-linux `script`, whose input is the pipe
/// written here) the questions are asked and the goal planned with the answers typed.
#[test]
fn on_a_terminal_the_questions_are_asked_and_the_answers_planned_with() {
    let dir = tempdir();
    let out = dir.path().join("asked");
    let command = format!(
        "{} research 分析一下 --out {} --llm sim --sim-latency-ms 0 --max-rounds 1 -q",
        env!("CARGO_BIN_EXE_planwave"),
        out.display()
    );
    let mut child = Command::new("script")
        .args(["-q", "-e", "-c", &command, "/dev/null"])
        .env_remove("PLANWAVE_CONFIG")
        .env_remove("PLANWAVE_LLM_BASE_URL")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("util-linux script");
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all("蔚来汽车\n财务表现\n".as_bytes())
            .expect("write answers");
    }
    let done = child.wait_with_output().expect("wait");
    let shown = String::from_utf8_lossy(&done.stdout);
    assert_eq!(done.status.code(), Some(0), "{shown}");
    for q in QUESTIONS {
        assert!(shown.contains(q), "{shown}");
    }
    assert_eq!(topic(&out), "蔚来汽车深度分析");
    let inv = read_json(&out.join("invocation.json"));
    assert_eq!(
        inv["spec"]["work"]["goal"]["research"]["answers"][0],
        serde_json::json!({"question": QUESTIONS[0], "answer": "蔚来汽车"})
    );
}

/// A batch never blocks: a vague goal job without answers ends `needs_input` with its
/// questions in the summary and its run.json; the same goal with the line's `answers` runs.
#[test]
fn a_batch_job_line_carries_answers_and_a_vague_goal_without_them_ends_needs_input() {
    let dir = tempdir();
    let jobs = dir.path().join("jobs.jsonl");
    std::fs::write(
        &jobs,
        concat!(
            "{\"id\": \"vague\", \"goal\": \"分析一下\"}\n",
            "{\"id\": \"answered\", \"goal\": \"分析一下\", \"answers\": [\"理想汽车\"]}\n",
            "{\"id\": \"bad\", \"goal\": \"分析一下\", \"answers\": [\"\"]}\n",
        ),
    )
    .expect("write jobs");
    let out = dir.path().join("b");
    let res = planwave(["batch"])
        .arg(&jobs)
        .out(&out)
        .opt("--llm", "sim")
        .instant()
        .opt("--max-rounds", "1")
        .quiet()
        .run();
    res.expect_code(3);
    assert!(
        res.stdout.contains("1 needs_input"),
        "the table counts it: {}",
        res.stdout
    );
    let summary = read_json(&out.join("batch.json"));
    let job = |id: &str| super::batch::job_in(&summary, id);
    assert_eq!(job("vague")["state"], "needs_input");
    assert_eq!(job("vague")["questions"], serde_json::json!(QUESTIONS));
    assert_eq!(summary["needs_input"], 1);
    let run = read_json(&out.join("jobs/vague/run.json"));
    assert_eq!(run["status"], "needs_input");
    assert_eq!(job("answered")["state"], "completed");
    assert_eq!(topic(&out.join("jobs/answered")), "理想汽车深度分析");
    let bad = &summary["bad_lines"][0];
    assert_eq!(bad["line"], 3);
    assert_eq!(
        bad["error"],
        "job \"bad\": answers answers[0]: the answer is empty"
    );
}
