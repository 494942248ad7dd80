//! The simulator as a realistic endpoint: paced SSE, a concurrency limit with a queue, and the
//! server's own per-answer measurements, checked against the real HTTP client's.

use std::sync::Arc;
use std::time::Duration;

use planwave_llm::openai::{OpenAiConfig, OpenAiProvider};
use planwave_llm::{AgentRole, ChatMessage, ChatRequest, LlmProvider, RequestContext};
use planwave_plan::Lang;
use planwave_sim::{Latency, SimConfig, TokenRate};
use planwave_sim_server::{Fault, FaultConfig, ServingConfig, SimServer, SimServerConfig};

fn request(task: usize) -> ChatRequest {
    ChatRequest {
        role: AgentRole::Subagent,
        messages: vec![ChatMessage::user("Write the section on competition.")],
        attempt: 1,
        context: RequestContext {
            lang: Lang::En,
            topic: "Tesla".into(),
            task_id: Some(task.to_string()),
            task_title: "Competitive landscape".into(),
            ..RequestContext::default()
        },
        traceparent: None,
        tools: Vec::new(),
        on_delta: None,
        max_tokens: None,
    }
}

async fn start(sim: SimConfig, serving: ServingConfig, faults: FaultConfig) -> SimServer {
    SimServer::start(
        "127.0.0.1:0".parse().expect("addr"),
        SimServerConfig {
            sim,
            serving,
            faults,
            ..SimServerConfig::default()
        },
    )
    .await
    .expect("start sim server")
}

fn client(base: &str, stream: bool) -> Arc<OpenAiProvider> {
    let mut cfg = OpenAiConfig::new(base, "sim-model");
    cfg.stream = stream;
    Arc::new(OpenAiProvider::new(cfg).expect("client"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paced_stream_arrives_token_by_token_and_the_server_measures_every_answer() {
    let srv = start(
        SimConfig {
            latency: Latency::Fixed(Duration::from_millis(20)),
            token_rate: TokenRate {
                jitter: 0.5,
                ..TokenRate::uniform(2000.0)
            },
            ..SimConfig::default()
        },
        ServingConfig::default(),
        FaultConfig::default(),
    )
    .await;
    let c = client(&srv.base_url(), true);
    let r = c.chat(request(1)).await.expect("answer");
    let t = r.timing.expect("timed");
    assert!(t.streamed);
    // Paced: many content chunks, not one body split at the end.
    assert!(t.chunks.len() > 10, "{} chunks", t.chunks.len());
    assert!(t.ttft >= Duration::from_millis(20), "{t:?}");
    assert!(t.ttft <= t.e2e);
    let gaps: Vec<Duration> = t.itl().collect();
    assert!(
        gaps.iter().min() != gaps.iter().max(),
        "jitter makes token gaps differ"
    );
    let stats = srv.stats();
    assert_eq!(stats.serving.completed, 1);
    assert_eq!(stats.serving.output_tokens, r.usage.completion_tokens);
    let server_ttft = stats.serving.ttft_ms[0];
    // The server's first token precedes the client's, and both include the 20 ms latency.
    assert!(server_ttft >= 20.0, "{server_ttft}");
    assert!(
        server_ttft <= t.ttft.as_secs_f64() * 1000.0,
        "{server_ttft} vs {t:?}"
    );
    assert!(stats.serving.e2e_ms[0] >= server_ttft);
    srv.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_concurrency_limit_holds_and_the_rest_queue() {
    let limit = 3;
    let srv = start(
        SimConfig {
            latency: Latency::Fixed(Duration::from_millis(30)),
            ..SimConfig::default()
        },
        ServingConfig {
            max_concurrency: Some(limit),
            prefill_per_token: Duration::from_micros(10),
        },
        FaultConfig::default(),
    )
    .await;
    for stream in [true, false] {
        let c = client(&srv.base_url(), stream);
        let calls: Vec<_> = (0..12)
            .map(|i| {
                let c = c.clone();
                tokio::spawn(async move { c.chat(request(i)).await })
            })
            .collect();
        for call in calls {
            call.await.expect("join").expect("answer");
        }
    }
    let s = srv.stats().serving;
    assert_eq!(s.completed, 24);
    assert_eq!(s.admitted, 24, "every answer took a slot");
    assert_eq!(
        s.max_in_flight, limit as u64,
        "the limit is reached, never passed"
    );
    // 12 at once through 3 slots of 30 ms: somebody waited at least one answer's time.
    let longest_wait = s.queue_ms.iter().copied().fold(0.0, f64::max);
    assert!(longest_wait >= 30.0, "{:?}", s.queue_ms);
    assert!(s.ttft_ms.iter().zip(&s.queue_ms).all(|(t, q)| t >= q));
    srv.shutdown(Duration::from_secs(1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mid_stream_faults_still_work_with_a_token_rate() {
    let srv = start(
        SimConfig {
            token_rate: TokenRate::uniform(5000.0),
            ..SimConfig::default()
        },
        ServingConfig::default(),
        FaultConfig {
            script: vec![Fault::Truncated, Fault::Ok],
            ..FaultConfig::default()
        },
    )
    .await;
    let c = client(&srv.base_url(), true);
    let r = c.chat(request(1)).await.expect("retried to an answer");
    assert_eq!(r.timing.expect("timed").retries, 1);
    assert!(r.content.starts_with("## Competitive landscape"));
    let stats = srv.stats();
    assert_eq!(stats.faults.get("truncated"), Some(&1));
    srv.shutdown(Duration::from_secs(1)).await;
}
