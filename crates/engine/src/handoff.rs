//! Handing the next step of a chain to the same worker thread.
//!
//! A subagent that starts the tasks its ending made ready spawns their actors from its own
//! tokio task. Tokio puts the newest spawn in the worker's LIFO slot and runs it right after
//! the spawner, but at most three times in a row (`MAX_LIFO_POLLS_PER_TICK`); the fourth
//! spawn goes to the run queue and wakes an idle worker to steal it. Along a chain that is a
//! cross-CPU wake (an `eventfd` write and a context switch) every four or five steps: a
//! quarter of a 50,000-task chain's CPU time, and the chain hopping between workers.
//!
//! A task whose cooperative budget is spent is different: tokio moves what waits in the
//! LIFO slot to the back of the run queue without waking anyone (the `has_budget_remaining`
//! check in the worker's `run_task`), and the worker takes it next, as the first poll of a
//! new turn. So a subagent that started something spends what is left of its budget as the
//! very last thing it does, every other time: a turn then never reaches a third poll from
//! the LIFO slot, and half the spending is saved (it is ~120 budget units, a couple of
//! thousand instructions). Nothing depends on this for correctness: with another
//! scheduler it costs only the loop.

use std::cell::Cell;
use std::task::{Context, Poll, Waker};

use tokio::task::coop;

/// After a subagent that started others ends its work (call it only where its tokio task
/// awaits nothing more: a budget-aware await after it would yield), so that what it
/// spawned is queued on this worker rather than handed to another.
pub(crate) fn after_starting_others() {
    thread_local! {
        static HANDOFFS: Cell<u32> = const { Cell::new(0) };
    }
    let n = HANDOFFS.get().wrapping_add(1);
    HANDOFFS.set(n);
    if n.is_multiple_of(2) {
        spend_budget();
    }
}

/// Spends the rest of the current tokio task's cooperative budget.
fn spend_budget() {
    // A no-op waker: the poll that finds the budget spent "registers" it and nothing is
    // woken (with the task's own waker, tokio would reschedule the task as a yield).
    let mut cx = Context::from_waker(Waker::noop());
    // Bounded: outside a runtime's budget (or `unconstrained`) there is always budget.
    for _ in 0..=u8::MAX {
        match coop::poll_proceed(&mut cx) {
            Poll::Ready(restore) => restore.made_progress(),
            Poll::Pending => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::spend_budget;
    use tokio::task::coop;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_budget_is_spent_inside_a_task_and_the_call_ends_outside_one() {
        let spent = tokio::spawn(async {
            assert!(coop::has_budget_remaining());
            spend_budget();
            coop::has_budget_remaining()
        })
        .await
        .unwrap();
        assert!(!spent, "the budget was left unspent");
        // Unconstrained, or outside a runtime, there is no budget to spend: it still returns.
        coop::unconstrained(async { spend_budget() }).await;
        std::thread::spawn(spend_budget).join().unwrap();
    }
}
