//! Resident memory of this process, from `/proc/self/status` (Linux; `None` elsewhere).

/// `VmHWM`: the peak resident set size, in bytes.
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    status_kb("VmHWM:").map(|kb| kb * 1024)
}

/// `VmRSS`: the current resident set size, in bytes.
pub(crate) fn current_rss_bytes() -> Option<u64> {
    status_kb("VmRSS:").map(|kb| kb * 1024)
}

/// Resets the peak to the current size (writing 5 to `/proc/self/clear_refs`), so each run
/// of a load test reports its own peak. Returns false where that is not possible.
pub(crate) fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", b"5").is_ok()
}

fn status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|kb| kb.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn peak_is_at_least_current() {
        let cur = current_rss_bytes().expect("VmRSS on Linux");
        let peak = peak_rss_bytes().expect("VmHWM on Linux");
        assert!(peak >= cur && cur > 0, "peak {peak} current {cur}");
    }
}
