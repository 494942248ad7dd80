//! Subagent slots shared across runs: a batch's cap on subagents in flight. A subagent takes a
//! slot before its work starts and holds it until its report; what a slot is belongs to the
//! caller: a semaphore in one process (`batch --max-subagents`), leases shared by a fleet of
//! queue workers (`planwave-queue`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// A slot held; given back when dropped (also when the subagent is killed).
pub type SlotHeld = Box<dyn Send>;

/// Where subagents take their slots.
pub trait SubagentSlots: Send + Sync {
    /// Waits for a slot. `None`: there are none any more (closed); the subagent goes on.
    fn acquire(self: Arc<Self>) -> Pin<Box<dyn Future<Output = Option<SlotHeld>> + Send>>;
}

/// The slots of a run's request: shared by every run of a batch.
pub type Slots = Arc<dyn SubagentSlots>;

impl SubagentSlots for tokio::sync::Semaphore {
    fn acquire(self: Arc<Self>) -> Pin<Box<dyn Future<Output = Option<SlotHeld>> + Send>> {
        Box::pin(async move {
            let permit = self.acquire_owned().await.ok()?;
            Some(Box::new(permit) as SlotHeld)
        })
    }
}
