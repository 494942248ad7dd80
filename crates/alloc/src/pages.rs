//! Small memory pages, so growing the heap never stalls a worker.
//!
//! A run allocates as it goes (subagent actors, prompts, sections), so its heap grows for as
//! long as tasks keep starting. With transparent huge pages the kernel backs each new 2 MiB of
//! heap with one huge page and zeroes all of it in the page fault, on whichever worker thread
//! touched it first. On the 2-core VM of `docs/benchmarks.md` one such fault took about 4 ms
//! (24 % of a load test's CPU was `clear_page` under them), and the worker stood still
//! meanwhile: that was most of the dispatch-latency tail. With 4 KiB pages the same zeroing
//! comes in pieces of microseconds. planwave gains nothing from huge pages: its heap is
//! small objects touched once or twice, not a large working set that TLB misses slow down.

/// Turns transparent huge pages off for this process (Linux; elsewhere it does nothing),
/// unless `MIMALLOC_ALLOW_THP` is set: that is the allocator's own switch, and whoever sets it
/// has chosen. Returns whether they are off now.
pub fn prefer_small_pages() -> bool {
    if std::env::var_os("MIMALLOC_ALLOW_THP").is_some() {
        return false;
    }
    disable_thp()
}

#[cfg(target_os = "linux")]
fn disable_thp() -> bool {
    // SAFETY: prctl with integer arguments only. PR_SET_THP_DISABLE marks the whole address
    // space, so it also covers memory the allocator mapped (and advised) before main.
    unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) == 0 }
}

#[cfg(not(target_os = "linux"))]
fn disable_thp() -> bool {
    false
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    #[test]
    fn the_kernel_reports_huge_pages_off_for_the_process() {
        // The test binary may run with MIMALLOC_ALLOW_THP set by a user; the switch itself
        // is what is under test here.
        assert!(super::disable_thp(), "prctl failed");
        let status = std::fs::read_to_string("/proc/self/status").expect("status");
        let line = status
            .lines()
            .find(|l| l.starts_with("THP_enabled:"))
            .expect("THP_enabled line (Linux 5.0+)");
        assert_eq!(line.split_whitespace().nth(1), Some("0"), "{line}");
    }
}
