//! OpenAI's Batch API, simulated: `POST /v1/files` (multipart, purpose `batch`),
//! `GET /v1/files/{id}` and `/content`, `POST /v1/batches`, `GET /v1/batches` and
//! `/v1/batches/{id}`, `POST /v1/batches/{id}/cancel`, with OpenAI's states (validating,
//! in_progress, finalizing, completed, failed, expired, cancelling, cancelled), output and
//! error files in OpenAI's line format, and `request_counts`.
//!
//! [`BatchSimConfig`] scripts what a test needs: a completion delay, a share of lines
//! answered with an error, the first batches expiring, and how much of an expired or
//! cancelled batch completed first. `GET /planwave/batch-stats` counts what was submitted,
//! per `custom_id`, so a test can prove that nothing was submitted twice.
//!
//! Each line is answered by the same simulator as `POST /v1/chat/completions`. A line holds
//! only OpenAI's documented fields; what a client's `x-planwave-*` headers say for a normal
//! call comes separately: the upload's answer carries `x-planwave-simulator`, and planwave
//! then posts each line's context by `custom_id` to `POST /v1/planwave/batch-contexts`
//! before it creates the batch (a real provider never sees either).

mod contexts;
mod files;
mod lines;
mod multipart;
mod run;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use axum::routing::{get, post};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::server::{AppState, error};

/// How the simulated Batch API behaves.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchSimConfig {
    /// A batch completes no sooner than this after it was created.
    pub delay: Duration,
    /// The share of lines answered with a server error (in the error file, status 500),
    /// drawn from the seed, the line's body and how many lines of that body came before.
    pub line_error_rate: f64,
    /// The first this many batches expire (their window passes before they finish).
    pub expire_first: u64,
    /// The share of an expired or cancelled batch's lines completed before it ended.
    pub partial: f64,
    /// The largest file accepted.
    pub max_file_bytes: usize,
}

impl Default for BatchSimConfig {
    fn default() -> Self {
        BatchSimConfig {
            delay: Duration::ZERO,
            line_error_rate: 0.0,
            expire_first: 0,
            partial: 0.5,
            max_file_bytes: 200 * 1024 * 1024,
        }
    }
}

impl BatchSimConfig {
    /// The shares checked (each between 0 and 1).
    pub fn checked(self) -> Result<BatchSimConfig, crate::OptionError> {
        for (option, p) in [
            ("batch_line_error_rate", self.line_error_rate),
            ("batch_partial", self.partial),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(crate::OptionError {
                    option,
                    problem: format!("{p} is not a share between 0 and 1"),
                });
            }
        }
        Ok(self)
    }
}

/// What the Batch API was asked, at `GET /planwave/batch-stats`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchStats {
    pub files_uploaded: u64,
    pub batches_created: u64,
    /// Request lines in created batches.
    pub lines_submitted: u64,
    /// Lines answered with an injected error.
    pub line_errors: u64,
    pub expired: u64,
    pub cancelled: u64,
    /// Batches that failed validation.
    pub failed: u64,
    /// How many created batches held each custom_id.
    pub custom_ids: BTreeMap<String, u64>,
    /// The custom_ids submitted more than once.
    pub duplicates: Vec<String>,
    /// Per valid batch, in order of creation, what each line asked for: its role and task
    /// (`subagent:3`, `integrator`), from the context sent for it.
    pub batches: Vec<Vec<String>>,
}

/// The batch object as OpenAI returns it.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Batch {
    pub id: String,
    pub object: &'static str,
    pub endpoint: String,
    pub errors: Option<Value>,
    pub input_file_id: String,
    pub completion_window: String,
    pub status: &'static str,
    pub output_file_id: Option<String>,
    pub error_file_id: Option<String>,
    pub created_at: u64,
    pub in_progress_at: Option<u64>,
    pub expires_at: u64,
    pub finalizing_at: Option<u64>,
    pub completed_at: Option<u64>,
    pub failed_at: Option<u64>,
    pub expired_at: Option<u64>,
    pub cancelling_at: Option<u64>,
    pub cancelled_at: Option<u64>,
    pub request_counts: Counts,
    pub metadata: Value,
}

#[derive(Clone, Copy, Debug, Default, Serialize)]
pub(crate) struct Counts {
    pub total: u64,
    pub completed: u64,
    pub failed: u64,
}

pub(crate) struct StoredFile {
    pub id: String,
    pub purpose: String,
    pub filename: String,
    pub bytes: Arc<Vec<u8>>,
    pub created_at: u64,
}

#[derive(Default)]
pub(crate) struct Store {
    pub files: HashMap<String, StoredFile>,
    /// Per input file, what each line is about (by `custom_id`), as planwave sent it.
    pub contexts: HashMap<String, Arc<serde_json::Map<String, Value>>>,
    pub batches: HashMap<String, Batch>,
    /// Batch ids, oldest first.
    pub order: Vec<String>,
    pub cancels: HashMap<String, Arc<tokio::sync::Notify>>,
    pub stats: BatchStats,
    /// How many lines of each body (by hash) were answered, for the line-error draw.
    pub bodies_seen: HashMap<u64, u32>,
}

pub(crate) struct BatchState {
    pub app: Arc<AppState>,
    pub cfg: BatchSimConfig,
    store: Mutex<Store>,
    pub next: AtomicU64,
}

impl BatchState {
    pub fn store(&self) -> MutexGuard<'_, Store> {
        self.store.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// An id from a path or a body: what the server hands out (letters, digits, `-`, `_`), at
/// most 64.
fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The record (file or batch) named by `id`, when `id` is one the server hands out.
pub(crate) fn find<'a, T>(records: &'a HashMap<String, T>, id: &str) -> Option<&'a T> {
    records.get(id).filter(|_| valid_id(id))
}

/// As [`find`], to change it.
pub(crate) fn find_mut<'a, T>(records: &'a mut HashMap<String, T>, id: &str) -> Option<&'a mut T> {
    records.get_mut(id).filter(|_| valid_id(id))
}

/// A refusal when the server wants a key and the request has another.
pub(crate) fn refused(st: &BatchState, headers: &HeaderMap) -> Option<Response> {
    let key = st.app.cfg.api_key.as_ref()?;
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    (bearer != key.expose()).then(|| {
        error(
            StatusCode::UNAUTHORIZED,
            "Incorrect API key provided.",
            "invalid_request_error",
        )
    })
}

pub(crate) fn not_found(what: &str) -> Response {
    error(
        StatusCode::NOT_FOUND,
        &format!("No such {what}"),
        "invalid_request_error",
    )
}

/// The Batch API's routes over the server's state.
pub(crate) fn routes(app: Arc<AppState>) -> Router<Arc<AppState>> {
    let cfg = app.cfg.batch.clone();
    let limit = cfg.max_file_bytes.saturating_add(64 * 1024);
    let st = Arc::new(BatchState {
        app,
        cfg,
        store: Mutex::new(Store::default()),
        next: AtomicU64::new(1),
    });
    Router::new()
        .route(
            "/v1/files",
            post(files::upload).layer(DefaultBodyLimit::max(limit)),
        )
        .route("/v1/files/{id}", get(files::file))
        .route("/v1/files/{id}/content", get(files::content))
        .route("/v1/batches", post(run::create).get(run::list))
        .route("/v1/batches/{id}", get(run::get))
        .route("/v1/batches/{id}/cancel", post(run::cancel))
        .route(
            "/v1/planwave/batch-contexts",
            post(contexts::store).layer(DefaultBodyLimit::max(limit)),
        )
        .route("/planwave/batch-stats", get(stats))
        .with_state(st)
}

async fn stats(
    axum::extract::State(st): axum::extract::State<Arc<BatchState>>,
) -> axum::Json<BatchStats> {
    let mut s = st.store().stats.clone();
    s.duplicates = s
        .custom_ids
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(id, _)| id.clone())
        .collect();
    axum::Json(s)
}
