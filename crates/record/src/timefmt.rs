//! RFC 3339 timestamps with microseconds, the one format of every run file.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serializer;

pub fn now() -> DateTime<Utc> {
    Utc::now()
}

pub fn format(ts: &DateTime<Utc>) -> String {
    ts.to_rfc3339_opts(SecondsFormat::Micros, true)
}

pub fn serialize<S: Serializer>(ts: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format(ts))
}

pub mod option {
    use chrono::{DateTime, Utc};
    use serde::Serializer;

    pub fn serialize<S: Serializer>(ts: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
        match ts {
            Some(t) => s.serialize_str(&super::format(t)),
            None => s.serialize_none(),
        }
    }
}
