//! mimalloc's periodic full-heap collection, made rare.
//!
//! Every 10,000 allocations that miss its fast path, mimalloc v3 collects the calling thread's
//! whole heap: it visits every page it owns and merges their free lists. With 10,000 subagents
//! in flight that heap is a few hundred MB, and one collection kept a worker busy for 1–4 ms
//! (`_mi_page_free_collect` under `mi_theap_collect_ex` in `perf record`), several times a
//! second; every task the worker held waited. At the option's largest value it runs a hundred
//! times less often. Nothing is lost by it: a page's free list is still merged when an
//! allocation looks for space in that page, and freed pages still go back to the arena.

use std::os::raw::c_long;

/// `mi_option_generic_collect` in mimalloc 3.3's `mimalloc.h` (the `libmimalloc-sys` binding
/// predates it); [`tests`] checks it still names the option whose default is 10,000.
const MI_OPTION_GENERIC_COLLECT: libmimalloc_sys::mi_option_t = 34;

/// The largest value mimalloc accepts (it clamps to 1..=1,000,000).
pub const RARE: c_long = 1_000_000;

/// Sets the collection interval to [`RARE`] unless `MIMALLOC_GENERIC_COLLECT` chose one.
/// Returns whether the interval is [`RARE`] now.
pub fn make_rare() -> bool {
    // SAFETY: plain option calls; `set_default` leaves a value read from the environment.
    unsafe {
        libmimalloc_sys::mi_option_set_default(MI_OPTION_GENERIC_COLLECT, RARE);
        libmimalloc_sys::mi_option_get(MI_OPTION_GENERIC_COLLECT) == RARE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_index_names_generic_collect() {
        if std::env::var_os("MIMALLOC_GENERIC_COLLECT").is_some() {
            return; // the default below is then not what mimalloc holds
        }
        // Options are indexed by position; 10,000 is generic_collect's default and no other
        // option's. A mimalloc upgrade that renumbers them fails here, not silently.
        // SAFETY: reads an option.
        let before = unsafe { libmimalloc_sys::mi_option_get(MI_OPTION_GENERIC_COLLECT) };
        assert!(
            before == 10_000 || before == RARE,
            "option {MI_OPTION_GENERIC_COLLECT} is {before}, not generic_collect"
        );
        assert!(make_rare());
    }
}
