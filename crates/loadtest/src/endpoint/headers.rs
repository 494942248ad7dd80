//! Request headers a person adds to a load test's requests (`-H 'Name: value'`): checked
//! before anything is sent, and shown with the values of credential headers (`Authorization`,
//! `X-Api-Key`, ...) replaced by `***` wherever they are shown.

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

/// A header that cannot be sent. Never holds the value of a credential header.
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
                let shown: String = line.chars().take(40).collect();
                let shown = if planwave_redact::header_is_secret(&shown) {
                    "***".to_owned()
                } else {
                    shown
                };
                return Err(HeaderError(format!(
                    "{shown:?}: expected NAME: VALUE (e.g. 'X-Tenant: acme')"
                )));
            };
            let (name, value) = (name.trim(), value.trim());
            let parsed = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| HeaderError(format!("{name:?} is not a header name")))?;
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
            if planwave_redact::header_is_secret(name) {
                v.set_sensitive(true);
            }
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

    /// `Name: value, ...` with credential values as `***`, for what is shown.
    pub fn shown(&self) -> String {
        self.map
            .iter()
            .map(|(name, value)| {
                let text = value.to_str().unwrap_or("(not text)");
                format!(
                    "{name}: {}",
                    if value.is_sensitive() {
                        "***"
                    } else {
                        planwave_redact::redact_header(name.as_str(), text)
                    }
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_checked_and_credentials_never_shown() {
        let h = RequestHeaders::parse(&[
            "X-Tenant: acme",
            "Authorization:  Bearer s3cret ",
            "x-tenant: beta",
        ])
        .expect("valid");
        assert_eq!(h.shown(), "x-tenant: beta, authorization: ***");
        assert!(!format!("{:?}", h.map()).contains("s3cret"));
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
        let e = RequestHeaders::parse(&["X-Api-Key: s3cret\u{1}"]).unwrap_err();
        assert!(!e.to_string().contains("s3cret"), "{e}");
    }
}
