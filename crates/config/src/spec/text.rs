//! How the spec's values are written in JSON (a request body, `invocation.json`, a queue
//! message): as a person would write the flag. A duration is a number of seconds or a string
//! with a unit (`"90s"`); a list is an array or one comma-separated string (`"1,2"`, as the
//! flag takes it); `meta` is an object of strings.

use std::fmt::Display;
use std::str::FromStr;
use std::time::Duration;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serializer};
use serde_json::Value;

/// `Option<Duration>` as `"1.5s"`; read back from seconds or any text the flag takes.
pub mod duration {
    use super::*;

    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => s.serialize_str(&format!("{}s", d.as_secs_f64())),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        let text = match Option::<Value>::deserialize(d)? {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Number(n)) => n.to_string(),
            Some(Value::String(s)) => s,
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "expected a number of seconds or a duration such as \"90s\", not {other}"
                )));
            }
        };
        crate::parse_positive_duration(&text)
            .map(Some)
            .map_err(D::Error::custom)
    }
}

/// A JSON number checked by its flag's parser (`parse`, one of [`crate::parse_millis`] and
/// its siblings), so a body refuses what the flag refuses. `None` for null.
fn number<'de, D: Deserializer<'de>>(
    d: D,
    parse: fn(&str) -> Result<f64, String>,
) -> Result<Option<f64>, D::Error> {
    match Option::<f64>::deserialize(d)? {
        None => Ok(None),
        // `Debug` writes large and small values with an exponent (`1e25`), as people do.
        Some(x) => parse(&format!("{x:?}")).map(Some).map_err(D::Error::custom),
    }
}

fn required<'de, D: Deserializer<'de>>(
    d: D,
    parse: fn(&str) -> Result<f64, String>,
) -> Result<f64, D::Error> {
    number(d, parse)?.ok_or_else(|| D::Error::custom("expected a number, not null"))
}

/// An optional amount of money, checked by [`crate::parse_cost`].
pub fn some_cost<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    number(d, crate::parse_cost)
}

/// Milliseconds of latency, checked by [`crate::parse_millis`].
pub fn millis<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    required(d, crate::parse_millis)
}

/// An optional [`millis`].
pub fn some_millis<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    number(d, crate::parse_millis)
}

/// A lognormal sigma, checked by [`crate::parse_sigma`].
pub fn sigma<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    required(d, crate::parse_sigma)
}

/// An optional [`sigma`].
pub fn some_sigma<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    number(d, crate::parse_sigma)
}

/// One item of a list as its flag would read it.
fn item<T: FromStr, E: serde::de::Error>(v: &Value) -> Result<T, E>
where
    T::Err: Display,
{
    let text = match v {
        Value::String(s) => s.trim().to_owned(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => {
            return Err(E::custom(format!(
                "list items are strings, numbers or booleans, not {other}"
            )));
        }
    };
    text.parse::<T>()
        .map_err(|e| E::custom(format!("{text:?}: {e}")))
}

/// A list: an array, or one string split at commas as the flag splits it.
pub fn list<'de, D: Deserializer<'de>, T: FromStr>(d: D) -> Result<Vec<T>, D::Error>
where
    T::Err: Display,
{
    match Value::deserialize(d)? {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items.iter().map(item).collect(),
        Value::String(s) => s
            .split(',')
            .map(|p| item(&Value::String(p.to_owned())))
            .collect(),
        scalar @ (Value::Number(_) | Value::Bool(_)) => Ok(vec![item(&scalar)?]),
        Value::Object(_) => Err(D::Error::custom("expected a list, not an object")),
    }
}

/// `--meta K=V` pairs as the object `{"K": "V"}` (a later key wins, as on the command line).
pub mod meta {
    use super::*;
    use serde::ser::SerializeMap;

    pub fn serialize<S: Serializer>(pairs: &[(String, String)], s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(pairs.len()))?;
        for (k, v) in pairs {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, String)>, D::Error> {
        let map = serde_json::Map::<String, Value>::deserialize(d)?;
        map.into_iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                crate::spec::parse_meta(&format!("{k}={v}")).map_err(D::Error::custom)
            })
            .collect()
    }
}

/// A value parser that checks the text parses as `T` and keeps the text as given (the spec
/// records what the person wrote; the simulator parses it again when it is configured).
pub fn checked<T: FromStr>(text: &str) -> Result<String, String>
where
    T::Err: Display,
{
    text.parse::<T>().map_err(|e| e.to_string())?;
    Ok(text.to_owned())
}

/// A list whose items must parse as `T`, kept as given.
pub fn list_of<'de, T: std::str::FromStr, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Vec<String>, D::Error>
where
    T::Err: std::fmt::Display,
{
    let items: Vec<String> = list(d)?;
    for i in &items {
        checked::<T>(i).map_err(|e| serde::de::Error::custom(format!("{i:?}: {e}")))?;
    }
    Ok(items)
}

pub fn token_rate<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let text = match serde_json::Value::deserialize(d)? {
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::String(s) => s,
        other => {
            return Err(serde::de::Error::custom(format!(
                "expected a rate such as 40 or \"planner=40,subagent=20\", not {other}"
            )));
        }
    };
    check_rate(&text).map_err(serde::de::Error::custom)
}

/// A token rate as `planwave_sim::TokenRate::parse` takes it, kept as given.
pub fn check_rate(text: &str) -> Result<String, String> {
    planwave_sim::TokenRate::parse(text)?;
    Ok(text.to_owned())
}

pub fn step_strategy<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = Option::<String>::deserialize(d)?;
    match s.as_deref() {
        None | Some("retry_step" | "replan_from_failure" | "complete_replan") => Ok(s),
        Some(other) => Err(serde::de::Error::custom(format!(
            "{other:?} is not retry_step, replan_from_failure or complete_replan"
        ))),
    }
}

/// An optional count of at least one, checked by [`crate::parse_count`] as the flag is.
pub fn count<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr + Default + PartialEq,
{
    match Option::<u64>::deserialize(d)? {
        None => Ok(None),
        Some(n) => crate::parse_count(&n.to_string())
            .map(Some)
            .map_err(D::Error::custom),
    }
}

/// The names of the options a group sets to other than its default (as written in JSON),
/// for rules about which options go together (`batch_poll` only with `batch_api`).
pub fn changed<T: serde::Serialize + Default>(group: &T) -> Vec<String> {
    let as_map = |v: &T| match serde_json::to_value(v) {
        Ok(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let (given, default) = (as_map(group), as_map(&T::default()));
    given
        .into_iter()
        .filter(|(k, v)| default.get(k) != Some(v))
        .map(|(k, _)| k)
        .collect()
}

/// `T` read from a JSON object of options, or every problem with them, one per option and
/// each prefixed with `prefix` and the option's name (`options.seed: ...`): each option is
/// also read on its own, so one bad option does not hide the next.
pub fn every_problem<T: serde::de::DeserializeOwned>(
    options: &serde_json::Map<String, Value>,
    prefix: &str,
) -> Result<T, Vec<String>> {
    let problems: Vec<String> = options
        .iter()
        .filter_map(|(name, value)| {
            let one = serde_json::Map::from_iter([(name.clone(), value.clone())]);
            serde_json::from_value::<T>(Value::Object(one))
                .err()
                .map(|e| format!("{prefix}{name}: {e}"))
        })
        .collect();
    if !problems.is_empty() {
        return Err(problems);
    }
    serde_json::from_value(Value::Object(options.clone())).map_err(|e| vec![e.to_string()])
}
