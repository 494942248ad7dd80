//! The real HTTP client against the simulator served over real HTTP on 127.0.0.1: the fault
//! matrix. Waits are recorded by a `RecordingSleeper` (the client's pluggable clock), so the
//! tests assert the exact delays the client chose without waiting for them.

use std::sync::Arc;
use std::time::Duration;

use planwave_llm::openai::{OpenAiConfig, OpenAiProvider, RecordingSleeper, RetryConfig};
use planwave_llm::{
    AgentRole, ApiKey, ChatMessage, ChatRequest, LlmError, LlmProvider, RequestContext,
};
use planwave_plan::Lang;
use planwave_sim_server::{Fault, FaultConfig, SimServer, SimServerConfig};

const FAKE_KEY: &str = "pw-test-FAKEKEY-0123456789abcdef";

async fn server(script: Vec<Fault>, api_key: Option<&str>) -> SimServer {
    SimServer::start(
        "127.0.0.1:0".parse().expect("addr"),
        SimServerConfig {
            faults: FaultConfig {
                script,
                retry_after: Duration::from_secs(1),
                first_byte_delay: Duration::from_secs(5),
                ..FaultConfig::default()
            },
            api_key: api_key.and_then(ApiKey::new),
            ..SimServerConfig::default()
        },
    )
    .await
    .expect("start sim server")
}

fn client(base: &str, stream: bool) -> (OpenAiProvider, Arc<RecordingSleeper>) {
    let sleeper = Arc::new(RecordingSleeper::default());
    let mut cfg = OpenAiConfig::new(base, "sim-model");
    cfg.stream = stream;
    cfg.api_key = ApiKey::new(FAKE_KEY);
    cfg.sleeper = sleeper.clone();
    cfg.timeouts.idle = Duration::from_millis(400);
    cfg.retry = RetryConfig {
        max_retries: 3,
        base: Duration::from_millis(100),
        max: Duration::from_secs(2),
        ..RetryConfig::default()
    };
    (OpenAiProvider::new(cfg).expect("client"), sleeper)
}

fn section_request() -> ChatRequest {
    ChatRequest {
        role: AgentRole::Subagent,
        messages: vec![ChatMessage::user("Write the section on competition.")],
        attempt: 1,
        context: RequestContext {
            lang: Lang::En,
            topic: "Tesla".into(),
            task_id: Some("3".into()),
            task_title: "Competitive landscape".into(),
            key_questions: vec!["Who competes?".into()],
            ..RequestContext::default()
        },
        traceparent: Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into()),
        tools: Vec::new(),
        on_delta: None,
        max_tokens: None,
    }
}

#[tokio::test]
async fn streaming_and_plain_answers_carry_the_section_and_usage() {
    let srv = server(vec![], Some(FAKE_KEY)).await;
    for stream in [true, false] {
        let (c, sleeper) = client(&srv.base_url(), stream);
        let r = c.chat(section_request()).await.expect("answer");
        assert!(
            r.content.starts_with("## Competitive landscape"),
            "{}",
            r.content
        );
        assert!(r.content.contains("Who competes?"));
        assert!(
            r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0,
            "{:?}",
            r.usage
        );
        assert_eq!(r.model, "sim-model");
        assert!(sleeper.recorded().is_empty());
    }
    let s = srv.stats();
    assert_eq!(s.requests, 2);
    assert_eq!(
        s.roles.get("subagent"),
        Some(&2),
        "context headers sent: {s:?}"
    );
    assert_eq!((s.authorized, s.traced), (2, 2));
    srv.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn rate_limit_waits_exactly_retry_after_then_succeeds() {
    let srv = server(vec![Fault::RateLimit, Fault::Ok], None).await;
    let (c, sleeper) = client(&srv.base_url(), true);
    let r = c.chat(section_request()).await.expect("answer after 429");
    assert!(r.content.starts_with("## "));
    assert_eq!(sleeper.recorded(), vec![Duration::from_secs(1)]);
    assert_eq!(c.stats().retries, 1);
    assert_eq!(srv.stats().requests, 2);
    srv.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn server_errors_are_retried_with_growing_jittered_backoff() {
    let srv = server(
        vec![Fault::ServerError, Fault::ServerError, Fault::Ok],
        None,
    )
    .await;
    let (c, sleeper) = client(&srv.base_url(), false);
    c.chat(section_request())
        .await
        .expect("answer after two 500s");
    let d = sleeper.recorded();
    assert_eq!(d.len(), 2, "{d:?}");
    assert!(
        d[0] <= Duration::from_millis(100) && d[1] <= Duration::from_millis(200),
        "{d:?}"
    );
    assert_eq!(srv.stats().requests, 3);
    srv.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn giving_up_after_max_retries_is_a_transient_error() {
    let srv = server(vec![Fault::ServerError; 10], None).await;
    let (c, sleeper) = client(&srv.base_url(), true);
    let err = c.chat(section_request()).await.expect_err("all 500");
    assert!(err.is_retryable(), "{err}");
    assert!(
        err.to_string().contains("gave up after 4 attempt(s)"),
        "{err}"
    );
    assert_eq!(sleeper.recorded().len(), 3);
    assert_eq!(srv.stats().requests, 4);
    srv.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn unauthorized_is_not_retried_and_names_provider_url_and_model_but_not_the_key() {
    let srv = server(vec![], Some("the-right-key-000000000000")).await;
    let (c, sleeper) = client(&srv.base_url(), true);
    let err = c.chat(section_request()).await.expect_err("401");
    let text = err.to_string();
    assert!(matches!(err, LlmError::Fatal { .. }), "{text}");
    assert!(text.contains("HTTP 401"), "{text}");
    assert!(
        text.contains(&srv.base_url()) && text.contains("sim-model"),
        "{text}"
    );
    assert!(text.contains("openai-compatible"), "{text}");
    assert!(
        !text.contains("0123456789abcdef") && !text.contains("pw-test-"),
        "{text}"
    );
    assert!(sleeper.recorded().is_empty());
    assert_eq!(srv.stats().requests, 1);
    srv.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_stalled_stream_is_cut_and_retried() {
    let srv = server(vec![Fault::Stall, Fault::Ok], None).await;
    let (c, sleeper) = client(&srv.base_url(), true);
    let r = c.chat(section_request()).await.expect("answer after stall");
    assert!(r.content.starts_with("## "));
    assert_eq!(sleeper.recorded().len(), 1);
    assert_eq!(srv.stats().requests, 2);
    srv.shutdown(Duration::from_millis(200)).await;
}

#[tokio::test]
async fn truncated_streams_and_malformed_bodies_are_retried() {
    let srv = server(vec![Fault::Truncated, Fault::Malformed, Fault::Ok], None).await;
    let (c, _) = client(&srv.base_url(), true);
    c.chat(section_request())
        .await
        .expect("answer after truncation and bad chunk");
    assert_eq!(srv.stats().requests, 3);
    srv.shutdown(Duration::from_secs(1)).await;

    let srv = server(vec![Fault::Malformed, Fault::Ok], None).await;
    let (c, _) = client(&srv.base_url(), false);
    c.chat(section_request())
        .await
        .expect("answer after malformed body");
    assert_eq!(srv.stats().requests, 2);
    srv.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn the_planner_role_gets_a_plan_in_the_goals_language() {
    let srv = server(vec![], None).await;
    let (c, _) = client(&srv.base_url(), true);
    let r = c
        .chat(ChatRequest {
            role: AgentRole::Planner,
            messages: vec![ChatMessage::user("plan: 深度分析特斯拉公司")],
            attempt: 1,
            context: RequestContext {
                lang: Lang::Zh,
                topic: "深度分析特斯拉公司".into(),
                ..RequestContext::default()
            },
            traceparent: None,
            tools: Vec::new(),
            on_delta: None,
            max_tokens: None,
        })
        .await
        .expect("plan");
    let plan = planwave_plan::parse_plan_str(&r.content).expect("a plan");
    assert_eq!(plan.topic, "特斯拉公司深度分析");
    assert_eq!(plan.tasks.len(), 5);
    srv.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test]
async fn a_late_first_byte_is_cut_by_the_idle_timeout_and_retried() {
    let srv = server(vec![Fault::SlowFirstByte, Fault::Ok], None).await;
    let (c, sleeper) = client(&srv.base_url(), true);
    let r = c
        .chat(section_request())
        .await
        .expect("answer after a slow start");
    assert!(r.content.starts_with("## "));
    assert_eq!(sleeper.recorded().len(), 1, "one retry");
    assert_eq!(srv.stats().requests, 2);
    srv.shutdown(Duration::from_millis(200)).await;
}

/// The request's sink sees the answer as it streams; a stream cut short is voided with a
/// Restart before the retry, so what the sink holds at the end is exactly the answer.
#[tokio::test]
async fn deltas_reassemble_the_answer_and_a_retry_restarts_them() {
    use planwave_llm::{DeltaSink, StreamEvent};
    use std::sync::Mutex;
    let srv = server(vec![Fault::Truncated, Fault::Ok], None).await;
    for stream in [true, false] {
        let (c, _) = client(&srv.base_url(), stream);
        let text = Arc::new(Mutex::new(String::new()));
        let (restarts, deltas) = (Arc::new(Mutex::new(0)), Arc::new(Mutex::new(0)));
        let (t, r, d) = (text.clone(), restarts.clone(), deltas.clone());
        let mut request = section_request();
        request.on_delta = Some(DeltaSink::new(move |e| match e {
            StreamEvent::Delta(s) => {
                t.lock().unwrap().push_str(s);
                *d.lock().unwrap() += 1;
            }
            StreamEvent::Restart => {
                t.lock().unwrap().clear();
                *d.lock().unwrap() = 0;
                *r.lock().unwrap() += 1;
            }
        }));
        let answer = c.chat(request).await.expect("answer");
        assert_eq!(*text.lock().unwrap(), answer.content);
        let timing = answer.timing.expect("the HTTP client times its calls");
        assert_eq!(timing.streamed, stream);
        assert!(timing.ttft <= timing.e2e, "{timing:?}");
        if stream {
            // The first request of the script was truncated: one retry, voided once.
            assert_eq!((*restarts.lock().unwrap(), timing.retries), (1, 1));
            assert!(*deltas.lock().unwrap() > 1, "streamed in pieces");
            assert_eq!(timing.chunks.len() + 1, *deltas.lock().unwrap());
        } else {
            assert_eq!((*restarts.lock().unwrap(), timing.retries), (0, 0));
            assert_eq!(*deltas.lock().unwrap(), 1, "one body, one delta");
        }
    }
    srv.shutdown(Duration::from_secs(1)).await;
}
