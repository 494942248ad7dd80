//! Connecting to the NATS server and opening (creating on first use) the streams and buckets
//! every command shares.

use std::path::PathBuf;
use std::time::Duration;

use async_nats::jetstream::{self, kv, object_store, stream};

use crate::QueueError;
use crate::names::{JOBS_STREAM, JOURNAL_STREAM, RUNS_BUCKET, STATE_BUCKET};

/// Where the server is and how to log in. The URL may carry `user:pass@`: it is only ever
/// shown through [`redact_url`].
#[derive(Clone, Debug)]
pub struct QueueOptions {
    pub url: String,
    /// A NATS credentials file (JWT + nkey seed).
    pub creds: Option<PathBuf>,
    /// Copies of each stream and bucket when they are created (3 on a 3-node cluster).
    pub replicas: usize,
    /// The client's name as the server shows it (`planwave worker host-1234`).
    pub client_name: String,
}

/// The URL with any user, password or token replaced by `***`.
pub fn redact_url(url: &str) -> String {
    url.split(',')
        .map(|one| match (one.find("://"), one.rfind('@')) {
            (Some(scheme), Some(at)) if at > scheme => {
                format!("{}***{}", &one[..scheme + 3], &one[at..])
            }
            (None, Some(at)) => format!("***{}", &one[at..]),
            _ => one.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The opened queue: the JetStream context and every stream and bucket of it.
#[derive(Clone)]
pub struct Queue {
    pub(crate) client: async_nats::Client,
    pub(crate) js: jetstream::Context,
    pub(crate) jobs: stream::Stream,
    pub(crate) journal: stream::Stream,
    pub(crate) state: kv::Store,
    pub(crate) runs: object_store::ObjectStore,
}

impl Queue {
    /// Connects (failing within a few seconds when nothing answers) and opens the streams
    /// and buckets, creating the missing ones. Once connected, the client reconnects on its
    /// own forever: a restarted server is picked up again.
    pub async fn connect(o: &QueueOptions) -> crate::Result<Queue> {
        let shown = redact_url(&o.url);
        let mut options = async_nats::ConnectOptions::new()
            .name(&o.client_name)
            .connection_timeout(Duration::from_secs(5))
            .max_reconnects(None);
        if let Some(creds) = &o.creds {
            options = options.credentials_file(creds).await.map_err(|e| {
                QueueError::of(
                    &format!("reading the credentials file {}", creds.display()),
                    e,
                )
            })?;
        }
        let client = options
            .connect(o.url.as_str())
            .await
            .map_err(|e| QueueError::of(&format!("connecting to NATS at {shown}"), e))?;
        let js = jetstream::new(client.clone());
        Queue::open(client, js, o.replicas.max(1))
            .await
            .map_err(|e| QueueError::new(format!("{e} (NATS at {shown}; is JetStream on: -js?)")))
    }

    async fn open(
        client: async_nats::Client,
        js: jetstream::Context,
        replicas: usize,
    ) -> crate::Result<Queue> {
        let jobs = js
            .get_or_create_stream(stream::Config {
                name: JOBS_STREAM.into(),
                subjects: vec!["planwave.jobs.>".into()],
                retention: stream::RetentionPolicy::WorkQueue,
                storage: stream::StorageType::File,
                num_replicas: replicas,
                duplicate_window: Duration::from_secs(120),
                ..Default::default()
            })
            .await
            .map_err(|e| QueueError::of("opening the job stream", e))?;
        let journal = js
            .get_or_create_stream(stream::Config {
                name: JOURNAL_STREAM.into(),
                subjects: vec!["planwave.journal.>".into()],
                storage: stream::StorageType::File,
                num_replicas: replicas,
                duplicate_window: Duration::from_secs(120),
                ..Default::default()
            })
            .await
            .map_err(|e| QueueError::of("opening the journal stream", e))?;
        let state = match js.get_key_value(STATE_BUCKET).await {
            Ok(kv) => kv,
            Err(_) => js
                .create_key_value(kv::Config {
                    bucket: STATE_BUCKET.into(),
                    history: 1,
                    storage: stream::StorageType::File,
                    num_replicas: replicas,
                    ..Default::default()
                })
                .await
                .map_err(|e| QueueError::of("opening the job state bucket", e))?,
        };
        let runs = match js.get_object_store(RUNS_BUCKET).await {
            Ok(os) => os,
            Err(_) => js
                .create_object_store(object_store::Config {
                    bucket: RUNS_BUCKET.into(),
                    storage: stream::StorageType::File,
                    num_replicas: replicas,
                    ..Default::default()
                })
                .await
                .map_err(|e| QueueError::of("opening the run store", e))?,
        };
        Ok(Queue {
            client,
            js,
            jobs,
            journal,
            state,
            runs,
        })
    }

    /// Waits until everything published is on the server.
    pub async fn flush(&self) -> crate::Result<()> {
        self.client
            .flush()
            .await
            .map_err(|e| QueueError::of("flushing to NATS", e))
    }
}

#[cfg(test)]
mod tests {
    use super::redact_url;

    #[test]
    fn credentials_in_urls_are_hidden() {
        assert_eq!(
            redact_url("nats://alice:s3cret@10.0.0.1:4222"),
            "nats://***@10.0.0.1:4222"
        );
        assert_eq!(
            redact_url("tls://tok@a:1,nats://b:2"),
            "tls://***@a:1,nats://b:2"
        );
        assert_eq!(redact_url("u:p@h:4222"), "***@h:4222");
        assert_eq!(redact_url("nats://127.0.0.1:4222"), "nats://127.0.0.1:4222");
    }
}
