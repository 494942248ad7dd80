//! Output caps per role: the most tokens one answer may have, sent as `max_tokens`. Without
//! one a weak model can write until the context is full (a planner call ran 457 s, 6,531
//! tokens, on llama.cpp); with one, an answer cut short says so (`finish_reason: length`)
//! and the caller treats it as cut, not as complete.

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::{AgentRole, ChatRequest, ChatResponse, LlmError, LlmProvider};

/// The cap of each role (`None`: no `max_tokens`, the server's own limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutputCaps {
    pub planner: Option<u32>,
    pub subagent: Option<u32>,
    pub integrator: Option<u32>,
    pub evaluator: Option<u32>,
    pub reflector: Option<u32>,
    /// An `llm_call` step's direct model call.
    pub llm_call: Option<u32>,
}

impl OutputCaps {
    /// For a real server: room for a plan of a few dozen tasks, a long section, an
    /// evaluation or reflection of a few hundred words.
    pub const DEFAULT: OutputCaps = OutputCaps {
        planner: Some(4096),
        subagent: Some(2048),
        integrator: Some(2048),
        evaluator: Some(1024),
        reflector: Some(1024),
        llm_call: Some(1024),
    };

    /// The names a cap is set by (`--max-output ROLE=N`, `[llm.output_caps]`).
    pub const ROLES: [&'static str; 6] = [
        "planner",
        "subagent",
        "integrator",
        "evaluator",
        "reflector",
        "llm_call",
    ];

    /// The cap named `role` (one of [`OutputCaps::ROLES`]).
    pub fn slot(&mut self, role: &str) -> Option<&mut Option<u32>> {
        Some(match role {
            "planner" => &mut self.planner,
            "subagent" => &mut self.subagent,
            "integrator" => &mut self.integrator,
            "evaluator" => &mut self.evaluator,
            "reflector" => &mut self.reflector,
            "llm_call" => &mut self.llm_call,
            _ => return None,
        })
    }

    /// Every cap set to `n` (the old one-value `[llm] max_tokens`).
    pub fn all(n: u32) -> OutputCaps {
        OutputCaps {
            planner: Some(n),
            subagent: Some(n),
            integrator: Some(n),
            evaluator: Some(n),
            reflector: Some(n),
            llm_call: Some(n),
        }
    }

    /// The cap for this request.
    pub fn for_request(&self, request: &ChatRequest) -> Option<u32> {
        match request.role {
            AgentRole::Subagent if request.context.llm_call => self.llm_call,
            AgentRole::Subagent => self.subagent,
            AgentRole::Planner => self.planner,
            AgentRole::Integrator => self.integrator,
            AgentRole::Evaluator => self.evaluator,
            AgentRole::Reflector => self.reflector,
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == OutputCaps::default()
    }
}

/// Gives every request without its own `max_tokens` its role's cap.
pub struct CappedProvider {
    inner: Arc<dyn LlmProvider>,
    caps: OutputCaps,
}

impl CappedProvider {
    /// `inner` itself when no cap is set.
    pub fn wrap(inner: Arc<dyn LlmProvider>, caps: OutputCaps) -> Arc<dyn LlmProvider> {
        if caps.is_empty() {
            return inner;
        }
        Arc::new(CappedProvider { inner, caps })
    }
}

#[async_trait]
impl LlmProvider for CappedProvider {
    crate::pass_provider_info_to!(inner);

    async fn chat(&self, mut request: ChatRequest) -> Result<ChatResponse, LlmError> {
        if request.max_tokens.is_none() {
            request.max_tokens = self.caps.for_request(&request);
        }
        self.inner.chat(request).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_role_gets_its_cap_and_llm_call_its_own() {
        let mut caps = OutputCaps::DEFAULT;
        *caps.slot("llm_call").expect("a role") = Some(7);
        assert!(caps.slot("writer").is_none());
        let mut r = ChatRequest {
            role: AgentRole::Subagent,
            messages: Vec::new(),
            attempt: 1,
            context: Default::default(),
            traceparent: None,
            tools: Vec::new(),
            max_tokens: None,
            on_delta: None,
        };
        assert_eq!(caps.for_request(&r), Some(2048));
        r.context.llm_call = true;
        assert_eq!(caps.for_request(&r), Some(7));
        r.role = AgentRole::Planner;
        assert_eq!(caps.for_request(&r), Some(4096));
    }
}
