//! One Chat Completions stream chunk read without a `serde_json::Value` tree.
//!
//! An answer streams as hundreds of small chunks, so the client's per-chunk cost decides how
//! many streams one core can read. These types read exactly the fields
//! [`StreamAnswer::apply`](super::sse::StreamAnswer::apply) uses, borrowing text from the
//! chunk when it has no escapes, and skip the rest (`id`, `object`, `created`, `role`, ...)
//! without allocating. They only accept the shapes a well-formed server sends (objects
//! where objects belong, strings and integers where those belong, no repeated keys); the
//! caller falls back to the `Value` reading for anything else, so what a chunk means never
//! depends on which reading took it.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;

#[derive(Deserialize)]
pub(super) struct Chunk<'a> {
    /// Present at all (even `null`) means the server reported an error.
    #[serde(default, deserialize_with = "present")]
    pub error: Option<Value>,
    #[serde(default, borrow)]
    pub model: Option<Text<'a>>,
    #[serde(default)]
    pub usage: Option<Value>,
    /// llama.cpp's per-request `timings` (its last chunk).
    #[serde(default)]
    pub timings: Option<Value>,
    #[serde(default, borrow)]
    pub choices: Option<Vec<Obj<Choice<'a>>>>,
}

#[derive(Deserialize)]
pub(super) struct Choice<'a> {
    #[serde(default)]
    pub index: Option<u64>,
    #[serde(default, borrow)]
    pub delta: Option<Obj<Delta<'a>>>,
    #[serde(default, borrow)]
    pub finish_reason: Option<Text<'a>>,
}

#[derive(Deserialize)]
pub(super) struct Delta<'a> {
    #[serde(default, borrow)]
    pub content: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub reasoning_content: Option<Text<'a>>,
    #[serde(default, borrow)]
    pub reasoning: Option<Text<'a>>,
    #[serde(default)]
    pub tool_calls: Option<Vec<Value>>,
}

/// A JSON string, borrowed from the chunk unless it holds escapes.
pub(super) struct Text<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Text<'a>, E> {
                Ok(Text(Cow::Owned(s.to_owned())))
            }
        }
        d.deserialize_str(V(PhantomData))
    }
}

/// `T` read from a JSON object only. A derived struct also accepts an array of its fields
/// in order, which the `Value` reading would treat as "no such fields".
pub(super) struct Obj<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Obj<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Obj<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(Obj)
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

/// `Some` for any value, `null` included (with `#[serde(default)]`, absent stays `None`).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}
