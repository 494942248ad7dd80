//! The provider's in-flight limit held across every worker: an HTTP attempt first takes one of
//! `n` leases of its endpoint, keys `inflight.<endpoint>.<i>` (`leases.rs`), and gives it back
//! when it ends. The requests- and tokens-per-minute limits are shared by `rates.rs`.

use crate::Queue;
use crate::leases::{Lease, Leases};

/// At most `limit` attempts in flight across every worker using the same endpoint.
pub(crate) struct InFlight {
    leases: Leases,
}

impl InFlight {
    /// The in-flight leases of the endpoint at `scope` (its base URL).
    pub(crate) async fn open(q: &Queue, scope: &str, limit: usize) -> crate::Result<InFlight> {
        let prefix = crate::connect::endpoint_key("inflight", scope);
        Ok(InFlight {
            leases: Leases::open(q, prefix, limit).await?,
        })
    }

    /// Waits for a lease; held until dropped.
    pub(crate) async fn acquire(&self) -> Lease {
        self.leases.acquire().await
    }
}
