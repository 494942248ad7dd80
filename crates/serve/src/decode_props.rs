//! Property tests of every decoder a request's bytes reach (issue 33, "Also"): arbitrary
//! bytes and arbitrary JSON as the body of `POST /api/runs` and `POST /api/batches`, as the
//! batch's `?options=`, as a request's options, and as the token, cookie and `Host` texts.
//! None panics; every refusal is an error with a message.

use axum::http::{HeaderMap, HeaderValue, Uri, header};
use planwave_config::spec::RequestOptions;
use proptest::prelude::*;
use serde_json::{Map, Value};

use crate::api::{CreateRun, parse_json};
use crate::error::ApiError;

fn message(e: &ApiError) -> String {
    match e {
        ApiError::BadRequest(m)
        | ApiError::NotFound(m)
        | ApiError::Conflict(m)
        | ApiError::Internal(m) => m.clone(),
        ApiError::Unprocessable(m, p) => format!("{m}: {}", p.join("; ")),
    }
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
        // Names the decoders look for, so they are reached, not only refused at the top.
        prop_oneof![
            Just("plan"),
            Just("goal"),
            Just("options"),
            Just("tasks"),
            Just("id"),
            Just("sim_latency_ms"),
            Just("meta"),
            Just("concurrency"),
            Just("deadline")
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("plan".to_owned()),
                    Just("goal".to_owned()),
                    Just("options".to_owned()),
                    Just("tasks".to_owned()),
                    Just("sim_fail".to_owned()),
                    Just("meta".to_owned()),
                    Just("retries".to_owned()),
                    Just("task_timeout".to_owned()),
                    ".{0,8}"
                ],
                inner,
                0..6
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// What `POST /api/runs` decodes before it builds a job.
fn decode_run(body: &[u8]) -> Result<(), String> {
    let req: CreateRun = parse_json(body).map_err(|e| message(&e))?;
    RequestOptions::from_map(&req.options).map_err(|p| p.join("; "))?;
    Ok(())
}

/// What `POST /api/batches` decodes before it builds jobs.
fn decode_batch(options: &str, body: &[u8]) -> Result<usize, String> {
    let map: Map<String, Value> = parse_json(options.as_bytes()).map_err(|e| message(&e))?;
    RequestOptions::from_map(&map).map_err(|p| p.join("; "))?;
    let file = planwave_batch::parse_jobs(body);
    for bad in &file.bad {
        assert!(
            !bad.to_string().trim().is_empty(),
            "a refused line says why"
        );
    }
    Ok(file.jobs.len())
}

fn refusal_is_clear(r: Result<impl Sized, String>) {
    if let Err(e) = r {
        assert!(!e.trim().is_empty(), "a refusal without a message");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_a_decoder(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        refusal_is_clear(decode_run(&bytes));
        refusal_is_clear(decode_batch(&String::from_utf8_lossy(&bytes), &bytes));
        if let Ok(text) = std::str::from_utf8(&bytes) {
            if let Ok(uri) = format!("/?{}", text.replace(['#', ' '], "")).parse::<Uri>() {
                let _ = crate::auth::query_token(&uri);
            }
            let _ = crate::guard::host_name(text);
            let g = crate::guard::Guard::new("127.0.0.1:8080".parse().unwrap(), &[text.into()]);
            let _ = g.host_allowed(text);
            if let Ok(v) = HeaderValue::from_str(text) {
                let mut h = HeaderMap::new();
                h.insert(header::CONTENT_TYPE, v);
                let _ = crate::guard::media_type(&h);
            }
        }
    }

    #[test]
    fn arbitrary_json_never_panics_a_decoder(v in json(), options in json()) {
        refusal_is_clear(decode_run(v.to_string().as_bytes()));
        let body = serde_json::json!({"plan": v.clone(), "options": options.clone()});
        refusal_is_clear(decode_run(body.to_string().as_bytes()));
        let body = serde_json::json!({"goal": "g", "options": options.clone()});
        refusal_is_clear(decode_run(body.to_string().as_bytes()));
        let lines = format!("{v}\n{}\n", serde_json::json!({"id": "a", "plan": v.clone()}));
        refusal_is_clear(decode_batch(&options.to_string(), lines.as_bytes()));
        if let Value::Object(m) = &options {
            refusal_is_clear(RequestOptions::from_map(m).map(|_| ()).map_err(|p| p.join("; ")));
        }
    }
}
