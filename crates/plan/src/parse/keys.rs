//! Duplicate keys in the plan object. serde_json keeps the last of two `"tasks"` silently,
//! so a plan file with two task lists would run only the second: the keys of the top-level
//! object are read once more, without building their values, to refuse that.

use std::collections::HashSet;
use std::fmt;

use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};

/// Top-level keys that occur more than once, in order of their second occurrence. Only for
/// text that is a JSON object from its first character (a plan file); model output with
/// prose around it is left to the tolerant extractor.
pub(super) fn duplicate_top_level_keys(text: &str) -> Vec<String> {
    let text = text.trim_start_matches('\u{FEFF}').trim_start();
    if !text.starts_with('{') {
        return Vec::new();
    }
    let mut de = serde_json::Deserializer::from_str(text);
    de.deserialize_map(Keys).unwrap_or_default()
}

struct Keys;

impl<'de> Visitor<'de> for Keys {
    type Value = Vec<String>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Vec<String>, A::Error> {
        let mut seen = HashSet::new();
        let mut dups = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            map.next_value::<IgnoredAny>()?;
            if !seen.insert(key.clone()) && !dups.contains(&key) {
                dups.push(key);
            }
        }
        Ok(dups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_repeated_top_level_keys_only() {
        assert_eq!(
            duplicate_top_level_keys(
                r#"{"tasks": [{"id": 1, "id": 2}], "topic": "t", "tasks": [], "tasks": []}"#
            ),
            vec!["tasks".to_owned()]
        );
        assert!(duplicate_top_level_keys(r#"{"tasks": []}"#).is_empty());
        assert!(duplicate_top_level_keys(r#"Plan: {"a": 1, "a": 2}"#).is_empty());
    }
}
