//! The Batch API's HTTP calls: upload a file, create, get and list batches, read a
//! file's content. Each call has the client's request timeout; a failure is an [`ApiError`]
//! that says whether trying again can help.

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::json;

use super::wire::{BatchList, BatchObject, FileObject};
use crate::openai::OpenAiConfig;
use crate::secret::scrub;

/// Largest output or error file read back (OpenAI's input limit is 200 MB; an answer file
/// is of the same order).
const MAX_FILE_BYTES: usize = 512 * 1024 * 1024;

/// Batches per page of the provider's list (OpenAI's largest).
const LIST_PAGE: usize = 100;
/// Pages read looking for a batch before giving up (10,000 batches).
const MAX_LIST_PAGES: usize = 100;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// Worth trying again (connection, timeout, 408/409/429/5xx).
    Transient(String),
    /// The server does not know the id (a batch recorded before the server lost it).
    NotFound(String),
    /// Retrying cannot help (400, 401, 403, a body that is not the object asked for).
    Fatal(String),
}

impl ApiError {
    pub fn message(&self) -> &str {
        match self {
            ApiError::Transient(m) | ApiError::NotFound(m) | ApiError::Fatal(m) => m,
        }
    }
}

pub struct Api {
    http: reqwest::Client,
    cfg: OpenAiConfig,
}

/// An uploaded batch file.
pub struct Uploaded {
    pub id: String,
    /// The server is planwave's simulator (it said so in [`super::wire::SIMULATOR_HEADER`]).
    pub simulator: bool,
}

impl Api {
    pub fn new(cfg: OpenAiConfig) -> Result<Api, String> {
        let http = planwave_tls::http_client()
            .connect_timeout(cfg.timeouts.connect)
            .timeout(cfg.timeouts.request)
            .user_agent(concat!("planwave/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Api { http, cfg })
    }

    pub fn config(&self) -> &OpenAiConfig {
        &self.cfg
    }

    fn url(&self, path: &str) -> String {
        crate::openai::endpoint(&self.cfg.base_url, path)
    }

    fn auth(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.cfg.api_key {
            Some(key) => match HeaderValue::from_str(&format!("Bearer {}", key.expose())) {
                Ok(mut v) => {
                    v.set_sensitive(true);
                    req.header(AUTHORIZATION, v)
                }
                Err(_) => req,
            },
            None => req,
        }
    }

    /// Sends `req` and returns the body of a successful answer.
    async fn send(&self, what: &str, req: reqwest::RequestBuilder) -> Result<Vec<u8>, ApiError> {
        self.send_with_headers(what, req).await.map(|(b, _)| b)
    }

    /// As [`Api::send`], with the answer's headers.
    async fn send_with_headers(
        &self,
        what: &str,
        req: reqwest::RequestBuilder,
    ) -> Result<(Vec<u8>, reqwest::header::HeaderMap), ApiError> {
        let resp = self.auth(req).send().await.map_err(|e| {
            ApiError::Transient(format!(
                "{what}: {}",
                planwave_redact::redact_urls_in(&e.to_string())
            ))
        })?;
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.bytes().await.map_err(|e| {
            ApiError::Transient(format!(
                "{what}: reading the answer: {}",
                planwave_redact::redact_urls_in(&e.to_string())
            ))
        })?;
        if bytes.len() > MAX_FILE_BYTES {
            return Err(ApiError::Fatal(format!("{what}: the answer is too large")));
        }
        if status.is_success() {
            return Ok((bytes.to_vec(), headers));
        }
        let detail = scrub(
            &crate::openai::wire::body_message(&String::from_utf8_lossy(&bytes)),
            self.cfg.api_key.as_ref(),
        );
        let message = format!("{what}: HTTP {}: {detail}", status.as_u16());
        Err(match status {
            StatusCode::NOT_FOUND => ApiError::NotFound(message),
            s if s == StatusCode::REQUEST_TIMEOUT
                || s == StatusCode::CONFLICT
                || s == StatusCode::TOO_MANY_REQUESTS
                || s.is_server_error() =>
            {
                ApiError::Transient(message)
            }
            _ => ApiError::Fatal(message),
        })
    }

    fn decode<T: serde::de::DeserializeOwned>(what: &str, bytes: &[u8]) -> Result<T, ApiError> {
        serde_json::from_slice(bytes)
            .map_err(|e| ApiError::Transient(format!("{what}: malformed answer ({e})")))
    }

    /// `POST /v1/files` with purpose `batch`: the uploaded file's id, and whether the server
    /// said it is planwave's simulator.
    pub async fn upload(&self, jsonl: &[u8], filename: &str) -> Result<Uploaded, ApiError> {
        let (body, content_type) = super::wire::multipart(jsonl, "batch", filename);
        let req = self
            .http
            .post(self.url("files"))
            .header(CONTENT_TYPE, content_type)
            .body(body);
        let (bytes, headers) = self
            .send_with_headers("uploading the batch file", req)
            .await?;
        Ok(Uploaded {
            id: Self::decode::<FileObject>("uploading the batch file", &bytes)?.id,
            simulator: headers.contains_key(super::wire::SIMULATOR_HEADER),
        })
    }

    /// The simulator's route for what each line of an uploaded file is about.
    pub async fn send_contexts(&self, body: &serde_json::Value) -> Result<(), ApiError> {
        let req = self
            .http
            .post(self.url(super::wire::CONTEXTS_PATH))
            .json(body);
        self.send("sending the lines' contexts to the simulator", req)
            .await
            .map(|_| ())
    }

    /// `POST /v1/batches` for chat completions within 24 hours.
    pub async fn create(&self, input_file_id: &str) -> Result<BatchObject, ApiError> {
        let req = self.http.post(self.url("batches")).json(&json!({
            "input_file_id": input_file_id,
            "endpoint": "/v1/chat/completions",
            "completion_window": "24h",
        }));
        let bytes = self.send("creating the batch", req).await?;
        Self::decode("creating the batch", &bytes)
    }

    pub async fn get(&self, id: &str) -> Result<BatchObject, ApiError> {
        let what = format!("polling batch {id}");
        let req = self.http.get(self.url(&format!("batches/{id}")));
        let bytes = self.send(&what, req).await?;
        Self::decode(&what, &bytes)
    }

    /// The batch made from `input_file_id`, if the provider holds one: its list is read page
    /// by page (newest first) until the batch is found, the list ends, or the batches are
    /// older than the file (none of them can be made from it). A list longer than
    /// [`MAX_LIST_PAGES`] pages is an error rather than "none": the caller would submit the
    /// file's calls again, and pay for them twice.
    pub async fn find_by_input(&self, input_file_id: &str) -> Result<Option<String>, ApiError> {
        // The file's upload time bounds the search; a provider that does not say lists all.
        let since = self.file_created_at(input_file_id).await;
        let url = reqwest::Url::parse(&self.url("batches"))
            .map_err(|e| ApiError::Fatal(format!("listing batches: {e}")))?;
        let mut after: Option<String> = None;
        for _ in 0..MAX_LIST_PAGES {
            let mut page_url = url.clone();
            page_url
                .query_pairs_mut()
                .append_pair("limit", &LIST_PAGE.to_string());
            if let Some(id) = &after {
                page_url.query_pairs_mut().append_pair("after", id);
            }
            let bytes = self
                .send("listing batches", self.http.get(page_url))
                .await?;
            let list: BatchList = Self::decode("listing batches", &bytes)?;
            if let Some(b) = list
                .data
                .iter()
                .find(|b| b.input_file_id.as_deref() == Some(input_file_id))
            {
                return Ok(Some(b.id.clone()));
            }
            let older = |b: &super::wire::BatchObject| matches!((b.created_at, since), (Some(c), Some(f)) if c < f);
            let next = list.data.last().map(|b| b.id.clone());
            if !list.has_more || list.data.iter().any(older) || next == after {
                return Ok(None);
            }
            after = next;
        }
        Err(ApiError::Fatal(format!(
            "listing batches: no batch made from file {input_file_id} in the newest {} the provider lists; not submitting its calls again (they may be running)",
            MAX_LIST_PAGES * LIST_PAGE
        )))
    }

    /// When `file_id` was uploaded (Unix seconds), if the provider says.
    async fn file_created_at(&self, file_id: &str) -> Option<u64> {
        let what = format!("reading file {file_id}");
        let req = self.http.get(self.url(&format!("files/{file_id}")));
        let bytes = self.send(&what, req).await.ok()?;
        Self::decode::<FileObject>(&what, &bytes).ok()?.created_at
    }

    /// A file's content (an output or error file).
    pub async fn content(&self, file_id: &str) -> Result<String, ApiError> {
        let what = format!("reading file {file_id}");
        let req = self
            .http
            .get(self.url(&format!("files/{file_id}/content")))
            .timeout(self.cfg.timeouts.request.max(Duration::from_secs(60)));
        let bytes = self.send(&what, req).await?;
        String::from_utf8(bytes).map_err(|_| ApiError::Fatal(format!("{what}: not UTF-8")))
    }
}
