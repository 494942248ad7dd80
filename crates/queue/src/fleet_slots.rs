//! A batch's cap on subagents in flight held across every worker (`batch --nats
//! --max-subagents N`): a subagent of one of its jobs takes one of the batch's `N` leases,
//! keys `slots.<batch>.<i>` (`leases.rs`), before its work starts and gives it back at its
//! report. A lease is also given back when its subagent is killed (a cancelled batch, a
//! stopping worker), and expires when its worker dies, so a dead worker's subagents stop
//! counting after the lease's lifetime.
//!
//! A worker's own `--max-subagents` still holds too: its slot is taken first, so a subagent
//! waiting for the fleet holds no more than its place on this worker.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use planwave_engine::{SlotHeld, Slots, SubagentSlots};
use tokio::sync::{Mutex, Semaphore};

use crate::Queue;
use crate::leases::Leases;

/// The batches' leases this worker has opened, one watcher each (a worker runs jobs of a few
/// batches at most, so they are kept for its life).
#[derive(Default)]
pub(crate) struct FleetCaps {
    /// A lock, not a concurrent map: looking a batch up and opening its leases when missing
    /// is one step held across `Leases::open`'s await, so concurrent jobs of a batch open its
    /// leases (and their watcher) once; a map entry must not be held across an await.
    open: Mutex<HashMap<String, Arc<Leases>>>,
}

impl FleetCaps {
    /// The slots a job of `batch` runs with: this worker's own (`local`) and, with a cap,
    /// the batch's across the fleet.
    pub(crate) async fn slots(
        &self,
        q: &Queue,
        batch: &str,
        cap: Option<usize>,
        local: Option<Arc<Semaphore>>,
    ) -> crate::Result<Option<Slots>> {
        let Some(cap) = cap else {
            return Ok(local.map(|s| s as Slots));
        };
        let fleet = {
            let mut open = self.open.lock().await;
            match open.get(batch) {
                Some(l) if l.limit() == cap => l.clone(),
                // The cap travels with every job of the batch; after a resubmission with
                // another one, jobs of each share the same keys, so the larger cap holds.
                _ => {
                    let prefix = format!("slots.{batch}");
                    let l = Arc::new(Leases::open(q, prefix, cap).await?);
                    open.insert(batch.to_owned(), l.clone());
                    l
                }
            }
        };
        Ok(Some(Arc::new(FleetSlots { local, fleet })))
    }
}

struct FleetSlots {
    local: Option<Arc<Semaphore>>,
    fleet: Arc<Leases>,
}

impl SubagentSlots for FleetSlots {
    fn acquire(self: Arc<Self>) -> Pin<Box<dyn Future<Output = Option<SlotHeld>> + Send>> {
        Box::pin(async move {
            let local = match &self.local {
                Some(s) => Some(s.clone().acquire_owned().await.ok()?),
                None => None,
            };
            let lease = self.fleet.acquire().await;
            Some(Box::new((local, lease)) as SlotHeld)
        })
    }
}
