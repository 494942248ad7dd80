//! Where batched calls wait: the queue of lines not yet submitted, the submitted batches
//! being polled, and the answers handed back, each to its own call.
//!
//! The queue is submitted as soon as no job can add a call to it soon (every live job is
//! waiting on the Batch API, and nothing changed for a moment), at the latest the linger
//! after its first line: a long linger costs nothing when every caller is known.
//!
//! A line that a batch left unfinished (expired, cancelled, or missing from both files) goes
//! back into the queue under the same `custom_id`; a line that failed is handed back as the
//! error a normal call would have returned, so the caller's retry policy decides.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde_json::Value;
use tokio::sync::oneshot;

use super::api::{Api, ApiError};
use super::ledger::Recorded;
use super::scope::{BatchScope, Owner};
use super::wire::{BatchObject, LineOutcome, parse_result_line};
use super::{BatchConfig, BatchStatus};
use crate::LlmError;

/// Polls of one batch that may fail in a row before its calls are failed.
const MAX_POLL_FAILURES: u32 = 10;
/// Attempts at an upload or a batch creation.
const SUBMIT_ATTEMPTS: u32 = 3;
/// How long every job must have been waiting, with nothing changing, before the queue is
/// submitted ahead of its linger: the time a job takes from one task's end to its
/// dependents' first calls is spent working (not waiting), so this only needs to cover the
/// few messages in between.
const SETTLE: Duration = Duration::from_millis(100);

/// One call's request line, waiting for its answer.
pub(crate) struct Line {
    pub custom_id: String,
    /// The line as uploaded: only the documented fields.
    pub json: String,
    pub model: String,
    /// What a normal call's `x-planwave-*` headers say (role, attempt, context), sent only
    /// to a server that says it is planwave's simulator.
    pub context: Option<Value>,
    /// The job the call is for (none: a caller outside any job).
    pub owner: Option<Owner>,
    pub reply: oneshot::Sender<Result<Value, LlmError>>,
}

impl Line {
    fn scope(&self) -> Option<&Arc<BatchScope>> {
        self.owner.as_ref().map(|o| &o.0)
    }
}

/// The jobs with calls in one batch, each with its count of calls.
type Members = Vec<(Arc<BatchScope>, u64)>;

#[derive(Default)]
struct State {
    queue: Vec<Line>,
    flush_scheduled: bool,
    /// How often each request body was seen, for content-addressed custom ids.
    occurrences: HashMap<u64, u32>,
    /// custom_id -> the batch an earlier process submitted it in (resume).
    recorded: HashMap<String, String>,
    /// batch id -> the lines waiting for it.
    waiting: HashMap<String, Vec<Line>>,
    polling: HashSet<String>,
    /// Finished batches' results, kept while recorded ids may still ask for them.
    finished: HashMap<String, Arc<HashMap<String, LineOutcome>>>,
    /// batch id -> the jobs whose calls it holds.
    members: HashMap<String, Members>,
}

pub(crate) struct Dispatch {
    pub api: Api,
    pub cfg: BatchConfig,
    state: Mutex<State>,
    /// Every job's scope opened on this client (the dead ones pruned as new ones come).
    scopes: Mutex<Vec<Weak<BatchScope>>>,
    /// Changes to any scope (calls queued or answered, tasks started or ended, jobs ended).
    pub changes: Arc<AtomicU64>,
    submitted: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Dispatch {
    pub fn new(api: Api, cfg: BatchConfig) -> Dispatch {
        Dispatch {
            api,
            cfg,
            state: Mutex::new(State::default()),
            scopes: Mutex::new(Vec::new()),
            changes: Arc::new(AtomicU64::new(0)),
            submitted: AtomicU64::new(0),
        }
    }

    pub fn submitted(&self) -> u64 {
        self.submitted.load(Ordering::Relaxed)
    }

    /// The custom id of a request body: its hash and how many times this body was seen (by
    /// the call's job, when it has one).
    pub fn custom_id(&self, body: &str, scope: Option<&BatchScope>) -> String {
        let h = planwave_record::stable_hash(0, body, 0);
        if let Some(s) = scope {
            return s.custom_id(h);
        }
        let mut st = lock(&self.state);
        let n = st.occurrences.entry(h).or_insert(0);
        *n += 1;
        format!("pw-{h:016x}-{n}")
    }

    pub fn register(&self, scope: &Arc<BatchScope>) {
        let mut scopes = lock(&self.scopes);
        scopes.retain(|w| w.upgrade().is_some_and(|s| s.is_live()));
        scopes.push(Arc::downgrade(scope));
        self.changes.fetch_add(1, Ordering::SeqCst);
    }

    /// Every job this client serves is waiting on the Batch API (and there is one at least):
    /// none can add a call before an answer comes back.
    fn all_waiting(&self) -> bool {
        let scopes: Vec<Arc<BatchScope>> = lock(&self.scopes)
            .iter()
            .filter_map(Weak::upgrade)
            .collect();
        let live: Vec<&Arc<BatchScope>> = scopes.iter().filter(|s| s.is_live()).collect();
        !live.is_empty() && live.iter().all(|s| s.is_waiting())
    }

    /// Waits until the queue should be submitted: the linger has passed, or every job has
    /// been waiting, with nothing changing, for [`SETTLE`]. Lines of a caller outside any
    /// job wait the whole linger (nothing says whether more are coming).
    async fn linger(&self) {
        let deadline = tokio::time::Instant::now() + self.cfg.linger;
        let mut quiet_since: Option<u64> = None;
        loop {
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return;
            }
            tokio::time::sleep(SETTLE.min(deadline - now)).await;
            let changes = self.changes.load(Ordering::SeqCst);
            let all_owned = lock(&self.state).queue.iter().all(|l| l.owner.is_some());
            if all_owned && self.all_waiting() {
                if quiet_since == Some(changes) {
                    return;
                }
                quiet_since = Some(changes);
            } else {
                quiet_since = None;
            }
        }
    }

    /// Lets calls an earlier process of a job already submitted (`recorded`, read from the
    /// job's ledger) wait for their batch instead of being sent again. Files recorded without
    /// their batch are looked up at the provider; a look-up that fails is an error rather
    /// than "not created" (the calls would be submitted, and paid for, twice).
    pub async fn recover(&self, recorded: &Recorded) -> Result<(), ApiError> {
        let mut batches = recorded.batches.clone();
        for file in recorded.files_without_batch() {
            // Created or not before the process died: the provider's list says.
            if let Some(b) = self.api.find_by_input(&file).await? {
                batches.insert(file, b);
            }
        }
        let map: HashMap<String, String> = recorded
            .files
            .iter()
            .filter_map(|(id, f)| Some((id.clone(), batches.get(f)?.clone())))
            .collect();
        lock(&self.state).recorded.extend(map);
        Ok(())
    }

    fn fail(&self, line: Line, e: LlmError) {
        let _ = line.reply.send(Err(e));
    }

    fn error(&self, line: &Line, message: String, transient: bool) -> LlmError {
        let (provider, model) = (self.api.config().provider.clone(), line.model.clone());
        if transient {
            LlmError::Transient {
                provider,
                model,
                message,
                retry_after: None,
            }
        } else {
            LlmError::Fatal {
                provider,
                model,
                message,
            }
        }
    }

    fn api_error(&self, line: &Line, e: &ApiError) -> LlmError {
        self.error(
            line,
            e.message().to_owned(),
            !matches!(e, ApiError::Fatal(_)),
        )
    }

    /// A call's line: to the batch an earlier process submitted it in, else the queue.
    pub fn enqueue(self: &Arc<Self>, line: Line) {
        let mut st = lock(&self.state);
        if let Some(batch) = st.recorded.remove(&line.custom_id) {
            if let Some(results) = st.finished.get(&batch).cloned() {
                drop(st);
                self.resolve(&batch, vec![line], &results, None);
                return;
            }
            if let Some(scope) = line.scope() {
                add_member(st.members.entry(batch.clone()).or_default(), scope, 1);
            }
            st.waiting.entry(batch.clone()).or_default().push(line);
            if st.polling.insert(batch.clone()) {
                let me = self.clone();
                tokio::spawn(async move { me.poll(batch).await });
            }
            return;
        }
        drop(st);
        self.queue(vec![line]);
    }

    /// Lines for the next submission.
    fn queue(self: &Arc<Self>, lines: Vec<Line>) {
        let mut st = lock(&self.state);
        st.queue.extend(lines);
        if st.queue.len() >= self.cfg.max_lines {
            let full: Vec<Line> = st.queue.drain(..).collect();
            let me = self.clone();
            tokio::spawn(async move { me.submit(full).await });
        } else if !st.queue.is_empty() && !st.flush_scheduled {
            st.flush_scheduled = true;
            let me = self.clone();
            tokio::spawn(async move {
                me.linger().await;
                let lines = {
                    let mut st = lock(&me.state);
                    st.flush_scheduled = false;
                    std::mem::take(&mut st.queue)
                };
                me.submit(lines).await;
            });
        }
    }

    /// Each job with calls in `b` hears of its state, with its own count of calls in it.
    fn observe(&self, b: &BatchObject) {
        let members = lock(&self.state)
            .members
            .get(&b.id)
            .cloned()
            .unwrap_or_default();
        let c = b.request_counts.unwrap_or_default();
        for (scope, calls) in members {
            scope.tell(&BatchStatus {
                batch_id: b.id.clone(),
                state: b.status.clone(),
                total: c.total,
                completed: c.completed,
                failed: c.failed,
                calls,
            });
        }
    }

    /// `op` tried up to [`SUBMIT_ATTEMPTS`] times while it fails transiently.
    async fn attempts<T, F: Future<Output = Result<T, ApiError>>>(
        &self,
        op: impl Fn() -> F,
    ) -> Result<T, ApiError> {
        let mut delay = Duration::from_millis(500);
        let mut tries = 1;
        loop {
            match op().await {
                Err(ApiError::Transient(_)) if tries < SUBMIT_ATTEMPTS => {
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                    tries += 1;
                }
                other => return other,
            }
        }
    }

    /// Uploads `lines` as one file, records it in the ledger of each job with calls in it,
    /// creates the batch, records that, and polls.
    async fn submit(self: Arc<Self>, lines: Vec<Line>) {
        let lines: Vec<Line> = lines.into_iter().filter(|l| !l.reply.is_closed()).collect();
        if lines.is_empty() {
            return;
        }
        let mut jsonl = String::new();
        for l in &lines {
            jsonl.push_str(&l.json);
            jsonl.push('\n');
        }
        let name = format!(
            "planwave-{:016x}.jsonl",
            planwave_record::stable_hash(0, &jsonl, 0)
        );
        let file = match self
            .attempts(|| self.api.upload(jsonl.as_bytes(), &name))
            .await
        {
            Ok(f) => f,
            Err(e) => return self.fail_all(lines, &e),
        };
        if file.simulator
            && let Err(e) = self.send_contexts(&file.id, &lines).await
        {
            return self.fail_all(lines, &e);
        }
        let file = file.id;
        let jobs = by_job(&lines);
        for (scope, ids) in &jobs {
            if let Err(e) = scope.record(|l| l.record_file(&file, ids)) {
                return self.fail_all(lines, &ApiError::Transient(e));
            }
        }
        let batch = match self.attempts(|| self.api.create(&file)).await {
            Ok(b) => b,
            Err(e) => return self.fail_all(lines, &e),
        };
        self.submitted.fetch_add(1, Ordering::Relaxed);
        for (scope, _) in &jobs {
            if let Err(e) = scope.record(|l| l.record_batch(&file, &batch.id)) {
                // Submitted but not recorded: the file line finds it again on resume.
                tracing::warn!(batch = %batch.id, "recording the batch: {e}");
            }
        }
        tracing::info!(batch = %batch.id, lines = lines.len(), "submitted a provider batch");
        let id = batch.id.clone();
        {
            let mut st = lock(&self.state);
            let members = st.members.entry(id.clone()).or_default();
            for (scope, ids) in &jobs {
                add_member(members, scope, ids.len() as u64);
            }
            st.waiting.entry(id.clone()).or_default().extend(lines);
            st.polling.insert(id.clone());
        }
        self.observe(&batch);
        self.poll(id).await;
    }

    /// What each line is about, for a server that answers from it (planwave's simulator
    /// says so when the file is uploaded); a real provider never gets this.
    async fn send_contexts(&self, file: &str, lines: &[Line]) -> Result<(), ApiError> {
        let contexts: serde_json::Map<String, Value> = lines
            .iter()
            .filter_map(|l| Some((l.custom_id.clone(), l.context.clone()?)))
            .collect();
        if contexts.is_empty() {
            return Ok(());
        }
        let body = serde_json::json!({"input_file_id": file, "lines": contexts});
        self.attempts(|| self.api.send_contexts(&body)).await
    }

    fn fail_all(&self, lines: Vec<Line>, e: &ApiError) {
        for l in lines {
            let err = self.api_error(&l, e);
            self.fail(l, err);
        }
    }

    /// Whether anyone still waits for `batch`; forgets it if not.
    fn anyone_waits(&self, batch: &str) -> bool {
        let mut st = lock(&self.state);
        let alive = st
            .waiting
            .get_mut(batch)
            .map(|w| {
                w.retain(|l| !l.reply.is_closed());
                !w.is_empty()
            })
            .unwrap_or(false);
        if !alive {
            st.waiting.remove(batch);
            st.polling.remove(batch);
            st.members.remove(batch);
        }
        alive
    }

    /// Polls `batch` (backing off) until it ends, then hands out its results.
    async fn poll(self: Arc<Self>, batch: String) {
        let mut interval = self.cfg.poll;
        let mut failures = 0;
        let mut last: Option<(String, u64, u64)> = None;
        loop {
            if !self.anyone_waits(&batch) {
                return;
            }
            tokio::time::sleep(interval).await;
            interval = interval
                .mul_f64(1.5)
                .min(self.cfg.poll_max.max(self.cfg.poll));
            let b = match self.api.get(&batch).await {
                Ok(b) => b,
                Err(ApiError::NotFound(_)) => {
                    // The provider lost it (or never had it): what waited is sent again.
                    self.finish(&batch, HashMap::new(), None);
                    return;
                }
                Err(e) => {
                    failures += 1;
                    if failures >= MAX_POLL_FAILURES {
                        let lines = lock(&self.state).waiting.remove(&batch);
                        lock(&self.state).polling.remove(&batch);
                        lock(&self.state).members.remove(&batch);
                        self.fail_all(lines.unwrap_or_default(), &e);
                        return;
                    }
                    continue;
                }
            };
            failures = 0;
            let c = b.request_counts.unwrap_or_default();
            let now = Some((b.status.clone(), c.completed, c.failed));
            if now != last {
                self.observe(&b);
                last = now;
            }
            if b.is_terminal() {
                match self.results(&b).await {
                    Ok(results) => {
                        let failed = (b.status == "failed").then(|| b.error_text());
                        self.finish(&batch, results, failed);
                        return;
                    }
                    Err(_) => failures += 1,
                }
            }
        }
    }

    /// The outcome of every line in a finished batch's output and error files.
    async fn results(&self, b: &BatchObject) -> Result<HashMap<String, LineOutcome>, ApiError> {
        let mut out = HashMap::new();
        for file in [&b.output_file_id, &b.error_file_id].into_iter().flatten() {
            let text = self.attempts(|| self.api.content(file)).await?;
            out.extend(text.lines().filter_map(parse_result_line));
        }
        Ok(out)
    }

    /// Hands `batch`'s results to the lines waiting for it.
    fn finish(
        self: &Arc<Self>,
        batch: &str,
        results: HashMap<String, LineOutcome>,
        failed: Option<String>,
    ) {
        let results = Arc::new(results);
        let lines = {
            let mut st = lock(&self.state);
            st.polling.remove(batch);
            st.members.remove(batch);
            if st.recorded.values().any(|b| b == batch) {
                st.finished.insert(batch.to_owned(), results.clone());
            }
            st.waiting.remove(batch).unwrap_or_default()
        };
        self.resolve(batch, lines, &results, failed);
    }

    fn resolve(
        self: &Arc<Self>,
        batch: &str,
        lines: Vec<Line>,
        results: &HashMap<String, LineOutcome>,
        failed: Option<String>,
    ) {
        let mut again = Vec::new();
        for line in lines {
            match (results.get(&line.custom_id), &failed) {
                (Some(LineOutcome::Answer(v)), _) => {
                    let _ = line.reply.send(Ok(v.clone()));
                }
                (Some(o), _) if o.unfinished() => again.push(line),
                (
                    Some(LineOutcome::Failed {
                        status,
                        code,
                        message,
                    }),
                    _,
                ) => {
                    let transient = *status == 0 || *status == 429 || *status >= 500;
                    let e = self.error(
                        &line,
                        format!("batch {batch}: {message} ({code}, HTTP {status})"),
                        transient,
                    );
                    self.fail(line, e);
                }
                (None, Some(why)) => {
                    let e = self.error(&line, format!("batch {batch} failed: {why}"), false);
                    self.fail(line, e);
                }
                (None, None) => again.push(line),
            }
        }
        if !again.is_empty() {
            tracing::info!(batch, lines = again.len(), "sending unfinished lines again");
            self.queue(again);
        }
    }
}

/// The lines' jobs, each with the custom ids of its calls among them.
fn by_job(lines: &[Line]) -> Vec<(Arc<BatchScope>, Vec<String>)> {
    let mut jobs: Vec<(Arc<BatchScope>, Vec<String>)> = Vec::new();
    let mut at: HashMap<*const BatchScope, usize> = HashMap::new();
    for l in lines {
        let Some(scope) = l.scope() else { continue };
        let i = *at.entry(Arc::as_ptr(scope)).or_insert_with(|| {
            jobs.push((scope.clone(), Vec::new()));
            jobs.len() - 1
        });
        jobs[i].1.push(l.custom_id.clone());
    }
    jobs
}

/// `calls` more of `scope`'s calls in a batch.
fn add_member(members: &mut Members, scope: &Arc<BatchScope>, calls: u64) {
    match members.iter_mut().find(|(s, _)| Arc::ptr_eq(s, scope)) {
        Some((_, n)) => *n += calls,
        None => members.push((scope.clone(), calls)),
    }
}
