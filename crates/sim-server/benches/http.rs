//! The OpenAI-compatible client against the simulator served over loopback HTTP: 512 section
//! requests, 64 in flight, streaming and not, beside the same requests to the in-process
//! simulator (the cost of HTTP, SSE encoding/decoding and JSON on both ends).

use std::sync::Arc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use planwave_llm::openai::{LimitConfig, OpenAiConfig, OpenAiProvider};
use planwave_llm::{AgentRole, ChatMessage, ChatRequest, LlmProvider, RequestContext};
use planwave_plan::Lang;
use planwave_sim::{SimConfig, SimProvider};
use planwave_sim_server::{SimServer, SimServerConfig};

const CALLS: usize = 512;
const IN_FLIGHT: usize = 64;

fn request(i: usize) -> ChatRequest {
    ChatRequest {
        role: AgentRole::Subagent,
        messages: vec![ChatMessage::user(format!("Write section {i}.").repeat(50))],
        attempt: 1,
        context: RequestContext {
            lang: Lang::Zh,
            topic: "特斯拉公司深度分析".into(),
            task_id: Some(i.to_string()),
            task_title: format!("章节 {i}"),
            key_questions: vec!["核心问题一".into(), "核心问题二".into()],
            ..RequestContext::default()
        },
        traceparent: None,
        tools: Vec::new(),
        on_delta: None,
        max_tokens: None,
    }
}

async fn burst(p: Arc<dyn LlmProvider>) {
    let done = futures::stream::iter(0..CALLS)
        .map(|i| {
            let p = p.clone();
            async move { p.chat(request(i)).await }
        })
        .buffer_unordered(IN_FLIGHT)
        .filter(|r| futures::future::ready(r.is_ok()))
        .count()
        .await;
    assert_eq!(done, CALLS);
}

fn http(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let server = rt
        .block_on(SimServer::start(
            "127.0.0.1:0".parse().expect("addr"),
            SimServerConfig::default(),
        ))
        .expect("server");
    let mut group = c.benchmark_group("llm_512_calls_64_in_flight");
    group.sample_size(10);
    group.throughput(Throughput::Elements(CALLS as u64));
    let sim: Arc<dyn LlmProvider> = Arc::new(SimProvider::new(SimConfig::default()));
    group.bench_function("in_process_sim", |b| {
        b.iter(|| rt.block_on(burst(sim.clone())))
    });
    for stream in [true, false] {
        let mut cfg = OpenAiConfig::new(server.base_url(), "planwave-sim-1");
        cfg.stream = stream;
        cfg.limits = LimitConfig {
            max_in_flight: Some(IN_FLIGHT),
            ..LimitConfig::default()
        };
        let client: Arc<dyn LlmProvider> = Arc::new(OpenAiProvider::new(cfg).expect("client"));
        let name = if stream { "http_sse" } else { "http_json" };
        group.bench_function(name, |b| b.iter(|| rt.block_on(burst(client.clone()))));
    }
    group.finish();
    rt.block_on(server.shutdown(std::time::Duration::from_secs(1)));
}

criterion_group!(benches, http);
criterion_main!(benches);
