//! Saved `--json` outputs read back: two compared figure by figure (`compare`, ratios B/A),
//! or the documents of repeated runs as each figure's mean and 95 % interval (`repeat`).

pub(crate) mod compare;
pub(crate) mod repeat;
