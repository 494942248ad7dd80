//! `planwave serve` against a real headless Chromium: a page of another local
//! origin that posts to the server (a `no-cors` fetch, a script-submitted `text/plain`
//! form, both sendable without a preflight) creates no run; and a topic or task text
//! holding the page's placeholders (`{{DAG}}`, `{{GANTT}}`) and markup is shown as text.
//! Skipped (with a message) only when chromedriver is missing, as serve_browser.rs is.

use std::io::{Read, Write};

use fantoccini::Client;
use futures::FutureExt;
use serde_json::{Value, json};

use super::serve::{Serve, chain, get_json, post_json, wait_done, wait_until};
use super::serve_browser::{browser, chromedriver, js};
use crate::support::tempdir;

/// A second local origin: a thread answering `GET /<name>` with `pages[name]`.
fn other_origin(pages: Vec<(&'static str, String)>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut head = Vec::new();
            let mut buf = [0u8; 4096];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let head = String::from_utf8_lossy(&head);
            let path = head.split_whitespace().nth(1).unwrap_or("/");
            let body = pages
                .iter()
                .find(|(name, _)| path == format!("/{name}"))
                .map(|(_, page)| page.as_str())
                .unwrap_or("");
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{addr}")
}

/// The attacker's pages: each would create a run if the server took it.
fn attacker_pages(server: &str) -> Vec<(&'static str, String)> {
    let plan = chain(1).to_string();
    let body = json!({"plan": chain(1), "options": {"sim_latency_ms": 0}}).to_string();
    let fetch = format!(
        "<!DOCTYPE html><script>
        const body = {body:?};
        Promise.allSettled([
          fetch('{server}api/runs', {{method: 'POST', mode: 'no-cors', body}}),
          fetch('{server}api/runs', {{method: 'POST', mode: 'no-cors', body,
                 headers: {{'Content-Type': 'application/json'}}}}),
          fetch('{server}api/batches', {{method: 'POST', mode: 'no-cors',
                 body: JSON.stringify({{id: 'x', plan: JSON.parse(body).plan}}) + '\\n'}}),
        ]).then(() => {{ document.title = 'done'; }});
        </script>"
    );
    // text/plain sends `name=value`: the `=` lands inside a metadata value.
    let form = format!(
        "<!DOCTYPE html><form method=\"post\" enctype=\"text/plain\" action=\"{server}api/runs\">\
         <input type=\"hidden\" name='{{\"plan\": {plan}, \"options\": {{\"meta\": {{\"a\": \"' \
         value='\"}}}}'></form><script>document.forms[0].submit();</script>"
    );
    vec![("fetch", fetch), ("form", form)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_in_a_browser_refuses_other_origins_and_shows_placeholders_as_text() {
    let tmp = tempdir();
    let Some((_driver, driver_url)) = chromedriver(&tmp.path().join("chromedriver.log")) else {
        return;
    };
    let s = Serve::start(&[], &[]);
    let c = browser(&driver_url, &tmp.path().join("profile")).await;
    let result = std::panic::AssertUnwindSafe(async {
        cross_site_checks(&s, &c).await;
        placeholder_checks(&s, &c).await;
    })
    .catch_unwind()
    .await;
    c.close().await.expect("close the browser");
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

async fn cross_site_checks(s: &Serve, c: &Client) {
    let other = other_origin(attacker_pages(&s.url));
    c.goto(&format!("{other}/fetch")).await.expect("open fetch");
    wait_until("the page's requests to be answered", || async {
        (c.title().await.ok()? == "done").then_some(())
    })
    .await;
    c.goto(&format!("{other}/form")).await.expect("open form");
    // The form navigates to the server's answer.
    let answer = wait_until("the form's answer", || async {
        let url = c.current_url().await.ok()?;
        if !url.as_str().starts_with(&s.url) {
            return None;
        }
        js(
            c,
            "return document.body ? document.body.textContent : null;",
        )
        .await
        .as_str()
        .map(str::to_owned)
    })
    .await;
    assert!(answer.contains("\"error\""), "{answer}");
    let (_, list) = get_json(&s.at("api/runs")).await;
    assert_eq!(list["runs"], json!([]), "another origin created a run");
}

async fn placeholder_checks(s: &Serve, c: &Client) {
    let topic = "{{DAG}} {{GANTT}} {{TITLE}}</title></h1><b id=\"pw-injected\">x</b>";
    let plan = json!({"topic": topic, "tasks": [
        {"id": 1, "description": "{{GANTT}} <i id=\"pw-task\">first</i>", "dependencies": []},
        {"id": 2, "description": "{{DAG}} second", "dependencies": [1]}]});
    let (code, created) = post_json(
        &s.at("api/runs"),
        &json!({"plan": plan, "options": {"sim_latency_ms": 0}}),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    wait_done(s, &id).await;
    c.goto(&s.at(&format!("runs/{id}")))
        .await
        .expect("open run");
    let v: Value = js(
        c,
        "return [document.querySelector('h1').textContent, document.title,
                 document.querySelectorAll('#pw-injected, #pw-task').length,
                 document.querySelectorAll('svg svg, h1 svg, title svg').length,
                 document.querySelectorAll('#dag > svg').length,
                 document.querySelectorAll('#gantt > svg').length];",
    )
    .await;
    assert_eq!(v[0], topic, "{v}");
    assert_eq!(v[1], format!("{topic} · planwave"), "{v}");
    assert_eq!(v[2], 0, "markup from the plan became elements: {v}");
    assert_eq!(
        v[3], 0,
        "a picture was put inside another or the title: {v}"
    );
    assert_eq!((v[4].clone(), v[5].clone()), (json!(1), json!(1)), "{v}");
}
