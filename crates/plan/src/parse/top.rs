//! A plan object with its task list read lean: what [`normalize`](super::normalize) reads.
//!
//! A task list is most of a plan, and through a `serde_json::Value` tree every task object
//! costs a B-tree node (about 600 bytes for three fields), a string per key and a copy of
//! each key in the normalized task: for a million-task plan that is over a gigabyte of fresh
//! memory and most of `validate`'s time. Here a task object keeps only the fields
//! normalization knows (by their static name, unknown ones skipped unread) and a value that
//! is not an object, or a list that is not an array, only what it was not. Everything else
//! of the plan (topic, metadata, ...) stays a `Value`, as before.
//!
//! Two ways in, giving the same [`Top`]: read straight from text, or converted from a
//! `Value` already parsed (streamed plans, [`plan_from_value`](super::plan_from_value)).
//! Both keep serde_json's rule for a key given twice in one object: the last one wins.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// A plan file as most are: one JSON object from the first character (after a BOM and
/// blanks), no ``` fence anywhere, nothing after it that could start another value. For such
/// text the tolerant extractor's answer is this object (its first candidate, and no other
/// can be larger), so reading it directly gives the same plan. `None` for anything else,
/// including any JSON error: the extractor then reads the text and reports it as always.
pub(super) fn read_plain(text: &str) -> Option<Top> {
    let text = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    let body = text.trim_start();
    if !body.starts_with('{') || memchr::memmem::find(body.as_bytes(), b"```").is_some() {
        return None;
    }
    let mut stream = serde_json::Deserializer::from_str(body).into_iter::<Top>();
    let top = stream.next()?.ok()?;
    let after = &body.as_bytes()[stream.byte_offset()..];
    if memchr::memchr2(b'{', b'[', after).is_some() {
        return None;
    }
    Some(top)
}

/// Every name of a task field that normalization reads (see `normalize::classify`).
const TASK_KEYS: [&str; 26] = [
    "id",
    "step_id",
    "task_id",
    "name",
    "step_name",
    "title",
    "description",
    "dependencies",
    "depends_on",
    "deps",
    "hints",
    "tool",
    "tool_name",
    "tool_id",
    "params",
    "parameters",
    "tool_parameters",
    "expected_output",
    "expectedOutput",
    "optional",
    "retry_count",
    "retryCount",
    "retries",
    "final",
    "is_final",
    "status",
];

fn task_key(key: &str) -> Option<&'static str> {
    TASK_KEYS.iter().copied().find(|k| *k == key)
}

/// The plan object: its task lists and wrapper apart, every other key as serde_json keeps it.
#[derive(Default)]
pub(super) struct Top {
    pub rest: Map<String, Value>,
    pub tasks: List,
    pub steps: List,
    pub plan: Option<Box<Top>>,
}

/// A `tasks` or `steps` value.
#[derive(Default)]
pub(super) enum List {
    /// Absent or `null`.
    #[default]
    Absent,
    Items(Vec<Item>),
    NotArray,
}

impl List {
    pub fn present(&self) -> bool {
        !matches!(self, List::Absent)
    }
}

/// One element of a task list.
pub(super) enum Item {
    Task(RawTask),
    NotObject,
}

/// A task object's known fields, by static name, in no particular order, each at most once.
#[derive(Default)]
pub(super) struct RawTask {
    pub fields: Vec<(&'static str, Value)>,
}

impl RawTask {
    fn set(&mut self, key: &'static str, value: Value) {
        match self.fields.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.fields.push((key, value)),
        }
    }

    pub fn from_map(m: Map<String, Value>) -> RawTask {
        let mut t = RawTask::default();
        for (key, value) in m {
            if let Some(k) = task_key(&key) {
                t.set(k, value);
            }
        }
        t
    }
}

impl Top {
    pub fn from_map(m: Map<String, Value>) -> Top {
        let mut top = Top::default();
        for (key, value) in m {
            match key.as_str() {
                "tasks" => top.tasks = List::from_value(value),
                "steps" => top.steps = List::from_value(value),
                "plan" => {
                    top.plan = match value {
                        Value::Object(inner) => Some(Box::new(Top::from_map(inner))),
                        _ => None,
                    }
                }
                _ => {
                    top.rest.insert(key, value);
                }
            }
        }
        top
    }
}

impl List {
    fn from_value(v: Value) -> List {
        match v {
            Value::Null => List::Absent,
            Value::Array(items) => List::Items(
                items
                    .into_iter()
                    .map(|item| match item {
                        Value::Object(m) => Item::Task(RawTask::from_map(m)),
                        _ => Item::NotObject,
                    })
                    .collect(),
            ),
            _ => List::NotArray,
        }
    }
}

/// What a visitor gives for values of a kind it does not read.
trait Other: Sized {
    fn other() -> Self;
    /// `null`, where that differs from other kinds.
    fn null() -> Self {
        Self::other()
    }
}

impl Other for List {
    fn other() -> Self {
        List::NotArray
    }
    fn null() -> Self {
        List::Absent
    }
}

impl Other for Item {
    fn other() -> Self {
        Item::NotObject
    }
}

impl Other for Option<Box<Top>> {
    fn other() -> Self {
        None
    }
}

/// The visit methods for every kind a visitor does not read: the value is consumed and
/// stands for [`Other::other`].
macro_rules! other_kinds {
    () => {
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Other::other())
        }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Other::other())
        }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Other::other())
        }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Other::other())
        }
        fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Other::other())
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(Other::null())
        }
    };
}

fn drain_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn drain_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

impl<'de> de::Deserialize<'de> for Top {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Top, D::Error> {
        d.deserialize_map(TopVisitor)
    }
}

struct TopVisitor;

impl<'de> Visitor<'de> for TopVisitor {
    type Value = Top;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top, A::Error> {
        let mut top = Top::default();
        // A key given twice is refused before this is read (`keys::duplicate_keys`).
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "tasks" => top.tasks = map.next_value_seed(ListSeed)?,
                "steps" => top.steps = map.next_value_seed(ListSeed)?,
                "plan" => top.plan = map.next_value_seed(PlanSeed)?,
                _ => {
                    let value: Value = map.next_value()?;
                    top.rest.insert(key, value);
                }
            }
        }
        Ok(top)
    }
}

struct PlanSeed;

impl<'de> DeserializeSeed<'de> for PlanSeed {
    type Value = Option<Box<Top>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for PlanSeed {
    type Value = Option<Box<Top>>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    other_kinds!();
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        drain_seq(seq)?;
        Ok(None)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        TopVisitor.visit_map(map).map(Box::new).map(Some)
    }
}

struct ListSeed;

impl<'de> DeserializeSeed<'de> for ListSeed {
    type Value = List;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<List, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ListSeed {
    type Value = List;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    other_kinds!();
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<List, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element_seed(ItemSeed)? {
            items.push(item);
        }
        Ok(List::Items(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<List, A::Error> {
        drain_map(map)?;
        Ok(List::NotArray)
    }
}

struct ItemSeed;

impl<'de> DeserializeSeed<'de> for ItemSeed {
    type Value = Item;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Item, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ItemSeed {
    type Value = Item;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    other_kinds!();
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Item, A::Error> {
        drain_seq(seq)?;
        Ok(Item::NotObject)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item, A::Error> {
        let mut task = RawTask::default();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            match key {
                Some(k) => task.set(k, map.next_value()?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Item::Task(task))
    }
}

/// A task object's key: the static name when normalization reads it, read without a copy.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Option<&'static str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Option<&'static str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key")
    }
    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(task_key(s))
    }
}
