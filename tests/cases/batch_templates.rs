//! `planwave batch` job lines with `template` and `vars`: each job's plan is the template
//! rendered with its own variables, with no planner call; a bad template or a missing
//! variable fails its line only.

use std::path::Path;

use serde_json::{Value, json};

use crate::cases::batch::jsonl;
use crate::support::{events, planwave, read_json, task, tempdir, write_json};

/// A research plan naming its company in the topic and in every task.
fn company_template() -> Value {
    json!({"research_type": "company", "topic": "{{ company }} ({{ ticker }}) 深度分析",
    "objectives": ["了解{{ company }}"],
    "tasks": [
        {"id": 1, "description": "{{ company }} 的商业模式", "dependencies": []},
        {"id": 2, "description": "{{ company }} 的财务 ({{ ticker | lower }})", "dependencies": [1]}
    ]})
}

/// A step plan: `{{ company }}` is a template variable, `{{profile.result}}` and
/// `{{extra.result}}` are references the run resolves.
fn steps_template() -> Value {
    json!({"goal": "Brief on {{ company }}", "steps": [
        {"step_id": "profile", "description": "Profile", "tool": "llm_call",
         "params": {"prompt": "Profile {{ company }}"}},
        {"step_id": "extra", "description": "Extra colour", "tool": "llm_call",
         "params": {"prompt": "Anything else on {{ company }}?"}, "optional": true},
        {"step_id": "summary", "description": "Summarise", "tool": "llm_call",
         "params": {"prompt": "Summarise {{profile.result}} and {{ extra.result }} for {{ company }}"},
         "dependencies": ["profile", "extra"]}
    ]})
}

fn templates(dir: &Path) {
    std::fs::create_dir_all(dir.join("plans")).expect("plans/");
    write_json(dir, "plans/company.json", &company_template());
    write_json(dir, "plans/steps.json", &steps_template());
}

fn planner_calls_in(job: &Path) -> usize {
    let journal = events(job)
        .iter()
        .filter(|e| e["type"] == "llm_call" && e["role"] == "planner")
        .count();
    let recorded = read_json(&job.join("run.json"))["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .filter(|c| c["role"] == "planner")
        .count();
    journal + recorded
}

#[test]
fn each_template_job_runs_its_own_rendered_plan_without_a_planner_call() {
    let dir = tempdir();
    templates(dir.path());
    let jobs = jsonl(
        dir.path(),
        "jobs.jsonl",
        &[
            json!({"id": "byd", "template": "plans/company.json",
                   "vars": {"company": "比亚迪", "ticker": "002594.SZ"}})
            .to_string(),
            json!({"id": "tesla", "template": "plans/company.json",
                   "vars": {"company": "Tesla \"TSLA\"", "ticker": "TSLA"},
                   "metadata": {"desk": "autos"}})
            .to_string(),
            json!({"id": "nio", "template": "plans/steps.json", "vars": {"company": "蔚来"}})
                .to_string(),
        ],
    );
    let out = dir.path().join("b");
    let r = planwave(["batch"])
        .arg(&jobs)
        .out(&out)
        .instant()
        .fast_retries()
        .quiet()
        // The optional step fails in every job that has it: its reference reads as "".
        .opt("--sim-fail", "extra")
        .run();
    r.expect_ok();

    let byd = read_json(&out.join("jobs/byd/plan.json"));
    assert_eq!(byd["topic"], "比亚迪 (002594.SZ) 深度分析");
    assert_eq!(byd["tasks"][1]["description"], "比亚迪 的财务 (002594.sz)");
    // A quote in a variable stays text: only string values are rendered, never the JSON.
    let tesla = read_json(&out.join("jobs/tesla/plan.json"));
    assert_eq!(tesla["topic"], "Tesla \"TSLA\" (TSLA) 深度分析");
    assert_eq!(
        tesla["tasks"][0]["description"],
        "Tesla \"TSLA\" 的商业模式"
    );
    assert_eq!(tesla["meta"], json!({"desk": "autos"}));

    // The step references were left to the run: kept in plan.json, then resolved, the
    // failed optional step's to "" (recorded), the completed step's to its result.
    let nio = read_json(&out.join("jobs/nio/plan.json"));
    assert_eq!(nio["topic"], "Brief on 蔚来");
    assert_eq!(
        nio["tasks"][2]["params"]["prompt"],
        "Summarise {{profile.result}} and {{ extra.result }} for 蔚来"
    );
    let run = read_json(&out.join("jobs/nio/run.json"));
    assert_eq!(run["status"], "completed", "{run}");
    let summary = task(&run, "summary");
    assert_eq!(summary["status"], "completed");
    assert_eq!(summary["empty_refs"], json!(["extra"]));

    let batch = read_json(&out.join("batch.json"));
    for (i, id) in ["byd", "tesla", "nio"].iter().enumerate() {
        let job = out.join("jobs").join(id);
        assert_eq!(planner_calls_in(&job), 0, "{id} called the planner");
        assert!(!job.join("planner").exists(), "{id}");
        let run = read_json(&job.join("run.json"));
        assert_eq!(run["plan_source"], "template", "{id}");
        assert_eq!(batch["jobs"][i]["kind"], "template", "{batch}");
    }
}

#[test]
fn a_missing_variable_or_a_bad_template_fails_its_line_and_the_other_jobs_run() {
    let dir = tempdir();
    templates(dir.path());
    std::fs::write(
        dir.path().join("plans/broken.json"),
        r#"{"topic": "{{ company", "tasks": [{"id": 1, "description": "d", "dependencies": []}]}"#,
    )
    .expect("write");
    write_json(
        dir.path(),
        "plans/cyclic.json",
        &json!({"topic": "{{ company }}", "tasks": [
            {"id": 1, "description": "d", "dependencies": [2]},
            {"id": 2, "description": "e", "dependencies": [1]}]}),
    );
    let lines = [
        json!({"id": "good", "template": "plans/company.json",
               "vars": {"company": "比亚迪", "ticker": "002594.SZ"}}),
        json!({"id": "missing", "template": "plans/company.json", "vars": {"company": "蔚来"}}),
        json!({"id": "syntax", "template": "plans/broken.json", "vars": {"company": "x"}}),
        json!({"id": "nofile", "template": "plans/nope.json", "vars": {"company": "x"}}),
        json!({"id": "cyclic", "template": "plans/cyclic.json", "vars": {"company": "x"}}),
        json!({"id": "stray", "plan_file": "plans/company.json", "vars": {"company": "x"}}),
        json!({"id": "good2", "template": "plans/company.json",
               "vars": {"company": "理想", "ticker": "LI"}}),
    ];
    let jobs = jsonl(
        dir.path(),
        "jobs.jsonl",
        &lines.iter().map(Value::to_string).collect::<Vec<_>>(),
    );
    let out = dir.path().join("b");
    let r = planwave(["batch"])
        .arg(&jobs)
        .out(&out)
        .instant()
        .quiet()
        .run();
    // Bad lines make the batch partial.
    r.expect_code(3);
    let name = jobs.display().to_string();
    for expected in [
        format!(
            "{name}: line 2: job \"missing\": template plans/company.json: tasks[1].description: undefined template variable \"ticker\" (not in the job's vars) (skipped)"
        ),
        format!(
            "{name}: line 3: job \"syntax\": template plans/broken.json: topic: syntax error: "
        ),
        format!("{name}: line 4: job \"nofile\": template plans/nope.json: cannot read: "),
        format!("{name}: line 5: job \"cyclic\": invalid plan: cycle: 1 -> 2 -> 1 (skipped)"),
        format!(
            "{name}: line 6: job \"stray\": vars go with a template (this job has plan_file) (skipped)"
        ),
    ] {
        assert!(r.stderr.contains(&expected), "{expected}\n{}", r.stderr);
    }
    let batch = read_json(&out.join("batch.json"));
    let bad: Vec<u64> = batch["bad_lines"]
        .as_array()
        .expect("bad_lines")
        .iter()
        .map(|b| b["line"].as_u64().expect("line"))
        .collect();
    assert_eq!(bad, vec![2, 3, 4, 5, 6]);
    let done: Vec<(&str, &str)> = batch["jobs"]
        .as_array()
        .expect("jobs")
        .iter()
        .map(|j| {
            (
                j["id"].as_str().unwrap_or(""),
                j["state"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(done, vec![("good", "completed"), ("good2", "completed")]);
    let li = read_json(&out.join("jobs/good2/plan.json"));
    assert_eq!(li["topic"], "理想 (LI) 深度分析");
}
