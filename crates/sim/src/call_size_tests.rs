//! The size of a simulated call's future, which every call in flight holds for its whole wait:
//! a load test of 100,000 subagents holds 100,000 of them, so a slot added here is paid for in
//! each subagent's memory figure (issue 32). Only what the answer reads is kept.

use std::time::Duration;

use planwave_llm::{AgentRole, ChatMessage, ChatRequest, LlmProvider, RequestContext};

use crate::{Latency, SimConfig, SimProvider};

fn subagent_request() -> ChatRequest {
    ChatRequest {
        role: AgentRole::Subagent,
        messages: vec![ChatMessage::user("write the section")],
        attempt: 1,
        context: RequestContext {
            topic: "a topic".into(),
            objectives: vec!["an objective".into()],
            task_id: Some("7".into()),
            task_title: "Task seven".into(),
            ..RequestContext::default()
        },
        traceparent: None,
        tools: Vec::new(),
        max_tokens: None,
        on_delta: None,
    }
}

#[test]
fn a_waiting_call_keeps_what_its_answer_needs_and_not_the_request() {
    let sim = SimProvider::new(SimConfig {
        latency: Latency::Fixed(Duration::from_secs(2)),
        ..SimConfig::default()
    });
    let call = sim.chat(subagent_request());
    let size = std::mem::size_of_val(&*call);
    // 472 B in a debug build at this commit; the whole request kept was 336 B of it.
    assert!(
        size <= 512,
        "a simulated call's future is {size} B (a request is {} B)",
        std::mem::size_of::<ChatRequest>()
    );
}

#[tokio::test]
async fn the_answer_is_the_same_whatever_the_request_carried_besides() {
    let sim = SimProvider::new(SimConfig::default());
    let plain = sim.chat(subagent_request()).await.expect("answer");
    let mut busy = subagent_request();
    busy.traceparent = Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into());
    busy.max_tokens = Some(1_000_000);
    let busy = sim.chat(busy).await.expect("answer");
    assert_eq!(plain.content, busy.content);
    assert_eq!(plain.usage, busy.usage);
    assert_eq!(plain.finish_reason.as_deref(), Some("stop"));
}
