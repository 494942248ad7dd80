//! The HTTP side of a load test on threads of its own, each a single-threaded runtime.
//!
//! A streamed answer arrives as hundreds of chunks, each read on its own at low rates. On
//! the process's work-stealing runtime a chunk woke a worker from `epoll_wait`, which could
//! then wake the other worker (a futex) to share tasks, and hyper's connection task and the
//! request's body reader could run on different threads. Here each endpoint client lives on
//! one thread that reads its sockets, decodes and times the chunks with no other thread
//! involved; only the start and the end of a request cross over. Every figure is still
//! taken where it was (the client's send, its chunks), on the thread that reads them.
//!
//! Requests are packed: each goes to the first thread that used less than [`BUSY_SHARE`]
//! of a core over the last window, so a moderate load is read by one thread, whose every
//! wake finds several sockets ready, rather than by one thread per core each woken for one
//! chunk. Above that share the next thread takes the new requests, up to one per core, so a
//! heavy load still uses every core. The share is the thread's own CPU time (on Linux), so
//! other processes taking the core do not make it look busier than it is.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use planwave_llm::{AgentRole, ChatCall, ChatRequest, ChatResponse, LlmError, LlmProvider};
use planwave_record::ProviderInfo;
use tokio::runtime::Handle;
use tokio::task::JoinHandle;
use tracing::Instrument;

/// A thread that used more than this share of a core over the last window takes no new
/// requests while a later one is below it. Half keeps a chunk's wait for its thread at
/// about one chunk's processing (microseconds), far below what the figures resolve.
const BUSY_SHARE: f64 = 0.5;

/// How often the threads' busy shares are brought up to date.
const WINDOW: Duration = Duration::from_millis(50);

/// A provider per I/O thread; calls go to the first one not too busy.
pub(crate) struct IoThreads {
    lanes: Vec<Lane>,
    /// When the shares were last brought up to date, and each thread's busy time then.
    window: Mutex<(Instant, Vec<Duration>)>,
}

/// One thread, its runtime and the client that only it uses (a client's pooled connections
/// belong to the runtime that opened them).
struct Lane {
    provider: Arc<dyn LlmProvider>,
    handle: Handle,
    /// Its thread's CPU clock, where there is one.
    clock: Option<CpuClock>,
    /// Its share of a core over the last window, in thousandths.
    busy: AtomicU32,
    /// Dropped with the lane: the thread's runtime then stops and drops what it still runs.
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl IoThreads {
    /// `connect`'s clients, one per core, each on a thread of its own. When a thread cannot
    /// be started the calls stay on the caller's runtime, as they were.
    pub(crate) fn wrap<E>(
        connect: &dyn Fn() -> Result<Arc<dyn LlmProvider>, E>,
    ) -> Result<Arc<dyn LlmProvider>, E> {
        match IoThreads::start(connect)? {
            Some(threads) => Ok(Arc::new(threads)),
            None => connect(),
        }
    }

    /// The threads and their clients; `None` when a thread could not be started.
    fn start<E>(
        connect: &dyn Fn() -> Result<Arc<dyn LlmProvider>, E>,
    ) -> Result<Option<IoThreads>, E> {
        let n = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        let mut lanes = Vec::with_capacity(n);
        for i in 0..n {
            let Some((handle, clock, stop)) = start_thread(i) else {
                return Ok(None);
            };
            lanes.push(Lane {
                provider: connect()?,
                handle,
                clock,
                busy: AtomicU32::new(0),
                _stop: stop,
            });
        }
        let busy = lanes.iter().map(busy_time).collect();
        Ok(Some(IoThreads {
            lanes,
            window: Mutex::new((Instant::now(), busy)),
        }))
    }

    /// The first thread below [`BUSY_SHARE`], else the least busy.
    fn pick(&self) -> &Lane {
        self.update_shares();
        let shares: Vec<u32> = self
            .lanes
            .iter()
            .map(|l| l.busy.load(Ordering::Relaxed))
            .collect();
        &self.lanes[choose(&shares)]
    }

    /// Each thread's busy share since the last update, once a window has passed (by the
    /// caller that finds it so; the others go on with the shares as they are).
    fn update_shares(&self) {
        let Ok(mut w) = self.window.try_lock() else {
            return;
        };
        let now = Instant::now();
        let span = now.duration_since(w.0);
        if span < WINDOW {
            return;
        }
        for (lane, before) in self.lanes.iter().zip(w.1.iter_mut()) {
            let busy = busy_time(lane);
            let share = busy.saturating_sub(*before).as_secs_f64() / span.as_secs_f64();
            lane.busy.store((share * 1000.0) as u32, Ordering::Relaxed);
            *before = busy;
        }
        w.0 = now;
    }

    fn first(&self) -> &Arc<dyn LlmProvider> {
        &self.lanes[0].provider
    }
}

/// Which thread takes a request, by the threads' shares of a core (thousandths): the first
/// below [`BUSY_SHARE`], else the least busy.
fn choose(shares: &[u32]) -> usize {
    let limit = (BUSY_SHARE * 1000.0) as u32;
    shares
        .iter()
        .position(|&s| s < limit)
        .or_else(|| (0..shares.len()).min_by_key(|&i| shares[i]))
        .unwrap_or(0)
}

/// The CPU time a thread has used: its own clock on Linux, else the time its runtime spent
/// running tasks (which also counts time the thread was preempted).
fn busy_time(lane: &Lane) -> Duration {
    match &lane.clock {
        Some(c) => c.now(),
        None => lane.handle.metrics().worker_total_busy_duration(0),
    }
}

/// A thread's CPU-time clock, readable from any thread.
#[derive(Clone, Copy)]
struct CpuClock(#[cfg(target_os = "linux")] libc::clockid_t);

impl CpuClock {
    /// The calling thread's clock.
    #[cfg(target_os = "linux")]
    fn of_this_thread() -> Option<CpuClock> {
        let mut id: libc::clockid_t = 0;
        // SAFETY: `pthread_self` is the calling thread, alive; `id` is a valid out pointer.
        let r = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
        (r == 0).then_some(CpuClock(id))
    }

    #[cfg(not(target_os = "linux"))]
    fn of_this_thread() -> Option<CpuClock> {
        None
    }

    #[cfg(target_os = "linux")]
    fn now(&self) -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid out pointer; a clock of an ended thread fails and reads as zero.
        if unsafe { libc::clock_gettime(self.0, &mut ts) } != 0 {
            return Duration::ZERO;
        }
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    #[cfg(not(target_os = "linux"))]
    fn now(&self) -> Duration {
        Duration::ZERO
    }
}

/// A thread running a single-threaded runtime until its stop is dropped, and that
/// runtime's handle. The runtime is built on the thread itself, so it is also dropped there
/// (never in the caller's async context, where dropping a runtime is refused).
fn start_thread(i: usize) -> Option<(Handle, Option<CpuClock>, tokio::sync::oneshot::Sender<()>)> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name(format!("planwave-io-{i}"))
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(r) => r,
                Err(_) => return drop(tx.send(None)),
            };
            let _ = tx.send(Some((runtime.handle().clone(), CpuClock::of_this_thread())));
            runtime.block_on(async {
                let _ = stopped.await;
            });
        })
        .ok()?;
    // Only the runtime's construction is waited for (the thread sends at once).
    let (handle, clock) = rx.recv().ok().flatten()?;
    Some((handle, clock, stop))
}

/// The call on its thread, cancelled there when the caller drops it (an abandoned or
/// cancelled request stops reading, as it did on the caller's runtime).
struct AbortOnDrop(JoinHandle<Result<ChatResponse, LlmError>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[async_trait]
impl LlmProvider for IoThreads {
    fn info(&self) -> ProviderInfo {
        self.first().info()
    }

    fn model_for(&self, role: AgentRole) -> String {
        self.first().model_for(role)
    }

    fn chat<'life0, 'async_trait>(&'life0 self, request: ChatRequest) -> ChatCall<'async_trait>
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        let lane = self.pick();
        let provider = lane.provider.clone();
        // The caller's span stays the parent of the call's own (a spawned task has none).
        let span = tracing::Span::current();
        let mut task = AbortOnDrop(
            lane.handle
                .spawn(async move { provider.chat(request).await }.instrument(span)),
        );
        Box::pin(async move {
            match (&mut task.0).await {
                Ok(answer) => answer,
                // A panic of the call is the caller's, as it was on its own runtime.
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(_) => {
                    let info = self.info();
                    Err(LlmError::Fatal {
                        provider: info.provider,
                        model: info.model,
                        message: "the load test's I/O thread stopped".into(),
                    })
                }
            }
        })
    }

    fn retry_counts(&self) -> BTreeMap<String, u64> {
        let mut all = BTreeMap::new();
        for lane in &self.lanes {
            for (cause, n) in lane.provider.retry_counts() {
                *all.entry(cause).or_insert(0) += n;
            }
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use planwave_llm::{ChatMessage, RequestContext};

    use super::*;

    /// Answers with the name of the thread it ran on, after using the request's
    /// `max_tokens` in ms of that thread's CPU (as a long read would).
    struct Where;

    #[async_trait]
    impl LlmProvider for Where {
        fn info(&self) -> ProviderInfo {
            ProviderInfo {
                provider: "where".into(),
                model: "m".into(),
                simulated: true,
                base_url: None,
                response_format: None,
            }
        }
        async fn chat(&self, request: ChatRequest) -> Result<ChatResponse, LlmError> {
            let hold = Duration::from_millis(u64::from(request.max_tokens.unwrap_or(0)));
            if let Some(clock) = CpuClock::of_this_thread() {
                let start = clock.now();
                while clock.now() - start < hold {
                    std::hint::spin_loop();
                }
            }
            let name = std::thread::current().name().unwrap_or("").to_owned();
            Ok(ChatResponse {
                content: name,
                usage: Default::default(),
                model: "m".into(),
                finish_reason: Some("stop".into()),
                tool_calls: Vec::new(),
                timing: None,
            })
        }
        fn retry_counts(&self) -> BTreeMap<String, u64> {
            BTreeMap::from([("connection".to_owned(), 1)])
        }
    }

    fn request() -> ChatRequest {
        ChatRequest {
            role: AgentRole::Subagent,
            messages: vec![ChatMessage::user("hi")],
            attempt: 1,
            context: RequestContext::default(),
            traceparent: None,
            tools: Vec::new(),
            max_tokens: None,
            on_delta: None,
        }
    }

    #[tokio::test]
    async fn an_idle_first_thread_takes_every_call_its_cpu_counts_and_counts_add_up() {
        let clients = Arc::new(Mutex::new(0));
        let made = clients.clone();
        let connect = move || -> Result<Arc<dyn LlmProvider>, String> {
            *made.lock().expect("lock") += 1;
            Ok(Arc::new(Where))
        };
        let p = IoThreads::start(&connect)
            .expect("connected")
            .expect("threads");
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        assert_eq!(*clients.lock().expect("lock"), cores, "one client per core");
        assert_eq!(p.retry_counts()["connection"], cores as u64);
        for _ in 0..3 {
            let a = p.chat(request()).await.expect("answer");
            assert_eq!(
                a.content, "planwave-io-0",
                "an idle first thread takes them all"
            );
        }
        // A call's CPU counts for the thread it ran on.
        let lane = &p.lanes[0];
        let before = busy_time(lane);
        let busy = ChatRequest {
            max_tokens: Some(20),
            ..request()
        };
        assert_eq!(p.chat(busy).await.expect("answer").content, "planwave-io-0");
        if cfg!(target_os = "linux") {
            assert!(busy_time(lane) - before >= Duration::from_millis(20));
        }
    }

    #[test]
    fn requests_go_to_the_first_thread_under_half_a_core_else_the_least_busy() {
        assert_eq!(choose(&[0, 0]), 0);
        assert_eq!(choose(&[499, 0]), 0);
        assert_eq!(choose(&[500, 0]), 1, "half a core: the next thread");
        assert_eq!(choose(&[900, 499, 0]), 1);
        assert_eq!(choose(&[900, 700, 800]), 1, "all busy: the least");
        assert_eq!(choose(&[700]), 0);
    }

    type Signal = Mutex<Option<tokio::sync::oneshot::Sender<()>>>;

    fn signal() -> (Signal, tokio::sync::oneshot::Receiver<()>) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (Mutex::new(Some(tx)), rx)
    }

    fn fire(s: &Signal) {
        if let Some(tx) = s.lock().expect("lock").take() {
            let _ = tx.send(());
        }
    }

    /// Never answers; tells when its call has started and when it is dropped.
    struct Hangs {
        started: Signal,
        dropped: Arc<Signal>,
    }

    struct OnDrop(Arc<Signal>);

    impl Drop for OnDrop {
        fn drop(&mut self) {
            fire(&self.0);
        }
    }

    #[async_trait]
    impl LlmProvider for Hangs {
        fn info(&self) -> ProviderInfo {
            ProviderInfo {
                provider: "hangs".into(),
                model: "m".into(),
                simulated: true,
                base_url: None,
                response_format: None,
            }
        }
        async fn chat(&self, _request: ChatRequest) -> Result<ChatResponse, LlmError> {
            let _dropped = OnDrop(self.dropped.clone());
            fire(&self.started);
            std::future::pending().await
        }
    }

    #[tokio::test]
    async fn a_dropped_call_is_cancelled_on_its_thread() {
        let ((started, on_start), (dropped, on_drop)) = (signal(), signal());
        let hangs = Arc::new(Hangs {
            started,
            dropped: Arc::new(dropped),
        });
        let connect = move || -> Result<Arc<dyn LlmProvider>, String> { Ok(hangs.clone()) };
        let p = IoThreads::wrap(&connect).expect("wrapped");
        let call = p.chat(request());
        on_start.await.expect("the call started on its thread");
        drop(call);
        on_drop.await.expect("the call was dropped on its thread");
        // The caller still holds the provider: it was the drop that ended the call.
        assert_eq!(p.info().provider, "hangs");
    }

    #[tokio::test]
    async fn a_connect_error_comes_back_untouched() {
        let connect = || -> Result<Arc<dyn LlmProvider>, String> { Err("no client".into()) };
        assert_eq!(
            IoThreads::wrap(&connect).err().as_deref(),
            Some("no client")
        );
    }
}
