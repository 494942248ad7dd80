//! `plan` and `validate` see the tools `run` would: `plan` lists the tools of `--mcp-config`
//! and of `planwave.toml`, and `validate` checks tool names when servers are given (and says
//! when they were not checked).

use serde_json::{Value, json};

use crate::cases::steps::crashy_config;
use crate::support::{planwave, tempdir, write_json};

#[test]
fn plan_lists_the_tools_of_mcp_config_and_of_planwave_toml() {
    let dir = tempdir();
    let Some(cfg) = crate::cases::mcp::everything_config(dir.path(), "everything") else {
        return;
    };
    let goal = "Add two figures with get-sum, then echo the total";
    let tools_of = |out: &crate::support::Output| -> Vec<String> {
        let plan: Value = serde_json::from_str(&out.stdout).expect("plan JSON");
        plan["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .map(|t| t["tool"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    let r = planwave(["plan", goal])
        .instant()
        .quiet()
        .arg("--json")
        .opt("--plan-format", "steps")
        .opt("--mcp-config", &cfg)
        .run();
    r.expect_ok();
    assert_eq!(tools_of(&r), ["get-sum", "echo", "llm_call"]);

    let js = crate::cases::mcp::everything().expect("peer");
    let toml = dir.path().join("planwave.toml");
    std::fs::write(
        &toml,
        format!(
            "[mcp.servers.everything]\ncommand = \"node\"\nargs = [{:?}, \"stdio\"]\n",
            js.display().to_string()
        ),
    )
    .expect("toml");
    let r = planwave(["plan", goal])
        .instant()
        .quiet()
        .arg("--json")
        .opt("--plan-format", "steps")
        .opt("--config", &toml)
        .run();
    r.expect_ok();
    assert_eq!(tools_of(&r), ["get-sum", "echo", "llm_call"]);
}

#[test]
fn validate_takes_meta_and_says_when_tool_names_were_not_checked() {
    let dir = tempdir();
    let plan = write_json(
        dir.path(),
        "steps.json",
        &json!({"steps": [{"step_id": "a", "description": "Greet", "tool": "hello",
                           "params": {"name": "{{meta.team}}"}}]}),
    );
    let v = planwave(["validate"])
        .arg(&plan)
        .opt("--meta", "team=research")
        .run();
    v.expect_ok();
    assert!(v.stdout.starts_with("valid: 1 tasks"), "{}", v.stdout);
    assert!(
        v.stdout.contains(
            "tool names not checked: no tools are configured (give --mcp-config FILE to check them)"
        ),
        "{}",
        v.stdout
    );
    // Without --meta the reference is still refused, as run refuses it.
    planwave(["validate"]).arg(&plan).run().expect_code(2);

    // With the servers given, the names are checked and the note is gone.
    let Some(cfg) = crashy_config(dir.path()) else {
        return;
    };
    let v = planwave(["validate"])
        .arg(&plan)
        .opt("--meta", "team=research")
        .opt("--mcp-config", &cfg)
        .run();
    v.expect_ok();
    assert!(!v.stdout.contains("not checked"), "{}", v.stdout);
}
