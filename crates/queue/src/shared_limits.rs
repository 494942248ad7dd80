//! The provider's limits of a worker's settings, held across every worker on the queue: the
//! one place that decides which of the shared limiters (`limits.rs`, `rates.rs`) admit the
//! model client's attempts, so a front end only hands over its settings.
//!
//! They are installed as the client's [`AttemptGate`], which the client calls before every
//! HTTP attempt (retries included) rather than around a whole call: the provider counts each
//! attempt, a failed call's too.

use std::sync::Arc;

use async_trait::async_trait;
use planwave_config::LlmChoice;
use planwave_llm::openai::{AdmittedAttempt, AttemptGate};

use crate::leases::Lease;
use crate::limits::InFlight;
use crate::rates::{RateLimits, SharedRates};
use crate::{OnWait, Queue};

/// Installs the shared limits of `llm` (an OpenAI-compatible endpoint's `max_in_flight`,
/// requests and tokens per minute) as its client's gate, so they hold across every worker
/// doing the same for the same endpoint. Nothing changes when none is set (or for the
/// simulator, which is per process). `on_wait` is told when this worker waits for the
/// shared window.
pub async fn share_provider_limits(
    q: &Queue,
    llm: &mut LlmChoice,
    on_wait: OnWait,
) -> crate::Result<()> {
    let LlmChoice::OpenAi { config, .. } = llm else {
        return Ok(());
    };
    let limits = config.limits;
    let in_flight = match limits.max_in_flight {
        Some(n) => Some(InFlight::open(q, &config.base_url, n).await?),
        None => None,
    };
    let rates = if limits.requests_per_minute.is_some() || limits.tokens_per_minute.is_some() {
        let rules = RateLimits {
            rpm: limits.requests_per_minute.map(u64::from),
            tpm: limits.tokens_per_minute,
            window: limits.period(),
            longest: config.timeouts.request,
        };
        Some(Arc::new(
            SharedRates::open(q, &config.base_url, rules, on_wait).await?,
        ))
    } else {
        None
    };
    if in_flight.is_some() || rates.is_some() {
        config.gate = Some(Arc::new(SharedGate { in_flight, rates }));
    }
    Ok(())
}

struct SharedGate {
    in_flight: Option<InFlight>,
    rates: Option<Arc<SharedRates>>,
}

#[async_trait]
impl AttemptGate for SharedGate {
    async fn admit(&self, estimate: u64) -> Box<dyn AdmittedAttempt> {
        // The window first: a lease taken and then held through a wait for the window would
        // keep another worker's ready attempt out.
        let charge = match &self.rates {
            Some(r) => r.charge(estimate).await.map(|id| (r.clone(), id)),
            None => None,
        };
        let lease = match &self.in_flight {
            Some(l) => Some(l.acquire().await),
            None => None,
        };
        Box::new(Admitted {
            charge,
            _lease: lease,
        })
    }
}

/// An admitted attempt: its charge to the shared log (settled when it ends) and its
/// in-flight lease (given back when dropped).
struct Admitted {
    charge: Option<(Arc<SharedRates>, u64)>,
    _lease: Option<Lease>,
}

#[async_trait]
impl AdmittedAttempt for Admitted {
    async fn settle(mut self: Box<Self>, used: Option<u64>) {
        let charge = self.charge.take();
        // The lease goes back before the settlement's round trips.
        drop(self);
        if let Some((rates, id)) = charge {
            rates.settle(id, used).await;
        }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        // A cancelled call: its attempt ended now, whatever it used.
        if let Some((rates, id)) = self.charge.take()
            && let Ok(rt) = tokio::runtime::Handle::try_current()
        {
            rt.spawn(async move { rates.settle(id, None).await });
        }
    }
}
