//! The server's automatic prefix cache (`--prefix-cache`): looked up when a request is
//! admitted, so prefill is charged for the uncached part only, and reported in the answer's
//! usage (`prompt_tokens_details.cached_tokens`, as OpenAI reports it).
//!
//! The cache itself is the simulator's [`PrefixCache`]; the server keeps it out of its
//! inner [`planwave_sim::SimProvider`] so each request is looked up once, before prefill.

use std::sync::Mutex;
use std::time::Instant;

use planwave_llm::{ChatMessage, ChatResponse, LlmError};
use planwave_sim::{CacheLookup, PrefixCache, PrefixCacheConfig, PrefixCacheStats};

#[derive(Debug, Default)]
pub(crate) struct ServerCache(Option<Mutex<PrefixCache>>);

impl ServerCache {
    pub(crate) fn new(cfg: Option<PrefixCacheConfig>) -> ServerCache {
        ServerCache(cfg.map(|c| Mutex::new(PrefixCache::new(c))))
    }

    /// What `messages` find in the cache (nothing without one); caches them.
    pub(crate) fn lookup(&self, messages: &[ChatMessage]) -> CacheLookup {
        self.0
            .as_ref()
            .and_then(|c| c.lock().ok())
            .map(|mut c| c.lookup_messages(messages, Instant::now()))
            .unwrap_or_default()
    }

    pub(crate) fn stats(&self) -> Option<PrefixCacheStats> {
        Some(self.0.as_ref()?.lock().ok()?.stats())
    }
}

/// The answer with the cached part of its prompt in its usage.
pub(crate) fn with_cached(
    answer: Result<ChatResponse, LlmError>,
    cached_tokens: u64,
) -> Result<ChatResponse, LlmError> {
    answer.map(|mut a| {
        a.usage.cached_tokens = cached_tokens.min(a.usage.prompt_tokens);
        a
    })
}
