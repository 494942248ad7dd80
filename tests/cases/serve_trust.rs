//! `planwave serve` as a trust boundary, against the real binary on 127.0.0.1:0: foreign
//! `Host` and `Origin` headers and non-JSON bodies are refused, the token of the address bar
//! becomes a strict cookie and leaves the address by a redirect, and every API error
//! (413, bad queries, wrong methods) is JSON.

use serde_json::{Value, json};

use super::serve::{Serve, authority, chain, client, create, json_error, runs, wait_done};

fn port(s: &Serve) -> String {
    authority(s).rsplit(':').next().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_refuses_foreign_hosts_foreign_origins_and_bodies_that_are_not_json() {
    let s = Serve::start(&["--allowed-host", "planwave.test"], &[]);
    let c = client();
    // DNS rebinding: a name that resolves here, but is not this server's.
    let r = c
        .get(s.at("api/runs"))
        .header("Host", format!("attacker.example:{}", port(&s)))
        .send()
        .await
        .unwrap();
    let (code, error) = json_error(r).await;
    assert_eq!(code, 403);
    assert!(error.contains("attacker.example"), "{error}");
    for host in [
        format!("planwave.test:{}", port(&s)),
        "planwave.test".to_owned(),
        format!("localhost:{}", port(&s)),
        authority(&s),
    ] {
        let r = c
            .get(s.at("api/runs"))
            .header("Host", &host)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), 200, "Host: {host}");
    }
    let body = json!({"plan": chain(1), "options": {"sim_latency_ms": 0}}).to_string();
    // What a page can send without a preflight: no JSON content type.
    for kind in [
        Some("text/plain;charset=UTF-8"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        None,
    ] {
        let mut req = c.post(s.at("api/runs")).body(body.clone());
        if let Some(k) = kind {
            req = req.header("Content-Type", k);
        }
        let (code, error) = json_error(req.send().await.unwrap()).await;
        assert_eq!(code, 415, "{kind:?}");
        assert!(error.contains("application/json"), "{error}");
    }
    let r = c
        .post(s.at("api/batches"))
        .header("Content-Type", "text/plain")
        .body(format!("{}\n", json!({"id": "a", "plan": chain(1)})))
        .send()
        .await
        .unwrap();
    assert_eq!(json_error(r).await.0, 415);
    // A JSON request from another origin (or an opaque one) changes nothing.
    for origin in [
        "http://attacker.example".to_owned(),
        "null".to_owned(),
        format!("http://127.0.0.1:{}", port(&s).parse::<u32>().unwrap() + 1),
    ] {
        let r = c
            .post(s.at("api/runs"))
            .header("Content-Type", "application/json")
            .header("Origin", &origin)
            .body(body.clone())
            .send()
            .await
            .unwrap();
        let (code, error) = json_error(r).await;
        assert_eq!(code, 403, "Origin: {origin}");
        assert!(error.contains("Origin"), "{error}");
    }
    assert_eq!(runs(&s).await, Vec::<Value>::new(), "nothing was created");
    // The server's own page may.
    let r = c
        .post(s.at("api/runs"))
        .header("Content-Type", "application/json; charset=utf-8")
        .header("Origin", s.url.trim_end_matches('/'))
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let id = r.json::<Value>().await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    wait_done(&s, &id).await;
    // Cancel and resume are state-changing too.
    let r = c
        .post(s.at(&format!("api/runs/{id}/resume")))
        .header("Origin", "http://attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(json_error(r).await.0, 403);
    assert_eq!(runs(&s).await.len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_token_from_the_address_is_decoded_set_as_a_strict_cookie_and_redirected_away() {
    let token = "t0k en/+&=;%";
    let s = Serve::start(&[], &[("PLANWAVE_SERVE_TOKEN", token)]);
    let c = planwave_tls::http_client()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let encoded = "t0k%20en%2F%2B%26%3D%3B%25";
    let r = c
        .get(s.at(&format!("runs/x?a=1&token={encoded}&b=2")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 303);
    assert_eq!(r.headers()["location"], "/runs/x?a=1&b=2");
    let cookie = r.headers()["set-cookie"].to_str().unwrap().to_owned();
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(cookie.split("; ").any(|a| a == attr), "{attr}: {cookie}");
    }
    assert!(!cookie.contains(token), "{cookie}");
    let pair = cookie.split(';').next().unwrap().to_owned();
    let r = c
        .get(s.at("api/runs"))
        .header("Cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // The page it lands on needs no token in the address.
    let r = c
        .get(s.at(""))
        .header("Cookie", &pair)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200);
    // The raw (undecoded) text is not the token; nor is a wrong one.
    for q in [
        format!("token={}", token.replace(' ', "+")),
        "token=t0k".into(),
    ] {
        let r = c.get(s.at(&format!("?{q}"))).send().await.unwrap();
        assert_eq!(json_error(r).await.0, 401, "{q}");
    }
    let r = c.get(s.at("?token=t0k+en%2F%2B%26%3D%3B%25")).send().await;
    assert_eq!(r.unwrap().status().as_u16(), 303, "`+` is a space");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_413_bad_queries_and_wrong_methods_as_json() {
    let s = Serve::start(&["--max-body", "1KiB"], &[]);
    let c = client();
    let r = c
        .post(s.at("api/runs"))
        .json(&json!({"goal": "x".repeat(4096)}))
        .send()
        .await
        .unwrap();
    let (code, error) = json_error(r).await;
    assert_eq!(code, 413);
    assert!(error.contains("1024"), "{error}");
    let id = create(
        &s,
        &json!({"plan": chain(1), "options": {"sim_latency_ms": 0}}),
    )
    .await;
    wait_done(&s, &id).await;
    for path in [
        format!("api/runs/{id}?tasks=maybe"),
        format!("api/runs/{id}/events?after=-1"),
    ] {
        let (code, error) = json_error(c.get(s.at(&path)).send().await.unwrap()).await;
        assert_eq!(code, 400, "{path}: {error}");
    }
    let r = c
        .post(s.at("api/batches?options=%7Bnot"))
        .header("Content-Type", "application/x-ndjson")
        .body("{}\n")
        .send()
        .await
        .unwrap();
    assert_eq!(json_error(r).await.0, 400);
    let r = c.delete(s.at("api/runs")).send().await.unwrap();
    assert_eq!(json_error(r).await.0, 405);
}
