//! Automatic prefix caching as inference servers and providers do it: the prompt is cut into
//! blocks of a fixed number of tokens, each block is keyed by a hash of itself and every
//! block before it (vLLM's automatic prefix caching), and a request reuses the longest run of
//! leading blocks already in the cache. Only whole blocks are cached, so a prompt shorter
//! than one block never hits.
//!
//! The cache holds a bounded number of blocks, evicts the least recently used first, and
//! forgets a block not used for its time to live (providers keep a prefix for minutes).
//!
//! Tokens are the simulator's own unit, three characters each (what `sim-llm serve` and the
//! simulator's usage count), so the cached count is in the same unit as the prompt tokens
//! reported beside it. Pure logic: the caller passes the time.

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::{Duration, Instant};

use planwave_llm::{ChatMessage, MessageRole};
use serde::{Deserialize, Serialize};

/// The simulator's token: three characters of any script.
const CHARS_PER_TOKEN: u64 = 3;

/// vLLM's default block size is 16 tokens; OpenAI caches in 128-token steps. 64 sits between.
pub const DEFAULT_BLOCK_TOKENS: u64 = 64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefixCacheConfig {
    /// Tokens per block (at least 1).
    pub block_tokens: u64,
    /// Blocks kept at most (at least 1).
    pub capacity_blocks: usize,
    /// A block not used for this long is gone.
    pub ttl: Duration,
}

impl Default for PrefixCacheConfig {
    /// 64-token blocks, 1 M tokens of capacity, five minutes to live (OpenAI keeps a prefix
    /// for 5-10 minutes of inactivity).
    fn default() -> Self {
        PrefixCacheConfig {
            block_tokens: DEFAULT_BLOCK_TOKENS,
            capacity_blocks: (1_000_000 / DEFAULT_BLOCK_TOKENS) as usize,
            ttl: Duration::from_secs(300),
        }
    }
}

/// What one prompt found in the cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheLookup {
    /// Estimated tokens of the whole prompt.
    pub prompt_tokens: u64,
    /// Tokens of the leading blocks found in the cache.
    pub cached_tokens: u64,
    /// Characters of the prompt those blocks cover (what prefill can skip).
    pub cached_chars: usize,
}

/// Counts since the cache was made, served in the simulator's statistics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrefixCacheStats {
    pub lookups: u64,
    pub prompt_tokens: u64,
    pub cached_tokens: u64,
    /// Blocks in the cache now.
    pub blocks: u64,
    /// Blocks dropped for room or age.
    pub evicted: u64,
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    last_used: Instant,
    /// Key in `by_age`.
    tick: u64,
}

#[derive(Debug)]
pub struct PrefixCache {
    cfg: PrefixCacheConfig,
    blocks: HashMap<u64, Entry>,
    /// Blocks by last use, oldest first: eviction and expiry take from the front.
    by_age: BTreeMap<u64, u64>,
    tick: u64,
    stats: PrefixCacheStats,
}

/// One whole block of a prompt: its chained hash and where it ends.
struct Block {
    hash: u64,
    end_chars: usize,
}

impl PrefixCache {
    pub fn new(cfg: PrefixCacheConfig) -> PrefixCache {
        PrefixCache {
            cfg: PrefixCacheConfig {
                block_tokens: cfg.block_tokens.max(1),
                capacity_blocks: cfg.capacity_blocks.max(1),
                ttl: cfg.ttl,
            },
            blocks: HashMap::new(),
            by_age: BTreeMap::new(),
            tick: 0,
            stats: PrefixCacheStats::default(),
        }
    }

    pub fn stats(&self) -> PrefixCacheStats {
        PrefixCacheStats {
            blocks: self.blocks.len() as u64,
            ..self.stats
        }
    }

    /// The cached part of `messages` as one prompt, then caches all of its whole blocks.
    pub fn lookup_messages(&mut self, messages: &[ChatMessage], now: Instant) -> CacheLookup {
        self.lookup(&prompt_text(messages), now)
    }

    /// The cached part of `prompt` (its longest run of leading blocks in the cache), then
    /// caches all of its whole blocks as used `now`.
    pub fn lookup(&mut self, prompt: &str, now: Instant) -> CacheLookup {
        self.expire(now);
        let blocks = self.blocks_of(prompt);
        let hits = blocks
            .iter()
            .take_while(|b| self.blocks.contains_key(&b.hash))
            .count();
        let found = CacheLookup {
            prompt_tokens: (planwave_llm::char_count(prompt) as u64).div_ceil(CHARS_PER_TOKEN),
            cached_tokens: hits as u64 * self.cfg.block_tokens,
            cached_chars: hits.checked_sub(1).map_or(0, |i| blocks[i].end_chars),
        };
        for b in &blocks {
            self.touch(b.hash, now);
        }
        self.stats.lookups += 1;
        self.stats.prompt_tokens += found.prompt_tokens;
        self.stats.cached_tokens += found.cached_tokens;
        found
    }

    /// The whole blocks of `prompt`, each hashed with every block before it.
    fn blocks_of(&self, prompt: &str) -> Vec<Block> {
        let per_block = self.cfg.block_tokens * CHARS_PER_TOKEN;
        let mut blocks = Vec::new();
        let (mut units, mut start, mut chars, mut prev) = (0u64, 0usize, 0usize, 0u64);
        for (i, c) in prompt.char_indices() {
            units += 1;
            chars += 1;
            if units >= per_block {
                let end = i + c.len_utf8();
                let mut h = DefaultHasher::new();
                prev.hash(&mut h);
                prompt[start..end].hash(&mut h);
                prev = h.finish();
                blocks.push(Block {
                    hash: prev,
                    end_chars: chars,
                });
                (units, start) = (0, end);
            }
        }
        blocks
    }

    fn touch(&mut self, hash: u64, now: Instant) {
        self.tick += 1;
        let entry = Entry {
            last_used: now,
            tick: self.tick,
        };
        if let Some(old) = self.blocks.insert(hash, entry) {
            self.by_age.remove(&old.tick);
        }
        self.by_age.insert(self.tick, hash);
        while self.blocks.len() > self.cfg.capacity_blocks {
            self.evict_oldest();
        }
    }

    /// Drops every block last used more than the time to live before `now`.
    fn expire(&mut self, now: Instant) {
        while let Some((_, hash)) = self.by_age.first_key_value()
            && self
                .blocks
                .get(hash)
                .is_some_and(|e| now.saturating_duration_since(e.last_used) > self.cfg.ttl)
        {
            self.evict_oldest();
        }
    }

    fn evict_oldest(&mut self) {
        if let Some((_, hash)) = self.by_age.pop_first() {
            self.blocks.remove(&hash);
            self.stats.evicted += 1;
        }
    }
}

/// The prompt as a server's chat template lays it out: each message's role, then its text.
/// A different role or a moved boundary changes the blocks from there on, as it would for a
/// real tokenizer.
pub fn prompt_text(messages: &[ChatMessage]) -> String {
    let mut s = String::new();
    for m in messages {
        s.push_str(match m.role {
            MessageRole::System => "<|system|>\n",
            MessageRole::User => "<|user|>\n",
            MessageRole::Assistant => "<|assistant|>\n",
            MessageRole::Tool => "<|tool|>\n",
        });
        s.push_str(&m.content);
        s.push('\n');
    }
    s
}

#[cfg(test)]
#[path = "prefix_cache_tests.rs"]
mod tests;
