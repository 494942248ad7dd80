//! `planwave serve` runs through the provider's Batch API when a run asks for it
//! (`"options": {"batch_api": true}`), against `sim-llm serve` with a completion delay: the
//! run's API record (and its live page, in headless Chromium when chromedriver is there)
//! shows the provider batch it waits on, with its id and state, and the run ends with the
//! same sections as without.

use std::collections::BTreeMap;
use std::path::Path;

use fantoccini::Client;
use futures::FutureExt;
use serde_json::{Value, json};

use super::serve::{Serve, chain, get_json, post_json, wait_done, wait_until};
use super::serve_browser::{browser, chromedriver, js};
use crate::support::{SimLlm, tempdir};

fn sections(dir: &Path) -> BTreeMap<String, String> {
    std::fs::read_dir(dir.join("sections"))
        .expect("sections/")
        .flatten()
        .map(|e| {
            let text = std::fs::read_to_string(e.path()).expect("section");
            (e.file_name().to_string_lossy().into_owned(), text)
        })
        .collect()
}

async fn start_run(s: &Serve, options: Value) -> String {
    let (code, created) = post_json(
        &s.at("api/runs"),
        &json!({"plan": chain(3), "options": options}),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    created["id"].as_str().expect("id").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_started_by_serve_waits_on_a_provider_batch_and_shows_it() {
    let tmp = tempdir();
    let model = SimLlm::start(&["--batch-delay-ms", "1500"], &[]);
    let s = Serve::start(
        &[],
        &[
            ("PLANWAVE_LLM_BASE_URL", model.base_url.as_str()),
            ("PLANWAVE_LLM_MODEL", "planwave-sim-1"),
        ],
    );
    // The page is checked too when chromedriver is there; the browser starts first, so the
    // run is still waiting when its page opens.
    let driver = chromedriver(&tmp.path().join("chromedriver.log"));
    let page = match &driver {
        Some((_, url)) => Some(browser(url, &tmp.path().join("profile")).await),
        None => None,
    };
    // The browser is closed even when a check fails; then the failure is re-raised.
    let result = std::panic::AssertUnwindSafe(checks(&s, page.as_ref()))
        .catch_unwind()
        .await;
    if let Some(c) = page {
        c.close().await.expect("close the browser");
    }
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}

async fn checks(s: &Serve, page: Option<&Client>) {
    let normal = start_run(s, json!({})).await;
    assert_eq!(wait_done(s, &normal).await["status"], "completed");

    let batched = start_run(
        s,
        json!({"batch_api": true, "batch_linger": "1s", "batch_poll": "1s",
               "batch_poll_max": "1s"}),
    )
    .await;
    let url = s.at(&format!("api/runs/{batched}"));
    let waiting = wait_until("the run's provider batch", || async {
        let (_, v) = get_json(&url).await;
        let pb = v["provider_batch"].clone();
        let state = pb["state"].as_str().unwrap_or("");
        matches!(state, "validating" | "in_progress" | "finalizing").then_some(pb)
    })
    .await;
    let id = waiting["id"].as_str().expect("batch id").to_owned();
    assert!(id.starts_with("batch_sim_"), "{waiting}");
    assert_eq!(waiting["calls"], 1, "one task ready at a time: {waiting}");
    if let Some(c) = page {
        page_shows_the_batch(s, c, &batched).await;
    }

    let done = wait_done(s, &batched).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(
        sections(&s.data.join(&normal)),
        sections(&s.data.join(&batched)),
        "the same answers through the Batch API"
    );
    let ledger = std::fs::read_to_string(s.data.join(&batched).join("provider-batches.jsonl"))
        .expect("the run's record of its batches");
    assert!(ledger.contains(&id), "{ledger}");
    // A run asking for the batch timing without the Batch API is refused, naming it.
    let (code, refused) = post_json(
        &s.at("api/runs"),
        &json!({"plan": chain(1), "options": {"batch_poll": "1s"}}),
    )
    .await;
    assert_eq!(code, 422, "{refused}");
    assert!(
        refused
            .to_string()
            .contains("options.batch_poll: only with batch_api"),
        "{refused}"
    );
}

/// The run page says which provider batch the run waits on, and how many of its calls.
async fn page_shows_the_batch(s: &Serve, c: &Client, id: &str) {
    c.goto(&s.at(&format!("runs/{id}")))
        .await
        .expect("open the run page");
    let text = wait_until("the provider batch the page says the run waits on", || async {
        let v = js(
            c,
            "const b = document.getElementById('t-batch-box'); return b && !b.hidden ? document.getElementById('t-batch').textContent : null;",
        )
        .await;
        v.as_str()
            .filter(|t| t.starts_with("waiting on "))
            .map(str::to_owned)
    })
    .await;
    assert!(text.starts_with("waiting on batch_sim_"), "{text}");
    assert!(text.contains("1 call of this run"), "{text}");
}
