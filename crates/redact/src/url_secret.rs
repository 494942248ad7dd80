//! Credentials in URLs (`http://user:SECRET@host/v1`, `?api_key=...`) kept out of everything
//! planwave shows or records: the request still goes to the URL as given, but what is printed,
//! logged, traced or written to a run file says `***` where the secret was. One place for
//! model, MCP, OTLP and any other URL.

use std::borrow::Cow;

/// Query parameters whose values are secrets (compared without case).
const SECRET_PARAMS: [&str; 10] = [
    "api_key",
    "apikey",
    "key",
    "token",
    "access_token",
    "auth",
    "password",
    "secret",
    "sig",
    "signature",
];

const MASK: &str = "***";

/// `url` with its password and secret query values replaced by `***`.
pub fn redact_url(url: &str) -> Cow<'_, str> {
    let Ok(mut parsed) = ::url::Url::parse(url) else {
        return redact_userinfo(url);
    };
    let mut changed = false;
    if parsed.password().is_some() {
        let _ = parsed.set_password(Some(MASK));
        changed = true;
    }
    if parsed.query().is_some() {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(k, v)| {
                let secret = SECRET_PARAMS.iter().any(|s| k.eq_ignore_ascii_case(s));
                changed |= secret;
                (
                    k.into_owned(),
                    if secret { MASK.into() } else { v.into_owned() },
                )
            })
            .collect();
        if changed {
            parsed.query_pairs_mut().clear().extend_pairs(pairs);
        }
    }
    if changed {
        Cow::Owned(parsed.as_str().replace("%2A%2A%2A", MASK))
    } else {
        Cow::Borrowed(url)
    }
}

/// Whether `url` carries a credential [`redact_url`] would hide.
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

/// For text that is not a parsable URL: `scheme://user:pass@` loses `pass`.
fn redact_userinfo(url: &str) -> Cow<'_, str> {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return Cow::Borrowed(url);
    };
    let authority_end = url[scheme_end..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |i| scheme_end + i);
    let authority = &url[scheme_end..authority_end];
    match (authority.rfind('@'), authority.find(':')) {
        (Some(at), Some(colon)) if colon < at => Cow::Owned(format!(
            "{}{}{MASK}{}",
            &url[..scheme_end],
            &authority[..=colon],
            &url[scheme_end + at..]
        )),
        _ => Cow::Borrowed(url),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_and_secret_parameters_are_masked() {
        assert_eq!(
            redact_url("http://user:S3CRET@host:8080/v1"),
            "http://user:***@host:8080/v1"
        );
        assert_eq!(
            redact_url("https://gw.example/v1?api_key=S3CRET&region=eu"),
            "https://gw.example/v1?api_key=***&region=eu"
        );
        assert_eq!(redact_url("http://127.0.0.1:9/v1"), "http://127.0.0.1:9/v1");
        assert_eq!(redact_url("nats://u:S3CRET@[::1"), "nats://u:***@[::1");
        assert!(url_has_secret("http://u:p@h/") && !url_has_secret("http://u@h/"));
    }

    #[test]
    fn urls_inside_text_are_found() {
        assert_eq!(
            redact_urls_in("error sending request for url (http://a:S3CRET@h/v1/chat): refused"),
            "error sending request for url (http://a:***@h/v1/chat): refused"
        );
        assert_eq!(
            redact_urls_in("--llm-base-url=https://a:S3CRET@h/v1 --model m"),
            "--llm-base-url=https://a:***@h/v1 --model m"
        );
    }
}
