//! A sub-millisecond timer for simulated latency, driven by the tokio runtime itself.
//!
//! tokio's timer wheel has a 1 ms tick and rounds every deadline up to the next tick, so a
//! simulated 100 ms call took 100.5–101.5 ms: along a 30-task chain that is a 1–1.5 % error,
//! as large as the engine overhead a load test tries to measure.
//!
//! On Linux each runtime gets one `timerfd` (nanosecond resolution) registered with the
//! runtime's own I/O driver, armed for the earliest deadline of a heap. When it fires, a worker
//! thread wakes the due calls, exactly as it would wake calls whose HTTP answers arrived. An
//! earlier version used a dedicated timer thread: on a 2-core machine that third runnable
//! thread competed with both workers (15 % of the process's CPU went to its wake-ups), and the
//! kernel left a worker waiting behind it for milliseconds, which was the load test's dispatch
//! tail. Elsewhere, tokio's coarser timer is used. The runtime
//! must have its I/O driver enabled (`enable_all`), as every planwave runtime does.

use std::time::{Duration, Instant};

/// Waits until `deadline` with sub-millisecond precision.
///
/// Real time, not tokio's clock: a paused tokio clock does not advance simulated calls.
pub async fn sleep_until(deadline: Instant) {
    if deadline <= Instant::now() {
        return;
    }
    #[cfg(target_os = "linux")]
    if let Some(driver) = fd_timer::driver() {
        fd_timer::Sleep::new(driver, deadline).await;
        return;
    }
    // Boxed: tokio's timer is the fallback, and inlined it would grow every simulated call's
    // future (which lives through the whole wait) by its size.
    Box::pin(tokio::time::sleep_until(deadline.into())).await;
}

/// Waits `delay` from `start` (the moment the call began, so work before the wait does not
/// lengthen it).
pub async fn sleep_from(start: Instant, delay: Duration) {
    sleep_until(start + delay).await;
}

#[cfg(target_os = "linux")]
mod fd_timer {
    use std::cmp::Reverse;
    use std::collections::{BinaryHeap, HashMap};
    use std::future::Future;
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::pin::Pin;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
    use std::task::{Context, Poll, Waker};
    use std::time::{Duration, Instant};

    use tokio::io::Interest;
    use tokio::io::unix::AsyncFd;
    use tokio::runtime::{Handle, Id};

    /// One runtime's timer: the deadlines waiting and the timerfd armed for the earliest.
    pub struct Driver {
        fd: AsyncFd<OwnedFd>,
        state: Mutex<State>,
        /// Cleared when the runtime drops the driver task (it is shutting down).
        alive: AtomicBool,
    }

    #[derive(Default)]
    struct State {
        /// (deadline, key); entries whose key is no longer in `wakers` were cancelled.
        heap: BinaryHeap<Reverse<(Instant, u64)>>,
        wakers: HashMap<u64, Waker>,
        next_key: u64,
        /// The deadline the timerfd is armed for.
        armed: Option<Instant>,
    }

    /// The current runtime's driver, started on first use; None outside a runtime or when
    /// the runtime has no I/O driver (the caller falls back to tokio's timer).
    pub fn driver() -> Option<Arc<Driver>> {
        let handle = Handle::try_current().ok()?;
        static DRIVERS: OnceLock<Mutex<HashMap<Id, Arc<Driver>>>> = OnceLock::new();
        let mut drivers = DRIVERS.get_or_init(Default::default).lock().ok()?;
        if let Some(d) = drivers.get(&handle.id())
            && d.alive.load(Ordering::Acquire)
        {
            return Some(d.clone());
        }
        // Runtime ids are reused after a runtime ends: forget drivers of ended runtimes.
        drivers.retain(|_, d| d.alive.load(Ordering::Acquire));
        let driver = Arc::new(Driver::new(&handle).ok()?);
        handle.spawn(drive(driver.clone()));
        drivers.insert(handle.id(), driver.clone());
        Some(driver)
    }

    impl Driver {
        fn new(handle: &Handle) -> io::Result<Driver> {
            // SAFETY: plain syscall; the returned descriptor is owned below.
            let raw = unsafe {
                libc::timerfd_create(
                    libc::CLOCK_MONOTONIC, // the clock `Instant` reads
                    libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
                )
            };
            if raw < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `raw` is a fresh descriptor nobody else owns.
            let fd = unsafe { OwnedFd::from_raw_fd(raw) };
            let _enter = handle.enter();
            // SAFETY: the AsyncFd owns `fd`, so it stays open and the same for its lifetime.
            let fd = unsafe { AsyncFd::register_with_interest(fd, Interest::READABLE) }
                .map_err(io::Error::from)?;
            Ok(Driver {
                fd,
                state: Mutex::new(State::default()),
                alive: AtomicBool::new(true),
            })
        }

        fn lock(&self) -> MutexGuard<'_, State> {
            // A panic while holding the lock leaves the heap consistent (no partial updates).
            self.state.lock().unwrap_or_else(|p| p.into_inner())
        }

        /// Arms the timerfd for `deadline` (in the past: as soon as possible).
        fn arm(&self, state: &mut State, deadline: Option<Instant>) {
            state.armed = deadline;
            let after = deadline.map_or(Duration::ZERO, |d| {
                // A zero value would disarm the timer instead of firing it.
                d.saturating_duration_since(Instant::now())
                    .max(Duration::from_nanos(1))
            });
            let spec = libc::itimerspec {
                it_interval: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: libc::timespec {
                    tv_sec: after.as_secs() as libc::time_t,
                    tv_nsec: after.subsec_nanos() as libc::c_long,
                },
            };
            // SAFETY: valid descriptor and pointers for the duration of the call. It can only
            // fail for a bad descriptor or value, neither of which is possible here.
            unsafe {
                libc::timerfd_settime(self.fd.as_raw_fd(), 0, &spec, std::ptr::null_mut());
            }
        }

        fn register(&self, deadline: Instant, waker: &Waker) -> u64 {
            let mut state = self.lock();
            let key = state.next_key;
            state.next_key += 1;
            state.heap.push(Reverse((deadline, key)));
            state.wakers.insert(key, waker.clone());
            if state.armed.is_none_or(|armed| deadline < armed) {
                self.arm(&mut state, Some(deadline));
            }
            key
        }

        /// Wakes every call whose deadline has passed and re-arms for the next one.
        fn fire(&self) {
            let mut due = Vec::new();
            let mut state = self.lock();
            let now = Instant::now();
            while let Some(&Reverse((deadline, key))) = state.heap.peek() {
                if deadline > now {
                    break;
                }
                state.heap.pop();
                if let Some(w) = state.wakers.remove(&key) {
                    due.push(w);
                }
            }
            let next = state.heap.peek().map(|Reverse((d, _))| *d);
            self.arm(&mut state, next);
            drop(state);
            // Outside the lock: woken calls may register again at once.
            for w in due {
                w.wake();
            }
        }
    }

    struct AliveGuard(Arc<Driver>);

    impl Drop for AliveGuard {
        fn drop(&mut self) {
            self.0.alive.store(false, Ordering::Release);
            // Calls still waiting belong to tasks the runtime is dropping too; waking them
            // lets any that survive fall back instead of hanging.
            let wakers: Vec<Waker> = self.0.lock().wakers.drain().map(|(_, w)| w).collect();
            wakers.into_iter().for_each(Waker::wake);
        }
    }

    async fn drive(driver: Arc<Driver>) {
        let guard = AliveGuard(driver);
        let driver = &guard.0;
        loop {
            let Ok(mut ready) = driver.fd.readable().await else {
                return;
            };
            let mut count = [0u8; 8];
            // Reading resets the expiration count; WouldBlock clears tokio's readiness.
            let _ = ready.try_io(|fd| {
                // SAFETY: reads at most 8 bytes into an 8-byte buffer.
                let n =
                    unsafe { libc::read(fd.as_raw_fd(), count.as_mut_ptr().cast(), count.len()) };
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(())
                }
            });
            driver.fire();
        }
    }

    /// A wait for one deadline on a runtime's driver.
    pub struct Sleep {
        driver: Arc<Driver>,
        deadline: Instant,
        key: Option<u64>,
    }

    impl Sleep {
        pub fn new(driver: Arc<Driver>, deadline: Instant) -> Sleep {
            Sleep {
                driver,
                deadline,
                key: None,
            }
        }
    }

    impl Future for Sleep {
        type Output = ();

        fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
            let this = self.get_mut();
            if Instant::now() >= this.deadline || !this.driver.alive.load(Ordering::Acquire) {
                if let Some(key) = this.key.take() {
                    this.driver.lock().wakers.remove(&key);
                }
                return Poll::Ready(());
            }
            match this.key {
                None => this.key = Some(this.driver.register(this.deadline, cx.waker())),
                Some(key) => {
                    let mut state = this.driver.lock();
                    match state.wakers.get_mut(&key) {
                        Some(w) => w.clone_from(cx.waker()),
                        None => {
                            // Fired by a driver whose clock read was later than ours.
                            drop(state);
                            this.key = Some(this.driver.register(this.deadline, cx.waker()));
                        }
                    }
                }
            }
            Poll::Pending
        }
    }

    impl Drop for Sleep {
        fn drop(&mut self) {
            if let Some(key) = self.key.take() {
                // The heap entry stays until its deadline and is skipped then.
                self.driver.lock().wakers.remove(&key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every wait ends, none early; with `ordered`, in deadline order. Order is only
    /// observable on one worker: on several, two tasks woken together record their wake
    /// time on different threads, and a busy machine can swap close neighbours.
    async fn wake_order_checked(ordered: bool) {
        let start = Instant::now();
        let mut handles = Vec::new();
        for ms in [30u64, 10, 20, 0, 2, 1] {
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
        let mut order: Vec<u64> = woke.iter().map(|(ms, _)| *ms).collect();
        if !ordered {
            order.sort_unstable();
        }
        assert_eq!(order, vec![0, 1, 2, 10, 20, 30]);
    }

    async fn wake_order() {
        wake_order_checked(true).await;
    }

    #[tokio::test]
    async fn wakes_in_deadline_order_and_never_early() {
        wake_order().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn wakes_every_wait_never_early_on_a_multi_thread_runtime() {
        wake_order_checked(false).await;
    }

    #[test]
    fn a_new_runtime_gets_a_working_timer_after_the_last_one_ended() {
        // Runtime ids are reused; a driver left from an ended runtime must not be used.
        for _ in 0..3 {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(wake_order());
        }
    }

    #[tokio::test]
    async fn a_cancelled_wait_does_not_disturb_the_others() {
        let start = Instant::now();
        let cancelled = tokio::spawn(sleep_from(start, Duration::from_millis(5)));
        let kept = tokio::spawn(async move {
            sleep_from(start, Duration::from_millis(15)).await;
            Instant::now()
        });
        cancelled.abort();
        let at = kept.await.expect("task");
        assert!(at >= start + Duration::from_millis(15));
    }
}
