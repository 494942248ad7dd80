//! A client of `planwave serve` may not set how often the server's key calls the provider:
//! the Batch API's linger and poll intervals under a second, and a retry backoff under 100 ms,
//! are refused (422, each option named) by `POST /api/runs` and `POST /api/batches`, and no
//! run is created.

use serde_json::{Value, json};

use super::serve::{Serve, chain, client, post_json, runs};

fn problems(body: &Value) -> Vec<String> {
    body["problems"]
        .as_array()
        .unwrap_or_else(|| panic!("problems: {body}"))
        .iter()
        .map(|p| p.as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_refuses_batch_poll_and_retry_intervals_a_client_sets_too_short() {
    let s = Serve::start(
        &[],
        &[
            ("PLANWAVE_LLM_BASE_URL", "http://127.0.0.1:9/v1"),
            ("PLANWAVE_LLM_MODEL", "m"),
        ],
    );
    let options = json!({"batch_api": true, "batch_poll": "1ms", "batch_poll_max": "1ms",
                         "batch_linger": "10ms", "retry_backoff_ms": 0});
    let (code, body) = post_json(
        &s.at("api/runs"),
        &json!({"plan": chain(1), "options": options}),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    let got = problems(&body);
    for name in [
        "batch_linger",
        "batch_poll",
        "batch_poll_max",
        "retry_backoff_ms",
    ] {
        assert!(
            got.iter()
                .any(|p| p.starts_with(&format!("options.{name}: at least "))),
            "{name} named: {got:?}"
        );
    }
    assert!(
        got.iter()
            .any(|p| p.starts_with("options.batch_poll: at least 1s in a request")),
        "{got:?}"
    );
    // A batch's options are the same options.
    let query = format!(
        "api/batches?options={}",
        json!({"batch_api": true, "batch_poll": "1ms"})
            .to_string()
            .replace('"', "%22")
            .replace('{', "%7B")
            .replace('}', "%7D")
            .replace(':', "%3A")
            .replace(',', "%2C")
    );
    let r = client()
        .post(s.at(&query))
        .header("Content-Type", "application/x-ndjson")
        .body(format!("{}\n", json!({"id": "a", "plan": chain(1)})))
        .send()
        .await
        .expect("POST /api/batches");
    let code = r.status().as_u16();
    let text = r.text().await.expect("body");
    assert!((400..500).contains(&code), "{code}: {text}");
    assert!(text.contains("options.batch_poll: at least 1s"), "{text}");
    assert_eq!(runs(&s).await, Vec::<Value>::new(), "no run was created");
    // A second is allowed.
    let (code, body) = post_json(
        &s.at("api/runs"),
        &json!({"plan": chain(1), "options": {"batch_api": true, "batch_poll": "1s",
                "batch_poll_max": "1s", "batch_linger": "1s", "retry_backoff_ms": 100}}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
}
