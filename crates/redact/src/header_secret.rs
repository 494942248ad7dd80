//! Request headers that carry credentials (`Authorization`, `X-Api-Key`, `Cookie`, ...), so
//! whoever shows a header a person gave (a load test's `-H`) shows `***` for its value.

/// Parts of a header name that mark its value as a secret (compared without case). Erring
/// towards hiding: a harmless header that matches only loses its value in what is shown.
const SECRET_PARTS: [&str; 10] = [
    "auth",
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "cookie",
    "signature",
    "credential",
    "session",
];

/// Whether a header of this name holds a credential: its value must never be printed,
/// logged or recorded.
pub fn header_is_secret(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_PARTS.iter().any(|p| lower.contains(p))
}

/// `value` as it may be shown for a header called `name`: `***` when the header holds a
/// credential, else the value.
pub fn redact_header<'a>(name: &str, value: &'a str) -> &'a str {
    if header_is_secret(name) { "***" } else { value }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_headers_are_known_by_name() {
        for name in [
            "Authorization",
            "x-api-key",
            "Api-Key",
            "Cookie",
            "X-Auth-Token",
            "Proxy-Authorization",
            "X-Amz-Security-Token",
            "OpenAI-Session",
        ] {
            assert!(header_is_secret(name), "{name}");
        }
        for name in ["X-Tenant", "traceparent", "Accept", "OpenAI-Organization"] {
            assert!(!header_is_secret(name), "{name}");
        }
        assert_eq!(redact_header("Authorization", "Bearer s3cret"), "***");
        assert_eq!(redact_header("X-Tenant", "acme"), "acme");
    }
}
