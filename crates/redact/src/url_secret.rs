//! Credentials in URLs (`http://user:SECRET@host/v1`, `http://sk-KEY@host/v1`,
//! `?api_key=...`, `?X-Amz-Signature=...`) kept out of everything planwave shows or records:
//! the request still goes to the URL as given, but what is printed, logged, traced or written
//! to a run file says `***` where a secret may be. One place for model, MCP, OTLP and any
//! other URL.
//!
//! What is hidden errs towards hiding: the whole user part (a user name alone is often the
//! key), and the value of every query or fragment parameter whose name is not on
//! [`HARMLESS_PARAMS`] (a parameter with no value, which may be a bare token, entirely). A
//! list of secret names would miss the next provider's (`code`, `sig`, `X-Amz-Signature`,
//! `X-Goog-Credential`, ...); a harmless parameter only loses its value in what is shown.
//! The URL is rewritten as text, so everything else stays exactly as given.

use std::borrow::Cow;

/// Query parameters whose values are shown (compared without case): API versions and
/// request shapes, never a credential.
pub const HARMLESS_PARAMS: [&str; 12] = [
    "api-version",
    "api_version",
    "version",
    "v",
    "model",
    "deployment",
    "region",
    "format",
    "stream",
    "timeout",
    "limit",
    "lang",
];

const MASK: &str = "***";

/// `url` with its user part and every query (and fragment) value not known to be harmless
/// replaced by `***`.
pub fn redact_url(url: &str) -> Cow<'_, str> {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return Cow::Borrowed(url);
    };
    let authority_end = url[scheme_end..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| scheme_end + i);
    let mut out = String::with_capacity(url.len());
    out.push_str(&url[..scheme_end]);
    let authority = &url[scheme_end..authority_end];
    match authority.rfind('@') {
        Some(at) => {
            out.push_str(MASK);
            out.push_str(&authority[at..]);
        }
        None => out.push_str(authority),
    }
    let rest = &url[authority_end..];
    let (before_fragment, fragment) = match rest.find('#') {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    match before_fragment.find('?') {
        Some(q) => {
            out.push_str(&before_fragment[..=q]);
            redact_params(&before_fragment[q + 1..], &mut out);
        }
        None => out.push_str(before_fragment),
    }
    if let Some(fragment) = fragment {
        out.push('#');
        redact_params(fragment, &mut out);
    }
    if out == url {
        Cow::Borrowed(url)
    } else {
        Cow::Owned(out)
    }
}

/// `a=1&b=2` onto `out`, each value whose name is not harmless as `***` (a part with no `=`
/// entirely, unless it is a harmless name).
fn redact_params(params: &str, out: &mut String) {
    for (i, part) in params.split('&').enumerate() {
        if i > 0 {
            out.push('&');
        }
        let (name, value) = match part.split_once('=') {
            Some((n, v)) => (n, Some(v)),
            None => (part, None),
        };
        let harmless = HARMLESS_PARAMS.iter().any(|h| name.eq_ignore_ascii_case(h));
        match value {
            _ if harmless => out.push_str(part),
            Some("") => out.push_str(part),
            Some(_) => {
                out.push_str(name);
                out.push('=');
                out.push_str(MASK);
            }
            None if part.is_empty() => {}
            None => out.push_str(MASK),
        }
    }
}

/// Whether `url` carries something [`redact_url`] would hide.
pub fn url_has_secret(url: &str) -> bool {
    url.contains("://") && matches!(redact_url(url), Cow::Owned(_))
}

/// `text` (an error message, a command line) with every URL in it redacted.
pub fn redact_urls_in(text: &str) -> Cow<'_, str> {
    if !text.contains("://") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || "+.-".contains(c)))
            .map_or(0, |i| i + 1);
        let end = rest[at..]
            .find(|c: char| c.is_whitespace() || "\"'<>()[]{},".contains(c))
            .map_or(rest.len(), |i| at + i);
        out.push_str(&rest[..start]);
        out.push_str(&redact_url(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_part_and_values_not_known_harmless_are_masked() {
        for (url, shown) in [
            ("http://user:S3CRET@host:8080/v1", "http://***@host:8080/v1"),
            ("http://sk-S3CRET@host/v1", "http://***@host/v1"),
            (
                "https://gw.example/v1?api_key=S3CRET&region=eu",
                "https://gw.example/v1?api_key=***&region=eu",
            ),
            (
                "https://b.s3.example/o?X-Amz-Signature=S1G&code=C0DE&api-version=2024-10-21",
                "https://b.s3.example/o?X-Amz-Signature=***&code=***&api-version=2024-10-21",
            ),
            (
                "https://h/cb#access_token=T0K&state=x",
                "https://h/cb#access_token=***&state=***",
            ),
            ("https://h/v1?S3CRETTOKEN&stream", "https://h/v1?***&stream"),
            ("https://h/v1?a=&&b", "https://h/v1?a=&&***"),
            ("nats://u:S3CRET@[::1", "nats://***@[::1"),
            ("http://h/@scope/pkg", "http://h/@scope/pkg"),
            ("http://127.0.0.1:9/v1", "http://127.0.0.1:9/v1"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
        assert!(url_has_secret("http://u:p@h/") && url_has_secret("http://u@h/"));
        assert!(url_has_secret("http://h/?code=1") && !url_has_secret("http://h/v1?v=2"));
        assert!(!url_has_secret("host:1/?key=1"), "not a URL");
    }

    #[test]
    fn urls_inside_text_are_found() {
        assert_eq!(
            redact_urls_in("error sending request for url (http://a:S3CRET@h/v1/chat): refused"),
            "error sending request for url (http://***@h/v1/chat): refused"
        );
        assert_eq!(
            redact_urls_in("--llm-base-url=https://sk-S3CRET@h/v1?code=X --model m"),
            "--llm-base-url=https://***@h/v1?code=*** --model m"
        );
    }
}
