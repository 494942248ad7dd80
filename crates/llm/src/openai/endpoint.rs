//! The address of one API call built from the configured base URL. A base URL may carry a
//! query (Azure OpenAI's `…/v1?api-version=2024-10-21`): the call's path goes before it, and
//! the query is kept, never buried in the path.

/// `base` (up to and including `/v1`, perhaps with a query) with `path` appended to its path.
pub(crate) fn endpoint(base: &str, path: &str) -> String {
    // A fragment is never sent to a server; dropping it keeps it out of the path too.
    let base = base.split_once('#').map_or(base, |(b, _)| b);
    let (path_part, query) = match base.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (base, None),
    };
    let mut url = format!(
        "{}/{}",
        path_part.trim_end_matches('/'),
        path.trim_start_matches('/')
    );
    if let Some(q) = query.filter(|q| !q.is_empty()) {
        url.push('?');
        url.push_str(q);
    }
    url
}

#[cfg(test)]
mod tests {
    use super::endpoint;

    #[test]
    fn the_path_goes_before_the_query_of_the_base_url() {
        assert_eq!(
            endpoint("http://h/v1", "chat/completions"),
            "http://h/v1/chat/completions"
        );
        assert_eq!(
            endpoint("http://h/v1/", "chat/completions"),
            "http://h/v1/chat/completions"
        );
        assert_eq!(
            endpoint(
                "https://x.openai.azure.com/openai/v1?api-version=2024-10-21",
                "chat/completions"
            ),
            "https://x.openai.azure.com/openai/v1/chat/completions?api-version=2024-10-21"
        );
        assert_eq!(
            endpoint("http://h/v1/?a=1&b=2#frag", "chat/completions"),
            "http://h/v1/chat/completions?a=1&b=2"
        );
        assert_eq!(endpoint("http://h/v1?", "models"), "http://h/v1/models");
    }
}
