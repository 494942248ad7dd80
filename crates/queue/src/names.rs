//! Names of the streams and buckets, and of subjects and keys made from batch names and job
//! ids (ids can hold any character; subjects and keys cannot, so ids are hex-encoded).

use crate::QueueError;

pub const JOBS_STREAM: &str = "PLANWAVE_JOBS";
pub const JOURNAL_STREAM: &str = "PLANWAVE_JOURNAL";
pub const STATE_BUCKET: &str = "planwave_jobs";
pub const RUNS_BUCKET: &str = "planwave_runs";
/// The one durable pull consumer every worker shares.
pub const CONSUMER: &str = "planwave-workers";

/// A batch name: 1-64 of `A-Z a-z 0-9 _ -` (it becomes part of subjects and keys).
pub fn check_batch_name(name: &str) -> Result<(), QueueError> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(QueueError::new(format!(
            "batch name {name:?}: use 1-64 letters, digits, '_' or '-'"
        )))
    }
}

/// A job id as a subject token / key part.
pub fn job_key(id: &str) -> String {
    id.bytes().map(|b| format!("{b:02x}")).collect()
}

pub fn job_subject(batch: &str) -> String {
    format!("planwave.jobs.{batch}")
}

pub fn journal_subject(batch: &str, key: &str) -> String {
    format!("planwave.journal.{batch}.{key}")
}

pub fn batch_record_key(batch: &str) -> String {
    format!("batch.{batch}")
}

pub fn job_record_key(batch: &str, key: &str) -> String {
    format!("job.{batch}.{key}")
}

/// A run directory file's object name.
pub fn object_name(batch: &str, key: &str, rel: &str) -> String {
    format!("{batch}/{key}/{rel}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_names_are_checked_and_ids_become_safe_tokens() {
        assert!(check_batch_name("q3-filings_2026").is_ok());
        for bad in ["", "a.b", "a b", "a>", &"x".repeat(65)] {
            assert!(check_batch_name(bad).is_err(), "{bad}");
        }
        assert_eq!(job_key("a.b *"), "612e62202a");
        assert_ne!(job_key("ab"), job_key("a"));
    }
}
