//! planwave against a real model on a real inference server: llama.cpp serving
//! SmolLM2-135M-Instruct (tests/support/llama.rs), through the real binary. The tests assert
//! what planwave does with the model's answers, never what the model says.

use crate::support::llama;

#[test]
fn the_fixture_serves_a_real_model() {
    let Some(server) = llama::shared() else {
        return;
    };
    // 8192 tokens of context over 4 slots: 2048 per slot, as /props reports.
    let (status, props) = server.get("/props");
    assert_eq!(status, 200, "{props}");
    let props: serde_json::Value = serde_json::from_str(&props).expect("/props JSON");
    assert_eq!(
        props["default_generation_settings"]["n_ctx"], 2048,
        "{props:#}"
    );
    let (status, metrics) = server.get("/metrics");
    assert_eq!(status, 200);
    assert!(metrics.contains("llamacpp:"), "{metrics}");
    assert!(server.base_url.ends_with("/v1"), "{}", server.log.display());
}
