//! `planwave serve` and a goal too vague to plan: the run ends `needs_input` with the
//! planner's questions (in the API and on the run's page), `POST /api/runs/{id}/answers`
//! takes the answers (checked and bounded like `--answers`) and the run goes on with them;
//! in Chromium, the page's form does the same.

use fantoccini::Locator;
use futures::FutureExt;
use serde_json::{Value, json};

use super::serve::{Serve, create, get_json, post_json, wait_done, wait_until};
use super::serve_browser::{browser, chromedriver, js};
use crate::support::{read_json, tempdir};

const FIRST: &str = "您想分析哪家公司、哪个行业或哪个主题？";

fn vague() -> Value {
    json!({"goal": "分析一下", "options": {"max_rounds": 1, "sim_latency_ms": 0}})
}

fn topic(s: &Serve, id: &str) -> String {
    read_json(&s.data.join(id).join("plan.json"))["topic"]
        .as_str()
        .expect("topic")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_needs_input_run_takes_checked_answers_and_goes_on_with_them() {
    let s = Serve::start(&[], &[]);
    let id = create(&s, &vague()).await;
    let run = wait_done(&s, &id).await;
    assert_eq!(run["status"], "needs_input", "{run}");
    assert_eq!(run["questions"][0], FIRST, "{run}");
    let url = s.at(&format!("api/runs/{id}/answers"));

    // Refused, each saying why; the run keeps waiting.
    let refused = [
        (
            json!({"answers": ["a", "b", "c"]}),
            "answers: 3 answers to 2 question(s)",
        ),
        (json!({"answers": [" "]}), "answers[0]: the answer is empty"),
        (
            json!({"answers": [{"answer": "x", "why": 1}]}),
            "unknown field `why`",
        ),
        (json!({"answer": ["x"]}), "unknown field `answer`"),
    ];
    for (body, why) in refused {
        let (code, v) = post_json(&url, &body).await;
        assert!(code == 422 || code == 400, "{body}: {code} {v}");
        assert!(v.to_string().contains(why), "{body}: {v}");
    }
    assert_eq!(
        get_json(&s.at(&format!("api/runs/{id}"))).await.1["status"],
        "needs_input"
    );

    let (code, v) = post_json(&url, &json!({"answers": ["特斯拉公司"]})).await;
    assert_eq!(code, 202, "{v}");
    let run = wait_done(&s, &id).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(topic(&s, &id), "特斯拉公司深度分析");
    // Recorded with the question it answers, so a resume plans with it too.
    let inv = read_json(&s.data.join(&id).join("invocation.json"));
    assert_eq!(
        inv["spec"]["work"]["goal"]["research"]["answers"],
        json!([{"question": FIRST, "answer": "特斯拉公司"}])
    );
    // A run that waits for nothing takes no answers.
    let (code, v) = post_json(&url, &json!({"answers": ["x"]})).await;
    assert_eq!(code, 409, "{v}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_page_shows_the_questions_and_its_form_answers_them() {
    let tmp = tempdir();
    let Some((_driver, driver_url)) = chromedriver(&tmp.path().join("chromedriver.log")) else {
        return;
    };
    let s = Serve::start(&[], &[]);
    let id = create(&s, &vague()).await;
    assert_eq!(wait_done(&s, &id).await["status"], "needs_input");
    let c = browser(&driver_url, &tmp.path().join("profile")).await;
    let result = std::panic::AssertUnwindSafe(async {
        c.goto(&s.at(&format!("runs/{id}"))).await.expect("open the page");
        let shown = js(
            &c,
            "return [...document.querySelectorAll('#questions label')].map(l => l.textContent.trim());",
        )
        .await;
        assert_eq!(shown[0], FIRST, "{shown}");
        assert_eq!(shown.as_array().map(Vec::len), Some(2), "{shown}");
        // Nothing typed: the page says so and sends nothing.
        c.find(Locator::Id("answers-send")).await.expect("button").click().await.expect("click");
        let said = js(&c, "return document.getElementById('answers-error').textContent;").await;
        assert_eq!(said, "Answer at least one question.");
        let input = c
            .find(Locator::Css("#questions input[name=answer]"))
            .await
            .expect("the first answer's input");
        input.send_keys("小米集团").await.expect("type");
        c.find(Locator::Id("answers-send")).await.expect("button").click().await.expect("click");
        let url = s.at(&format!("api/runs/{id}"));
        wait_until("the answered run to complete", || async {
            let (_, v) = get_json(&url).await;
            (v["status"] == "completed" && v["live"] == false).then_some(())
        })
        .await;
        assert_eq!(topic(&s, &id), "小米集团深度分析");
        // The run's page no longer asks.
        c.goto(&s.at(&format!("runs/{id}"))).await.expect("open again");
        let asks = js(&c, "return document.getElementById('questions') !== null;").await;
        assert_eq!(asks, false);
    })
    .catch_unwind()
    .await;
    c.close().await.expect("close the browser");
    if let Err(panic) = result {
        std::panic::resume_unwind(panic);
    }
}
