//! Credentials in a model URL never leave the request: the whole user part of the URL (a
//! user name alone can be the key: `http://sk-…@host/v1`) and every query value whose name is
//! not known to be harmless are shown as `***`, by `run` (terminal, report, journal, run
//! files) and by `loadtest` (its terminal lines, JSON and HTML).

use crate::support::{SimLlm, all_files, read_json, tempdir, write_json};

/// Where in `out`, stdout or stderr any of `secrets` appears.
fn leaks(out: &std::path::Path, stdout: &str, stderr: &str, secrets: &[&str]) -> Vec<String> {
    let mut places: Vec<String> = all_files(out)
        .into_iter()
        .filter(|(_, text)| secrets.iter().any(|s| text.contains(s)))
        .map(|(p, _)| p.display().to_string())
        .collect();
    for (name, text) in [("stdout", stdout), ("stderr", stderr)] {
        if secrets.iter().any(|s| text.contains(s)) {
            places.push(name.into());
        }
    }
    places
}

/// Every `base_url` value in `v`.
fn base_urls(v: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![v];
    while let Some(v) = stack.pop() {
        match v {
            serde_json::Value::Object(m) => {
                out.extend(
                    m.get("base_url")
                        .and_then(|u| u.as_str())
                        .map(str::to_owned),
                );
                stack.extend(m.values());
            }
            serde_json::Value::Array(a) => stack.extend(a),
            _ => {}
        }
    }
    out
}

#[test]
fn a_user_name_and_unknown_query_values_reach_no_run_file_and_no_terminal() {
    let server = SimLlm::start(&[], &[]);
    let dir = tempdir();
    let secrets = ["sk-USERNAME-SECRET", "CODE-SECRET", "AMZ-SIG-SECRET"];
    let url = format!(
        "{}?code=CODE-SECRET&X-Amz-Signature=AMZ-SIG-SECRET&api-version=2024-10-21",
        server
            .base_url
            .replace("http://", "http://sk-USERNAME-SECRET@")
    );
    let p = write_json(
        dir.path(),
        "plan.json",
        &crate::support::plan("t", &[("1", "a", &[]), ("2", "b", &["1"])]),
    );
    let out = dir.path().join("out");
    let r = crate::support::run_plan(&p, &out)
        .arg("-v")
        .opt("--llm-base-url", &url)
        .opt("--model", "planwave-sim-1")
        .run();
    r.expect_ok();
    assert!(
        server.stats()["requests"].as_u64() >= Some(3),
        "the model was reached"
    );
    assert_eq!(
        leaks(&out, &r.stdout, &r.stderr, &secrets),
        Vec::<String>::new()
    );
    let shown = base_urls(&read_json(&out.join("run.json")));
    let shown = shown.first().cloned().unwrap_or_default();
    assert!(
        shown.contains("://***@127.0.0.1:")
            && shown.contains("code=***")
            && shown.contains("X-Amz-Signature=***")
            && shown.contains("api-version=2024-10-21"),
        "run.json shows the URL redacted, a harmless parameter kept: {shown}"
    );
}

#[test]
fn loadtest_never_shows_the_credentials_of_its_llm_url() {
    let server = SimLlm::start(&[], &[]);
    let dir = tempdir();
    let secrets = ["PASS-SECRET", "KEY-SECRET", "CODE-SECRET"];
    let url = format!(
        "{}?api_key=KEY-SECRET&code=CODE-SECRET",
        server
            .base_url
            .replace("http://", "http://user:PASS-SECRET@")
    );
    let html = dir.path().join("report.html");
    let r = crate::support::planwave(["loadtest", "--shape", "wide", "--json"])
        .opt("--tasks", "4")
        .opt("--llm-url", &url)
        .opt("--html", &html)
        .run();
    r.expect_ok();
    assert!(
        server.stats()["requests"].as_u64() >= Some(4),
        "the server was reached"
    );
    assert_eq!(
        leaks(dir.path(), &r.stdout, &r.stderr, &secrets),
        Vec::<String>::new()
    );
    let v: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    let model = v["workload"]["model"]
        .as_str()
        .unwrap_or_else(|| panic!("a model: {v}"));
    assert!(
        model.contains("://***@127.0.0.1:") && model.contains("api_key=***&code=***"),
        "{model}"
    );
}
