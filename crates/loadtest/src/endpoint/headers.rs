//! Request headers a person adds to a load test's requests (`-H 'Name: value'`): checked
//! before anything is sent, and shown by their names only. No value is ever shown, whatever
//! its header's name: a list of credential names misses the next one (`X-Pass`), and an
//! argument that is not a header at all may be a key pasted without its name, so an error
//! about one shows none of it.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

/// Headers the HTTP client sets itself from the request: replacing them would break it.
const RESERVED: [&str; 6] = [
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "upgrade",
];

/// A header that cannot be sent. Never holds a header's value, nor a name that is not one.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("{0}")]
pub struct HeaderError(pub String);

/// The headers given, in order, checked.
#[derive(Clone, Debug, Default)]
pub struct RequestHeaders {
    map: HeaderMap,
}

impl RequestHeaders {
    /// `Name: value` lines, each checked: a valid name, a value without control
    /// characters, not one the client sets itself. A later header of the same name replaces
    /// an earlier one.
    pub fn parse<S: AsRef<str>>(lines: &[S]) -> Result<RequestHeaders, HeaderError> {
        let mut map = HeaderMap::new();
        for line in lines {
            let line = line.as_ref();
            let Some((name, value)) = line.split_once(':') else {
                return Err(HeaderError(
                    "expected NAME: VALUE (e.g. 'X-Tenant: acme'); the argument has no ':' \
                     (not shown: it may be a secret)"
                        .into(),
                ));
            };
            let (name, value) = (name.trim(), value.trim());
            let parsed = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                HeaderError(
                    "the text before ':' is not a header name (letters, digits and \
                     !#$%&'*+-.^_`|~ only; not shown: it may be a secret)"
                        .into(),
                )
            })?;
            if RESERVED.contains(&parsed.as_str()) {
                return Err(HeaderError(format!(
                    "{name}: the HTTP client sets this header itself"
                )));
            }
            let mut v = HeaderValue::from_str(value).map_err(|_| {
                HeaderError(format!(
                    "{name}: the value has characters a header cannot hold"
                ))
            })?;
            // Hidden from every Debug print of a request or a client's settings.
            v.set_sensitive(true);
            map.insert(parsed, v);
        }
        Ok(RequestHeaders { map })
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The headers to send.
    pub fn map(&self) -> &HeaderMap {
        &self.map
    }

    /// The headers' names (`x-tenant, authorization`), what is shown of them.
    pub fn shown(&self) -> String {
        self.map
            .keys()
            .map(HeaderName::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_checked_and_values_never_shown() {
        let h = RequestHeaders::parse(&[
            "X-Tenant: acme",
            "Authorization:  Bearer s3cret ",
            "x-tenant: beta",
            "X-Pass: p4ss",
        ])
        .expect("valid");
        assert_eq!(h.shown(), "x-tenant, authorization, x-pass");
        let debug = format!("{:?}", h.map());
        assert!(!["s3cret", "beta", "p4ss"].iter().any(|v| debug.contains(v)));
        assert_eq!(h.map()["authorization"], "Bearer s3cret");
        for (bad, says) in [
            ("no colon", "expected NAME: VALUE"),
            ("Bad Name: x", "is not a header name"),
            ("Content-Length: 3", "sets this header itself"),
            ("X-A: one\ntwo", "cannot hold"),
        ] {
            let e = RequestHeaders::parse(&[bad]).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
        for bad in [
            "X-Api-Key: s3cret\u{1}",
            "sk-live-s3cret",
            "Bearer s3cret: x",
        ] {
            let e = RequestHeaders::parse(&[bad]).unwrap_err();
            assert!(!e.to_string().contains("s3cret"), "{e}");
        }
    }
}
