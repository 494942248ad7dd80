//! The allocator every planwave binary and benchmark uses, and its settings.
//!
//! mimalloc, because glibc malloc was a fifth of the CPU time of a zero-latency load test
//! (many small, short-lived allocations freed on other threads). Two of its defaults stalled
//! workers for milliseconds in load tests on a 2-core VM, which was the whole dispatch-latency
//! tail there; [`configure`] changes both:
//!
//! - [`pages`]: transparent huge pages off, so heap growth faults 4 KiB at a time;
//! - [`collect`]: the full-heap collection mimalloc runs every 10,000 slow-path allocations
//!   made rare.
//!
//! Each setting yields to the allocator's own environment variable when one is set
//! (`MIMALLOC_ALLOW_THP`, `MIMALLOC_GENERIC_COLLECT`), so they can be compared.

pub mod collect;
pub mod pages;

/// The global allocator: declare it with
/// `#[global_allocator] static GLOBAL: planwave_alloc::Allocator = planwave_alloc::Allocator;`.
pub use mimalloc::MiMalloc as Allocator;

/// Applies both settings. Call at the top of `main`, before any runtime threads start.
pub fn configure() {
    pages::prefer_small_pages();
    collect::make_rare();
}
