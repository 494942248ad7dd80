//! Token counts of model calls, as every run file keeps them.

use serde::{Deserialize, Serialize};

/// Token counts of one call (or summed over many).
///
/// `prompt_tokens` is the whole prompt, cached part included (OpenAI's and DeepSeek's
/// meaning); `cached_tokens` is the part read from the provider's prompt cache (billed at the
/// cached-input price) and `cache_write_tokens` the part written to it (Anthropic bills
/// those above the input price). Both are zero when the provider reports no cache figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// Hidden reasoning tokens (DeepSeek `reasoning_content`, OpenAI reasoning models).
    #[serde(default)]
    pub reasoning_tokens: u64,
    /// Of `prompt_tokens`, those read from the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_tokens: u64,
    /// Of `prompt_tokens`, those written to the provider's prompt cache.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
}

/// For `skip_serializing_if`: cache figures are absent from the files when zero.
pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Usage without cache figures.
    pub fn new(prompt_tokens: u64, completion_tokens: u64, reasoning_tokens: u64) -> Usage {
        Usage {
            prompt_tokens,
            completion_tokens,
            reasoning_tokens,
            ..Usage::default()
        }
    }

    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens + self.reasoning_tokens
    }

    /// Prompt tokens not read from the cache (billed at the full input price).
    pub fn uncached_prompt_tokens(&self) -> u64 {
        self.prompt_tokens.saturating_sub(self.cached_tokens)
    }

    /// The share of prompt tokens read from the cache, 0 to 1 (0 without a prompt).
    pub fn cached_share(&self) -> f64 {
        if self.prompt_tokens == 0 {
            0.0
        } else {
            self.cached_tokens.min(self.prompt_tokens) as f64 / self.prompt_tokens as f64
        }
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, rhs: Usage) {
        self.prompt_tokens += rhs.prompt_tokens;
        self.completion_tokens += rhs.completion_tokens;
        self.reasoning_tokens += rhs.reasoning_tokens;
        self.cached_tokens += rhs.cached_tokens;
        self.cache_write_tokens += rhs.cache_write_tokens;
    }
}
