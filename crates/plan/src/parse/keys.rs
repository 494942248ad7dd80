//! Duplicate keys in a plan file. serde_json keeps the last of two equal keys silently, so a
//! plan file with two `"tasks"` would run only the second, and a task with two `"id"`s (or
//! two `"dependencies"`) the one its author may not have read: every object of the text is
//! read once more, without building its values, to refuse that.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

/// A key that occurs more than once in one object: the key, and where the object is
/// (`""` for the plan object, `tasks #2`, `tasks #2.params`; list items counted from 1).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Duplicate {
    pub key: String,
    pub place: String,
}

/// Keys that occur more than once in one object, each once, in the order of their second
/// occurrence. Only for text that is a JSON object from its first character (a plan file);
/// model output with prose around it is left to the tolerant extractor.
pub(super) fn duplicate_keys(text: &str) -> Vec<Duplicate> {
    let text = text.trim_start_matches('\u{FEFF}').trim_start();
    if !text.starts_with('{') {
        return Vec::new();
    }
    let mut dups = Vec::new();
    let mut path = Vec::new();
    let mut de = serde_json::Deserializer::from_str(text);
    // Invalid JSON is reported by the parser proper, with its line and column.
    let _ = Walk {
        path: &mut path,
        dups: &mut dups,
    }
    .deserialize(&mut de);
    dups
}

/// A step from the plan object to a value: a key (borrowed from the text unless it has
/// escapes, so a million-task plan costs no allocation per key) or a list item.
enum Seg<'de> {
    Key(Cow<'de, str>),
    Item(usize),
}

fn place(path: &[Seg<'_>]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) if out.is_empty() => out.push_str(k),
            Seg::Key(k) => {
                out.push('.');
                out.push_str(k);
            }
            Seg::Item(n) => out.push_str(&format!(" #{n}")),
        }
    }
    out
}

/// One value at the end of `path`, its objects' keys checked (serde_json bounds the
/// nesting).
struct Walk<'a, 'de> {
    path: &'a mut Vec<Seg<'de>>,
    dups: &'a mut Vec<Duplicate>,
}

impl<'de> DeserializeSeed<'de> for Walk<'_, 'de> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_, 'de> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen: HashSet<Cow<'de, str>> = HashSet::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            self.path.push(Seg::Key(key.clone()));
            map.next_value_seed(Walk {
                path: self.path,
                dups: self.dups,
            })?;
            self.path.pop();
            if !seen.insert(key.clone()) {
                let dup = Duplicate {
                    key: key.into_owned(),
                    place: place(self.path),
                };
                if !self.dups.contains(&dup) {
                    self.dups.push(dup);
                }
            }
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        for n in 1.. {
            self.path.push(Seg::Item(n));
            let more = seq
                .next_element_seed(Walk {
                    path: self.path,
                    dups: self.dups,
                })?
                .is_some();
            self.path.pop();
            if !more {
                break;
            }
        }
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// An object's key, borrowed from the text when it has no escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str) -> Vec<(String, String)> {
        duplicate_keys(text)
            .into_iter()
            .map(|d| (d.key, d.place))
            .collect()
    }

    #[test]
    fn finds_repeated_keys_in_every_object_with_their_place() {
        let pair = |k: &str, p: &str| (k.to_owned(), p.to_owned());
        assert_eq!(
            shown(
                r#"{"tasks": [{"id": 1}, {"id": 1, "id": 2, "params": {"q": 1, "q": [1, {"a": 0, "a": 1}]}}], "topic": "t", "tasks": [], "tasks": []}"#
            ),
            vec![
                pair("id", "tasks #2"),
                pair("a", "tasks #2.params.q #2"),
                pair("q", "tasks #2.params"),
                pair("tasks", ""),
            ]
        );
        assert!(shown(r#"{"tasks": [{"id": 1}, {"id": 1}]}"#).is_empty());
        assert!(shown(r#"Plan: {"a": 1, "a": 2}"#).is_empty());
    }
}
