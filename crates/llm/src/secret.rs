//! API keys, held so they cannot leak by accident, and scrubbing of key-like text from server
//! messages (OpenAI's 401 body echoes a masked key).

use std::fmt;

/// An API key. `Debug`, `Display` and `Serialize` print `[redacted]`; only
/// [`ApiKey::expose`] gives the value, and only the HTTP client calls it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// `None` for an empty or blank key (an empty env var means "no key").
    pub fn new(key: impl Into<String>) -> Option<ApiKey> {
        let key = key.into();
        let trimmed = key.trim();
        (!trimmed.is_empty()).then(|| ApiKey(trimmed.to_owned()))
    }

    /// The key itself, for the `Authorization` header. Never log what this returns.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([redacted])")
    }
}

impl fmt::Display for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

impl serde::Serialize for ApiKey {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("[redacted]")
    }
}

/// Removes the key and anything that looks like a (masked) key from text a server sent, so an
/// error message can be shown and recorded. Words starting with `sk-` or holding `***` are
/// replaced, as is any occurrence of the key and of its first/last 8 characters.
pub fn scrub(text: &str, key: Option<&ApiKey>) -> String {
    let mut out = text.to_owned();
    if let Some(k) = key {
        let k = k.expose();
        out = out.replace(k, "[redacted]");
        let chars: Vec<char> = k.chars().collect();
        if chars.len() >= 16 {
            let head: String = chars[..8].iter().collect();
            let tail: String = chars[chars.len() - 8..].iter().collect();
            out = out
                .replace(&head, "[redacted]")
                .replace(&tail, "[redacted]");
        }
    }
    out.split_inclusive(char::is_whitespace)
        .map(|word| {
            let bare = word.trim_end();
            let core = bare.trim_matches(|c: char| matches!(c, '"' | '\'' | '.' | ',' | ':' | ';'));
            if core.starts_with("sk-") || core.contains("***") || core.contains("****") {
                format!(
                    "{}{}",
                    bare.replace(core, "[redacted]"),
                    &word[bare.len()..]
                )
            } else {
                word.to_owned()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_never_prints() {
        let k = ApiKey::new("sk-test-1234567890abcdef").expect("key");
        assert_eq!(format!("{k}"), "[redacted]");
        assert!(!format!("{k:?}").contains("1234"));
        assert_eq!(serde_json::to_string(&k).expect("json"), "\"[redacted]\"");
        assert!(ApiKey::new("  ").is_none());
    }

    #[test]
    fn scrub_removes_key_and_masked_forms() {
        let k = ApiKey::new("pw-fake-KEY-0123456789abcdef").expect("key");
        let msg = "Incorrect API key provided: pw-fake-****cdef. Also pw-fake-KEY-0123456789abcdef and sk-abc, ok";
        let s = scrub(msg, Some(&k));
        assert!(
            !s.contains("0123456789abcdef") && !s.contains("****") && !s.contains("sk-abc"),
            "{s}"
        );
        assert!(
            s.starts_with("Incorrect API key provided: [redacted]"),
            "{s}"
        );
        assert!(s.ends_with(", ok"), "{s}");
    }
}
