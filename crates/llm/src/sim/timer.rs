//! A sub-millisecond timer for simulated latency.
//!
//! tokio's timer wheel has a 1 ms tick and rounds every deadline up to the next tick, so a
//! simulated 100 ms call took 100.5–101.5 ms: along a 30-task chain that is a 1–1.5 % error,
//! as large as the engine overhead a load test tries to measure. One thread keeps the
//! deadlines in a heap and sleeps on a condition variable until the earliest (the kernel wakes
//! it within tens of microseconds), then completes the waiting futures.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// Waits until `deadline` with sub-millisecond precision.
///
/// Real time, not tokio's clock: a paused tokio clock does not advance simulated calls.
pub async fn sleep_until(deadline: Instant) {
    if deadline <= Instant::now() {
        return;
    }
    let Some(timer) = timer() else {
        // No timer thread (it could not be spawned): tokio's is coarser but still correct.
        tokio::time::sleep_until(deadline.into()).await;
        return;
    };
    let (tx, rx) = oneshot::channel();
    timer.add(deadline, tx);
    // The sender is only dropped after firing; a closed channel means the same thing.
    let _ = rx.await;
}

/// Waits `delay` from `start` (the moment the call began, so work before the wait does not
/// lengthen it).
pub async fn sleep_from(start: Instant, delay: Duration) {
    sleep_until(start + delay).await;
}

struct Entry {
    deadline: Instant,
    seq: u64,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.deadline, self.seq) == (o.deadline, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.deadline, self.seq).cmp(&(o.deadline, o.seq))
    }
}

#[derive(Default)]
struct State {
    heap: BinaryHeap<Reverse<Entry>>,
    wakers: std::collections::HashMap<u64, oneshot::Sender<()>>,
    next: u64,
}

struct Timer {
    state: Mutex<State>,
    wake: Condvar,
}

fn timer() -> Option<&'static Timer> {
    static TIMER: OnceLock<Option<&'static Timer>> = OnceLock::new();
    *TIMER.get_or_init(|| {
        let t: &'static Timer = Box::leak(Box::new(Timer {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("planwave-sim-timer".into())
            .spawn(move || t.run())
            .ok()
            .map(|_| t)
    })
}

impl Timer {
    fn add(&self, deadline: Instant, tx: oneshot::Sender<()>) {
        let Ok(mut s) = self.state.lock() else {
            return; // poisoned: drop tx, the waiter returns at once
        };
        let seq = s.next;
        s.next += 1;
        let earliest = s.heap.peek().is_none_or(|Reverse(e)| deadline < e.deadline);
        s.heap.push(Reverse(Entry { deadline, seq }));
        s.wakers.insert(seq, tx);
        drop(s);
        if earliest {
            self.wake.notify_one();
        }
    }

    fn run(&self) {
        let Ok(mut s) = self.state.lock() else {
            return;
        };
        loop {
            let now = Instant::now();
            let mut due = Vec::new();
            while let Some(Reverse(e)) = s.heap.peek() {
                if e.deadline > now {
                    break;
                }
                let seq = e.seq;
                s.heap.pop();
                if let Some(tx) = s.wakers.remove(&seq) {
                    due.push(tx);
                }
            }
            if !due.is_empty() {
                // Wake outside the lock so callers can add deadlines meanwhile.
                drop(s);
                for tx in due {
                    let _ = tx.send(());
                }
                s = match self.state.lock() {
                    Ok(s) => s,
                    Err(_) => return,
                };
                continue;
            }
            let wait = s.heap.peek().map(|Reverse(e)| e.deadline - now);
            s = match wait {
                Some(d) => match self.wake.wait_timeout(s, d) {
                    Ok((s, _)) => s,
                    Err(_) => return,
                },
                None => match self.wake.wait(s) {
                    Ok(s) => s,
                    Err(_) => return,
                },
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn wakes_in_deadline_order_and_never_early() {
        let start = Instant::now();
        let mut handles = Vec::new();
        for ms in [30u64, 10, 20, 0] {
            handles.push(tokio::spawn(async move {
                sleep_from(start, Duration::from_millis(ms)).await;
                (ms, Instant::now())
            }));
        }
        let mut woke = Vec::new();
        for h in handles {
            woke.push(h.await.expect("task"));
        }
        for (ms, at) in &woke {
            assert!(
                *at >= start + Duration::from_millis(*ms),
                "{ms} ms woke early"
            );
        }
        woke.sort_by_key(|(_, at)| *at);
        assert_eq!(
            woke.iter().map(|(ms, _)| *ms).collect::<Vec<_>>(),
            vec![0, 10, 20, 30]
        );
    }
}
