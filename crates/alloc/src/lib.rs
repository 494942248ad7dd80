//! The allocator every planwave binary and benchmark uses, and its settings.
//!
//! mimalloc, because glibc malloc was a fifth of the CPU time of a zero-latency load test
//! (many small, short-lived allocations freed on other threads). [`configure`] changes one
//! of its defaults, which stalled workers for milliseconds in load tests on a 2-core VM:
//!
//! - [`collect`]: the full-heap collection mimalloc runs every 10,000 slow-path allocations
//!   made rare (`MIMALLOC_GENERIC_COLLECT` wins when set).
//!
//! Transparent huge pages are left as mimalloc has them: allowed (it advises its arenas
//! `MADV_HUGEPAGE`). They were turned off from 24 Nov to 26 Nov, when a 2 MiB zeroing fault
//! cost ~4 ms on the VM of `docs/benchmarks.md` and made the dispatch tail; measured again
//! with today's engine (a heap that grows far less per subagent), huge pages gave the lower
//! dispatch p99 in every one of 15 interleaved pairs and the faster zero-latency chain, for
//! 1–3 % more memory per subagent in flight (docs/benchmarks.md, "huge pages again").
//! `MIMALLOC_ALLOW_THP=0` is mimalloc's own switch to turn them off for the process.

pub mod collect;

/// The global allocator: declare it with
/// `#[global_allocator] static GLOBAL: planwave_alloc::Allocator = planwave_alloc::Allocator;`.
pub use mimalloc::MiMalloc as Allocator;

/// Applies the settings. Call at the top of `main`, before any runtime threads start.
pub fn configure() {
    collect::make_rare();
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn configuring_leaves_huge_pages_to_the_allocator() {
        if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
            return; // the user's choice, which mimalloc applies itself
        }
        super::configure();
        let status = std::fs::read_to_string("/proc/self/status").expect("status");
        let line = status
            .lines()
            .find(|l| l.starts_with("THP_enabled:"))
            .expect("THP_enabled line (Linux 5.0+)");
        // 1: not disabled for the process (whether the system allows them is its own setting).
        assert_eq!(line.split_whitespace().nth(1), Some("1"), "{line}");
    }
}
