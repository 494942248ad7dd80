//! Costs against a real server that answers under another model name: llama.cpp answers
//! with its GGUF file's path, yet the calls are priced by the model planwave was told to use
//! (or an alias of it), and a model with no price reads `unpriced`, never `0.0000 USD`.

use serde_json::Value;

use crate::support::llama;
use crate::support::{plan, planwave, read_json, tempdir, write_json};

/// `run` of a one-task plan against the shared llama.cpp with `config`; its run.json and
/// what `show` printed.
fn run_priced(dir: &std::path::Path, name: &str, config: &str) -> Option<(Value, String)> {
    let server = llama::shared()?;
    let config_path = dir.join(format!("{name}.toml"));
    std::fs::write(&config_path, config).expect("config");
    let plan = write_json(
        dir,
        "p.json",
        &plan("Acme", &[("1", "Acme's products", &[])]),
    );
    let out = dir.join(name);
    let res = planwave(["run"])
        .arg(&plan)
        .out(&out)
        .opt("--llm-base-url", &server.base_url)
        .opt("--model", "smollm2")
        .opt("--config", &config_path)
        .opt("--max-output", "subagent=24,integrator=24")
        .quiet()
        .run();
    let run = read_json(&out.join("run.json"));
    assert!(
        res.stdout.contains("estimated cost: "),
        "{}\n{}",
        res.stdout,
        res.stderr
    );
    let shown = planwave(["show"]).arg(&out).run();
    Some((run, shown.stdout))
}

#[test]
fn calls_to_llama_cpp_are_priced_by_the_configured_model_or_said_unpriced() {
    let dir = tempdir();
    // Priced under an alias of the configured name.
    let Some((run, shown)) = run_priced(
        dir.path(),
        "priced",
        "[prices]\naliases = { smollm2 = \"smollm2-135m\" }\n[prices.models.\"smollm2-135m\"]\ninput_per_mtok = 1.0\noutput_per_mtok = 2.0\n",
    ) else {
        return;
    };
    for c in run["calls"].as_array().expect("calls") {
        assert_eq!(c["model"], "smollm2", "the model asked for: {c}");
    }
    let cost = &run["stats"]["cost"];
    assert!(cost["total"].as_f64() > Some(0.0), "{cost}");
    assert!(cost["by_model"]["smollm2"].as_f64() > Some(0.0), "{cost}");
    assert!(cost.get("unpriced_models").is_none(), "{cost}");
    assert!(!shown.contains("0.0000 USD"), "{shown}");

    // No price for it: unpriced, not free.
    let Some((run, shown)) = run_priced(
        dir.path(),
        "unpriced",
        "[prices.models.\"gpt-4o\"]\ninput_per_mtok = 2.5\noutput_per_mtok = 10.0\n",
    ) else {
        return;
    };
    assert_eq!(
        run["stats"]["cost"]["unpriced_models"][0], "smollm2",
        "{run}"
    );
    assert!(
        shown.contains("estimated cost: unpriced (no price for smollm2)"),
        "{shown}"
    );
    assert!(!shown.contains("0.0000"), "{shown}");
}
