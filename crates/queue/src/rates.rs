//! The provider's requests- and tokens-per-minute limits held across every worker: one
//! record per endpoint in a KV bucket, the log of the attempts of the last minute (`{at_ms,
//! done_ms, id, tokens}` each), changed only with revision-checked writes (`create` for the
//! first, `update` after), so two workers never both take the last request.
//!
//! Why a sliding log rather than a fixed window or a token bucket: a provider's limit is what
//! its 429s come from, and it counts any 60 s. A fixed window lets twice the limit through
//! across its edge, and a token bucket of the limit's size, refilling over a minute, admits
//! its full bucket plus what refills within the same 60 s. The log admits an attempt only when
//! it holds fewer than the limit's requests (and tokens), so a burst up to the limit still goes
//! at once ([`admit`], property-tested).
//!
//! Which 60 s: the provider counts a request when it receives it, some time between its
//! admission here and its end. So an entry stays in the log until a minute after the attempt
//! *ended* (`done_ms`, or, for an attempt whose worker never said, the latest it can have
//! ended: admission plus the request timeout). Then for any 60 s of the provider's arrivals,
//! the last of them to be admitted found every earlier one still in the log, and no 60 s of
//! arrivals ever holds more than the limit, whatever the network's delays. Every HTTP attempt
//! is admitted (the client calls the gate before each, `shared_limits.rs`), a retry after a
//! 429, a 5xx or a timeout included, and a failed one keeps its charge: the provider counted
//! it.
//!
//! Tokens are charged with the same estimate as the client's limiter (prompt and the
//! completion's bound) and settled with the response's usage; the tokens of any 60 s hold
//! when the estimates are not below what the provider counts. A record holds at most the
//! limit's entries (requests per minute are hundreds to thousands), one compare-and-swap per
//! admission and one per settlement.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_nats::jetstream::kv;
use serde::{Deserialize, Serialize};

use crate::Queue;

const BUCKET: &str = "planwave_rates";

/// Called with a line when this worker waits for the shared window (shown on its stderr).
pub type OnWait = Arc<dyn Fn(&str) + Send + Sync>;

/// One admitted attempt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    at_ms: u64,
    /// When the attempt was over, as its worker saw it; `None` while it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    done_ms: Option<u64>,
    /// Which charge it is, so it can be settled.
    id: u64,
    tokens: u64,
}

/// The attempts of the last window, in admission order.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Log {
    entries: Vec<Entry>,
}

/// The limits and how long things last, in ms.
#[derive(Clone, Copy, Debug)]
struct Rules {
    rpm: Option<u64>,
    tpm: Option<u64>,
    window: u64,
    /// The longest an attempt can run (the client's request timeout).
    longest: u64,
}

impl Rules {
    /// Until when `e` counts: a window after its attempt ended, or could have.
    fn leaves(&self, e: &Entry) -> u64 {
        e.done_ms.unwrap_or(e.at_ms + self.longest) + self.window
    }

    /// When `e` may leave, for a waiter's patience: a running attempt may end any moment.
    fn may_leave(&self, e: &Entry, now: u64) -> u64 {
        e.done_ms.unwrap_or(now) + self.window
    }
}

/// Whether an attempt of `tokens` may go at `now` after what `log` holds; `Err(ms)` is when
/// to look again (when the entry in the way may leave). Entries that left are dropped first.
fn admit(log: &mut Log, now: u64, rules: &Rules, tokens: u64) -> Result<(), u64> {
    log.entries.retain(|e| rules.leaves(e) > now);
    let mut leaving: Vec<(u64, u64)> = log
        .entries
        .iter()
        .map(|e| (rules.may_leave(e, now), e.tokens))
        .collect();
    leaving.sort_unstable();
    if let Some(rpm) = rules.rpm {
        let rpm = rpm.max(1) as usize;
        if leaving.len() >= rpm {
            // The entry that must leave for one more to fit.
            return Err(leaving[leaving.len() - rpm].0);
        }
    }
    if let Some(tpm) = rules.tpm {
        let tpm = tpm.max(1);
        let mut used: u64 = leaving.iter().map(|(_, t)| t).sum();
        // One attempt larger than the whole limit still goes alone in an empty window.
        if used > 0 && used + tokens > tpm {
            for (at, t) in &leaving {
                used -= t;
                if used + tokens <= tpm || used == 0 {
                    return Err(*at);
                }
            }
        }
    }
    Ok(())
}

/// The requests- and tokens-per-minute log of one endpoint.
pub(crate) struct SharedRates {
    kv: kv::Store,
    key: String,
    rules: Rules,
    on_wait: OnWait,
}

/// What [`SharedRates::open`] needs.
pub(crate) struct RateLimits {
    pub rpm: Option<u64>,
    pub tpm: Option<u64>,
    pub window: Duration,
    /// The client's request timeout: the longest one attempt can take.
    pub longest: Duration,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl SharedRates {
    /// The log of the endpoint at `scope` (its base URL).
    pub(crate) async fn open(
        q: &Queue,
        scope: &str,
        limits: RateLimits,
        on_wait: OnWait,
    ) -> crate::Result<SharedRates> {
        let rules = Rules {
            rpm: limits.rpm,
            tpm: limits.tpm,
            window: limits.window.as_millis() as u64,
            longest: limits.longest.as_millis() as u64,
        };
        // A log nobody touched for this long is empty anyway.
        let idle = Duration::from_millis(rules.window + rules.longest) * 2;
        let kv = crate::connect::shared_bucket(q, BUCKET, idle, "opening the rate bucket").await?;
        Ok(SharedRates {
            kv,
            key: crate::connect::endpoint_key("rate", scope),
            rules,
            on_wait,
        })
    }

    /// The log and its revision (`None`: no record yet); `None` when the server is away.
    async fn read(&self) -> Option<(Log, Option<u64>)> {
        match self.kv.entry(&self.key).await {
            Ok(Some(e)) if e.operation == kv::Operation::Put => {
                let log = serde_json::from_slice(&e.value).unwrap_or_default();
                Some((log, Some(e.revision)))
            }
            Ok(_) => Some((Log::default(), None)),
            Err(_) => None,
        }
    }

    async fn write(&self, log: &Log, revision: Option<u64>) -> bool {
        let body: bytes::Bytes = serde_json::to_vec(log).unwrap_or_default().into();
        match revision {
            Some(r) => self.kv.update(&self.key, body, r).await.is_ok(),
            None => self.kv.create(&self.key, body).await.is_ok(),
        }
    }

    /// Charges one attempt of `tokens`, waiting while the window is full. Returns the
    /// charge's id (`None`: the server is away, the client's own limiter holds alone).
    pub(crate) async fn charge(&self, tokens: u64) -> Option<u64> {
        let tokens = self.rules.tpm.map_or(tokens, |cap| tokens.min(cap));
        let id = rand_id();
        let mut told = false;
        loop {
            let (mut log, revision) = self.read().await?;
            let now = now_ms();
            if let Err(until) = admit(&mut log, now, &self.rules, tokens) {
                if !told {
                    told = true;
                    self.tell_waiting(&log, until.saturating_sub(now));
                }
                // Until the entry in the way may leave, bounded so a log another worker
                // changed (an attempt settled) is seen within a second.
                let pause = Duration::from_millis(until.saturating_sub(now).clamp(10, 1000));
                tokio::time::sleep(pause).await;
                continue;
            }
            log.entries.push(Entry {
                at_ms: now,
                done_ms: None,
                id,
                tokens,
            });
            if self.write(&log, revision).await {
                return Some(id);
            }
            // Another worker wrote first: look again.
        }
    }

    fn tell_waiting(&self, log: &Log, wait_ms: u64) {
        let used: u64 = log.entries.iter().map(|e| e.tokens).sum();
        let window = match self.rules.window {
            60_000 => "minute".to_owned(),
            w => format!("{}s", w as f64 / 1000.0),
        };
        (self.on_wait)(&format!(
            "worker: shared rate limit reached ({} requests, {used} tokens in the last \
             {window} across workers); waiting {}s",
            log.entries.len(),
            wait_ms.div_ceil(1000)
        ));
    }

    /// The attempt of charge `id` is over: its entry now leaves a window after this moment,
    /// its tokens corrected with what the call used (`None`: the estimate stands).
    pub(crate) async fn settle(&self, id: u64, used: Option<u64>) {
        // Contended by every worker's admissions: patient, but not without end (an entry
        // never settled leaves at its latest end anyway).
        for _ in 0..100 {
            let Some((mut log, Some(revision))) = self.read().await else {
                return;
            };
            let Some(e) = log.entries.iter_mut().find(|e| e.id == id) else {
                return; // out of the window already
            };
            // One ms on: the provider received the request before this moment, and times
            // are whole ms.
            e.done_ms = Some(now_ms() + 1);
            if let (Some(used), Some(_)) = (used, self.rules.tpm) {
                e.tokens = used.max(1);
            }
            if self.write(&log, Some(revision)).await {
                return;
            }
        }
    }
}

fn rand_id() -> u64 {
    let b = *uuid::Uuid::new_v4().as_bytes();
    u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
}

#[cfg(test)]
mod tests;
