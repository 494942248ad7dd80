//! The server's own concurrency, learned once: llama.cpp serves `/props` with `total_slots`,
//! the requests it works on at once. It holds a request beyond them without sending response
//! headers until a slot frees, so a client that sends more than that sees a queue as a
//! stall (`no response headers within` the idle timeout) and fails tasks that were only
//! waiting their turn. With no in-flight cap configured, the client keeps its requests to
//! the server's slots instead, and the wait happens here, where no stall timer runs.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{OnceCell, OwnedSemaphorePermit, Semaphore};

pub(crate) struct ServerSlots {
    /// `None`: an in-flight cap is configured, nothing to learn.
    url: Option<String>,
    cap: OnceCell<Option<Arc<Semaphore>>>,
}

impl ServerSlots {
    /// For a server at `base_url` (`…/v1`); `learn` false when the in-flight cap is set.
    pub(crate) fn new(base_url: &str, learn: bool) -> ServerSlots {
        ServerSlots {
            url: learn.then(|| props_url(base_url)),
            cap: OnceCell::new(),
        }
    }

    /// A slot of the server, waited for when all are taken; `None` when the server says
    /// nothing of its slots (the first call asks it, once, within `timeout`).
    pub(crate) async fn acquire(
        &self,
        http: &reqwest::Client,
        timeout: Duration,
    ) -> Option<OwnedSemaphorePermit> {
        let url = self.url.as_deref()?;
        let cap = self
            .cap
            .get_or_init(|| async {
                let slots = probe(http, url, timeout).await?;
                tracing::debug!(target: "planwave::llm", slots, url, "requests in flight kept to the server's slots");
                Some(Arc::new(Semaphore::new(slots)))
            })
            .await
            .clone()?;
        cap.acquire_owned().await.ok()
    }
}

/// `total_slots` from `GET url`, if the server answers it.
async fn probe(http: &reqwest::Client, url: &str, timeout: Duration) -> Option<usize> {
    let resp = tokio::time::timeout(timeout, http.get(url).send())
        .await
        .ok()?
        .ok()?;
    if !resp.status().is_success() {
        return None;
    }
    let body = tokio::time::timeout(timeout, resp.bytes())
        .await
        .ok()?
        .ok()?;
    slots_in(&body)
}

/// `total_slots` of a `/props` body: a whole number of at least one.
fn slots_in(body: &[u8]) -> Option<usize> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let n = v.get("total_slots")?.as_u64()?;
    (n >= 1).then(|| usize::try_from(n).ok()).flatten()
}

/// llama.cpp serves `/props` beside `/v1`, at the server's root.
fn props_url(base_url: &str) -> String {
    let base = base_url.split_once(['?', '#']).map_or(base_url, |(b, _)| b);
    let root = base.trim_end_matches('/');
    let root = root.strip_suffix("/v1").unwrap_or(root);
    format!("{root}/props")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn props_sit_at_the_root_and_give_the_slots() {
        assert_eq!(props_url("http://h:8080/v1"), "http://h:8080/props");
        assert_eq!(props_url("http://h:8080/v1/"), "http://h:8080/props");
        assert_eq!(props_url("http://h/api?x=1"), "http://h/api/props");
        assert_eq!(slots_in(br#"{"total_slots": 4}"#), Some(4));
        assert_eq!(slots_in(br#"{"total_slots": 0}"#), None);
        assert_eq!(slots_in(br#"{"detail": "Not Found"}"#), None);
        assert_eq!(slots_in(b"<html>"), None);
    }
}
