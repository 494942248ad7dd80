//! Ids that come from a URL. A run id names a directory under `--data` and a task id is
//! looked up in the run's records; neither reaches the file system as given unless it is
//! one plain name (letters, digits, `.`, `_`, `-`; not starting with `.`), so `..`, `/`,
//! `%2F` and the like are refused before any path is built.

use chrono::Utc;

/// Longest id accepted (a directory name must stay well under NAME_MAX).
const MAX_LEN: usize = 128;

/// `id` if it is one safe path component.
pub fn safe_name(id: &str) -> Option<&str> {
    let ok = !id.is_empty()
        && id.len() <= MAX_LEN
        && !id.starts_with('.')
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    ok.then_some(id)
}

/// A new run id: sortable by creation time, unique by its random tail
/// (`20261125-161530-3fa9c2`).
pub fn new_run_id(prefix: &str) -> String {
    let tail = uuid::Uuid::new_v4().simple().to_string();
    format!(
        "{prefix}{}-{}",
        Utc::now().format("%Y%m%d-%H%M%S"),
        &tail[..6]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_pass_and_paths_do_not() {
        for ok in ["r1", "20261125-161530-3fa9c2", "a.b_c-d"] {
            assert_eq!(safe_name(ok), Some(ok));
        }
        for bad in [
            "", ".", "..", "../x", "a/b", "a\\b", ".hidden", "a b", "%2e%2e", "a\0b", "ü",
        ] {
            assert_eq!(safe_name(bad), None, "{bad:?}");
        }
        assert_eq!(safe_name(&"x".repeat(129)), None);
    }

    #[test]
    fn new_ids_are_safe_and_distinct() {
        let a = new_run_id("");
        let b = new_run_id("b-");
        assert!(safe_name(&a).is_some() && safe_name(&b).is_some());
        assert_ne!(a, b);
        assert!(b.starts_with("b-"));
    }
}
