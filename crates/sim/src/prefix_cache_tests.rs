use super::*;

fn cfg(capacity_blocks: usize, ttl_secs: u64) -> PrefixCacheConfig {
    PrefixCacheConfig {
        block_tokens: 4,
        capacity_blocks,
        ttl: Duration::from_secs(ttl_secs),
    }
}

/// 4-token blocks are 12 characters.
const A: &str = "0123456789ab";
const B: &str = "ghijklmnopqr";
const C: &str = "wxyzABCDEFGH";

#[test]
fn a_shared_prefix_is_cached_block_by_block() {
    let mut c = PrefixCache::new(cfg(100, 60));
    let t = Instant::now();
    let first = c.lookup(&format!("{A}{B}tail"), t);
    assert_eq!((first.cached_tokens, first.prompt_tokens), (0, 10));
    // Same two leading blocks, a different third: two blocks hit.
    let second = c.lookup(&format!("{A}{B}{C}"), t);
    assert_eq!((second.cached_tokens, second.cached_chars), (8, 24));
    // A change in the first block misses everything after it, even identical later blocks
    // (each block is keyed by its whole prefix).
    let third = c.lookup(&format!("x{A}{B}"), t);
    assert_eq!(third.cached_tokens, 0);
    let s = c.stats();
    assert_eq!((s.lookups, s.cached_tokens), (3, 8));
}

#[test]
fn a_partial_block_is_never_cached() {
    let mut c = PrefixCache::new(cfg(100, 60));
    let t = Instant::now();
    c.lookup("short", t);
    assert_eq!(c.lookup("short", t).cached_tokens, 0);
    assert_eq!(c.stats().blocks, 0);
}

#[test]
fn blocks_expire_after_their_time_to_live() {
    let mut c = PrefixCache::new(cfg(100, 10));
    let t = Instant::now();
    c.lookup(A, t);
    assert_eq!(c.lookup(A, t + Duration::from_secs(10)).cached_tokens, 4);
    // Used at t+10: still alive at t+20, gone at t+21.
    assert_eq!(c.lookup(A, t + Duration::from_secs(20)).cached_tokens, 4);
    assert_eq!(c.lookup(A, t + Duration::from_secs(31)).cached_tokens, 0);
    assert_eq!(c.stats().evicted, 1);
}

#[test]
fn the_least_recently_used_block_makes_room() {
    let mut c = PrefixCache::new(cfg(2, 60));
    let t = Instant::now();
    c.lookup(A, t);
    c.lookup(B, t);
    c.lookup(A, t); // A is now the most recent
    c.lookup(C, t); // evicts B
    assert_eq!(c.lookup(A, t).cached_tokens, 4);
    assert_eq!(c.lookup(B, t).cached_tokens, 0);
    assert_eq!(c.stats().blocks, 2);
}

#[test]
fn blocks_are_counted_in_characters_of_any_script() {
    let mut c = PrefixCache::new(cfg(100, 60));
    let t = Instant::now();
    let p = "特斯拉汽车公司分析报告之一二三四";
    c.lookup(p, t);
    let again = c.lookup(p, t);
    // 16 characters: one whole 12-character block.
    assert_eq!((again.cached_tokens, again.cached_chars), (4, 12));
}

#[test]
fn roles_are_part_of_the_prompt() {
    let mut c = PrefixCache::new(cfg(100, 60));
    let t = Instant::now();
    let text = A.repeat(4);
    c.lookup_messages(&[ChatMessage::system(text.clone())], t);
    assert_eq!(
        c.lookup_messages(&[ChatMessage::user(text.clone())], t)
            .cached_tokens,
        0
    );
    assert!(
        c.lookup_messages(&[ChatMessage::system(text)], t)
            .cached_tokens
            >= 12
    );
}
