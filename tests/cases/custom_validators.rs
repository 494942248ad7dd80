//! Custom validators (`[validate] command = ["prog", "arg"]`): a program given the plan's
//! JSON on stdin answers a JSON list of problems. Its problems join the built-in ones in
//! `validate`, and send the planner's plan back for repair; a validator that fails, hangs or
//! answers something else is a clear error naming it; it is never run through a shell.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::support::{planwave, read_json, tempdir, write_json};

/// A validator in Python whose behaviour is its first argument; it records what it was
/// given (`seen.json`) and how often it ran (`count`) beside itself.
const SCRIPT: &str = r#"
import json, os, sys, time
here = os.path.dirname(os.path.abspath(__file__))
plan = json.load(sys.stdin)
with open(os.path.join(here, "seen.json"), "w") as f:
    json.dump({"argv": sys.argv[1:], "plan": plan}, f)
count = os.path.join(here, "count")
n = int(open(count).read()) if os.path.exists(count) else 0
with open(count, "w") as f:
    f.write(str(n + 1))
mode = sys.argv[1].split(";")[0]
if mode == "once":
    print(json.dumps(["task 1: name a data source"] if n == 0 else []))
elif mode == "always":
    print(json.dumps(["task 1: name a data source"]))
elif mode == "fail":
    sys.stderr.write("boom\n")
    sys.exit(3)
elif mode == "malformed":
    print('{"ok": true}')
elif mode == "slow":
    time.sleep(60)
"#;

/// A config file whose validator runs `SCRIPT` with `args`; returns it and the script's dir.
fn config(dir: &Path, args: &[&str], extra: &str) -> PathBuf {
    let script = dir.join("validator.py");
    std::fs::write(&script, SCRIPT).expect("script");
    let mut command = vec!["python3".to_owned(), script.to_string_lossy().into_owned()];
    command.extend(args.iter().map(|a| (*a).to_owned()));
    let toml = dir.join("planwave.toml");
    std::fs::write(
        &toml,
        format!("[validate]\ncommand = {}\n{extra}", json!(command)),
    )
    .expect("toml");
    toml
}

fn runs(dir: &Path) -> u32 {
    std::fs::read_to_string(dir.join("count"))
        .map(|s| s.trim().parse().expect("count"))
        .unwrap_or(0)
}

fn seen(dir: &Path) -> Value {
    read_json(&dir.join("seen.json"))
}

#[test]
fn the_validators_problems_send_the_plan_back_for_repair() {
    let dir = tempdir();
    let toml = config(dir.path(), &["once"], "");
    let out = dir.path().join("plan.json");
    let r = planwave(["plan", "深度分析特斯拉公司"])
        .opt("--config", &toml)
        .opt("--out", &out)
        .instant()
        .run();
    r.expect_ok();
    assert!(
        r.stderr
            .contains("planning attempt 1 (plan): 1 problem(s): task 1: name a data source"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("planning attempt 2 (repair): valid plan"),
        "{}",
        r.stderr
    );
    assert_eq!(runs(dir.path()), 2);
    // It was given the plan as plan.json holds it.
    let given = seen(dir.path())["plan"].clone();
    assert_eq!(given["tasks"], read_json(&out)["tasks"]);
    assert_eq!(given["plan_id"], read_json(&out)["plan_id"]);

    // A validator that never accepts: planning fails with its problem on every attempt.
    let dir = tempdir();
    let toml = config(dir.path(), &["always"], "");
    let r = planwave(["plan", "深度分析特斯拉公司"])
        .opt("--config", &toml)
        .opt("--planner-attempts", "2")
        .instant()
        .quiet()
        .run();
    r.expect_code(2);
    assert!(
        r.stderr.contains("attempt 2: task 1: name a data source"),
        "{}",
        r.stderr
    );
    assert_eq!(runs(dir.path()), 2);
}

#[test]
fn a_failing_validator_stops_planning_naming_it() {
    let dir = tempdir();
    let toml = config(dir.path(), &["fail"], "");
    let r = planwave(["plan", "Analyse Tesla"])
        .opt("--config", &toml)
        .instant()
        .quiet()
        .run();
    r.expect_code(2);
    assert!(
        r.stderr
            .contains("planner: attempt 1: custom validator python3 ")
            && r.stderr
                .contains("validator.py fail: it exited with status 3: boom"),
        "{}",
        r.stderr
    );
    // No repair can fix the validator: one attempt, not three.
    assert_eq!(runs(dir.path()), 1);
}

#[test]
fn validate_joins_its_problems_to_the_built_in_ones() {
    let dir = tempdir();
    let toml = config(dir.path(), &["always"], "");
    let plan = write_json(
        dir.path(),
        "p.json",
        &json!({"topic": "t", "tasks": [
            {"id": 1, "description": "a", "dependencies": [9]}
        ]}),
    );
    let r = planwave(["validate"])
        .arg(&plan)
        .opt("--config", &toml)
        .run();
    r.expect_code(2);
    assert!(
        r.stderr
            .contains("task 1: dependency 9 does not match any task"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("task 1: name a data source"),
        "{}",
        r.stderr
    );

    // A valid plan it faults is invalid; without the config it is valid.
    let good = write_json(
        dir.path(),
        "good.json",
        &json!({"topic": "t", "tasks": [{"id": 1, "description": "a"}]}),
    );
    let r = planwave(["validate"])
        .arg(&good)
        .opt("--config", &toml)
        .run();
    r.expect_code(2);
    assert!(
        r.stderr.contains("good.json: task 1: name a data source"),
        "{}",
        r.stderr
    );
    planwave(["validate"]).arg(&good).run().expect_ok();
}

#[test]
fn malformed_slow_or_failing_validators_are_clear_errors_and_no_shell_runs_them() {
    let dir = tempdir();
    let good = write_json(
        dir.path(),
        "good.json",
        &json!({"topic": "t", "tasks": [{"id": 1, "description": "a"}]}),
    );
    let validate = |toml: &Path| {
        planwave(["validate"])
            .arg(&good)
            .opt("--config", toml)
            .run()
    };

    let r = validate(&config(dir.path(), &["malformed"], ""));
    r.expect_code(1);
    assert!(
        r.stderr
            .contains("its answer is not a JSON list of problems (strings)"),
        "{}",
        r.stderr
    );

    let r = validate(&config(dir.path(), &["fail"], ""));
    r.expect_code(1);
    assert!(
        r.stderr.contains("it exited with status 3: boom"),
        "{}",
        r.stderr
    );

    let r = validate(&config(dir.path(), &["slow"], "timeout_secs = 0.5\n"));
    r.expect_code(1);
    assert!(
        r.stderr.contains("no answer within 0.5s; it was stopped"),
        "{}",
        r.stderr
    );

    // Shell syntax in an argument is only text.
    let marker = dir.path().join("pwned");
    let arg = format!("once; touch {}", marker.display());
    let r = validate(&config(dir.path(), &[&arg, "$(id)"], ""));
    r.expect_ok();
    assert_eq!(seen(dir.path())["argv"], json!([arg, "$(id)"]));
    assert!(!marker.exists());

    // An empty command is refused as a setting.
    let toml = dir.path().join("empty.toml");
    std::fs::write(&toml, "[validate]\ncommand = []\n").expect("toml");
    let r = validate(&toml);
    r.expect_code(2);
    assert!(
        r.stderr.contains("[validate] command is empty"),
        "{}",
        r.stderr
    );
}
