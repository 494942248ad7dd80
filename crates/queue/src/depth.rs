//! What an operator's monitoring asks of the queue: is the server there, and how many jobs
//! wait, run and came back (the workers' shared consumer's own counts).

use std::time::Duration;

use crate::names::CONSUMER;
use crate::{Queue, QueueError};

/// The shared consumer's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueDepth {
    /// Jobs not yet delivered to any worker.
    pub pending: u64,
    /// Jobs delivered and not yet acknowledged (running on a worker).
    pub in_progress: u64,
    /// Of those, the ones delivered more than once.
    pub redelivered: u64,
}

impl Queue {
    /// `Ok` when the server answers a round trip within `timeout`.
    pub async fn reachable(&self, timeout: Duration) -> Result<(), String> {
        match tokio::time::timeout(timeout, self.client.flush()).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(format!("NATS: {e}")),
            Err(_) => Err(format!(
                "NATS: no answer within {}s ({:?})",
                timeout.as_secs_f64(),
                self.client.connection_state()
            )),
        }
    }

    /// The workers' consumer's counts; all zero before any worker created it.
    pub async fn depth(&self) -> crate::Result<QueueDepth> {
        let Ok(mut consumer) = self
            .jobs
            .get_consumer::<async_nats::jetstream::consumer::pull::Config>(CONSUMER)
            .await
        else {
            return Ok(QueueDepth::default());
        };
        let info = consumer
            .info()
            .await
            .map_err(|e| QueueError::of("reading the workers' consumer", e))?;
        Ok(QueueDepth {
            pending: info.num_pending,
            in_progress: info.num_ack_pending as u64,
            redelivered: info.num_redelivered as u64,
        })
    }
}
