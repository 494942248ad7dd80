//! When the server received each chat request, on its own clock: `GET /planwave/arrivals`.
//! A client's limiter is checked against this, as a provider would count: requests and
//! tokens in any window (a test slides its window over `at_us`), or per whole second
//! (`per_second`).
//!
//! Kept for the last [`KEPT`] requests (a long load test must not grow the server without
//! bound); `dropped` says how many older ones are gone.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::State;
use axum::response::IntoResponse;
use serde::{Deserialize, Serialize};

use crate::server::AppState;

const KEPT: usize = 100_000;

/// One chat request as the server received it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Arrival {
    /// Its number, in the order requests reached the handler (from 0).
    pub n: u64,
    /// Microseconds from the server's start to the request's body being read.
    pub at_us: u64,
    /// `x-planwave-role` (`none` when absent).
    pub role: String,
    /// The injected fault (`ok` for none).
    pub fault: String,
    /// Prompt and completion tokens of its answer, as the usage reports them; 0 until it is
    /// answered, and for a request refused or failed.
    pub tokens: u64,
}

/// Requests and tokens received within one whole second of the server's clock.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Second {
    /// Seconds from the server's start.
    pub second: u64,
    pub requests: u64,
    pub tokens: u64,
}

/// What `GET /planwave/arrivals` answers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ArrivalLog {
    pub arrivals: Vec<Arrival>,
    pub per_second: Vec<Second>,
    /// Requests older than those kept.
    pub dropped: u64,
}

pub(crate) struct Arrivals {
    started: Instant,
    log: Mutex<(VecDeque<Arrival>, u64)>,
}

impl Arrivals {
    pub(crate) fn new() -> Arrivals {
        Arrivals {
            started: Instant::now(),
            log: Mutex::new((VecDeque::new(), 0)),
        }
    }

    pub(crate) fn arrived(&self, n: u64, at: Instant, role: &str, fault: &str) {
        let at_us = at.saturating_duration_since(self.started).as_micros() as u64;
        if let Ok(mut log) = self.log.lock() {
            if log.0.len() >= KEPT {
                log.0.pop_front();
                log.1 += 1;
            }
            log.0.push_back(Arrival {
                n,
                at_us,
                role: role.to_owned(),
                fault: fault.to_owned(),
                tokens: 0,
            });
        }
    }

    /// Request `n` was answered with `tokens` (prompt and completion).
    pub(crate) fn answered(&self, n: u64, tokens: u64) {
        if let Ok(mut log) = self.log.lock()
            && let Some(a) = log.0.iter_mut().rev().find(|a| a.n == n)
        {
            a.tokens = tokens;
        }
    }

    fn snapshot(&self) -> ArrivalLog {
        let (arrivals, dropped) = match self.log.lock() {
            Ok(log) => (log.0.iter().cloned().collect::<Vec<_>>(), log.1),
            Err(_) => (Vec::new(), 0),
        };
        let mut arrivals = arrivals;
        arrivals.sort_by_key(|a| a.n);
        let mut seconds: BTreeMap<u64, Second> = BTreeMap::new();
        for a in &arrivals {
            let second = a.at_us / 1_000_000;
            let s = seconds.entry(second).or_insert(Second {
                second,
                ..Second::default()
            });
            s.requests += 1;
            s.tokens += a.tokens;
        }
        ArrivalLog {
            arrivals,
            per_second: seconds.into_values().collect(),
            dropped,
        }
    }
}

pub(crate) async fn serve(State(st): State<Arc<AppState>>) -> impl IntoResponse {
    axum::Json(st.arrivals.snapshot())
}
