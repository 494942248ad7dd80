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
    /// Limits of the journal stream, set when given (on a new stream, and on an existing
    /// one whose limits differ); `None` keeps what the stream has (none on a new one).
    pub journal: JournalLimits,
}

/// How much of the journal stream (`PLANWAVE_JOURNAL`: every run's events, one subject per
/// run) the server keeps. A run's journal is what a worker taking it over resumes from, and
/// what `serve --nats` shows, so the age should outlast the longest run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JournalLimits {
    /// Messages older than this are dropped.
    pub max_age: Option<Duration>,
    /// Beyond this many bytes the oldest messages are dropped.
    pub max_bytes: Option<u64>,
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

/// The KV bucket `name` whose entries expire after `max_age` (leases, rate windows), created
/// with the queue's replicas when it cannot be opened.
pub(crate) async fn shared_bucket(
    q: &Queue,
    name: &str,
    max_age: Duration,
    what: &str,
) -> crate::Result<kv::Store> {
    match q.js.get_key_value(name).await {
        Ok(kv) => Ok(kv),
        Err(_) => {
            q.js.create_key_value(kv::Config {
                bucket: name.into(),
                history: 1,
                max_age,
                storage: stream::StorageType::File,
                num_replicas: q.replicas,
                ..Default::default()
            })
            .await
            .map_err(|e| QueueError::of(what, e))
        }
    }
}

/// A bucket key for an endpoint: a hash of its redacted URL, so the key says nothing about
/// the endpoint's credentials.
pub(crate) fn endpoint_key(kind: &str, scope: &str) -> String {
    format!(
        "{kind}.{:016x}",
        planwave_record::stable_hash(0, &planwave_redact::redact_url(scope), 0)
    )
}

/// The journal stream, created with `limits`, or given them when it has others.
async fn open_journal(
    js: &jetstream::Context,
    replicas: usize,
    limits: JournalLimits,
) -> crate::Result<stream::Stream> {
    let mut config = stream::Config {
        name: JOURNAL_STREAM.into(),
        subjects: vec!["planwave.journal.>".into()],
        storage: stream::StorageType::File,
        num_replicas: replicas,
        duplicate_window: Duration::from_secs(120),
        ..Default::default()
    };
    let apply = |c: &mut stream::Config| {
        if let Some(age) = limits.max_age {
            c.max_age = age;
            // The server refuses a dedup window longer than the age.
            c.duplicate_window = c.duplicate_window.min(age);
        }
        if let Some(bytes) = limits.max_bytes {
            c.max_bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
        }
    };
    apply(&mut config);
    let mut journal = js
        .get_or_create_stream(config)
        .await
        .map_err(|e| QueueError::of("opening the journal stream", e))?;
    let mut wanted = journal.cached_info().config.clone();
    apply(&mut wanted);
    if wanted != journal.cached_info().config {
        js.update_stream(&wanted)
            .await
            .map_err(|e| QueueError::of("setting the journal stream's limits", e))?;
        journal = js
            .get_stream(JOURNAL_STREAM)
            .await
            .map_err(|e| QueueError::of("opening the journal stream", e))?;
    }
    Ok(journal)
}

/// Whether the server has the stream; `Err` when it cannot tell.
async fn stream_exists(js: &jetstream::Context, name: &str) -> crate::Result<bool> {
    match js.get_stream(name).await {
        Ok(_) => Ok(true),
        Err(e) => match e.kind() {
            jetstream::context::GetStreamErrorKind::JetStream(j)
                if j.error_code() == jetstream::ErrorCode::STREAM_NOT_FOUND =>
            {
                Ok(false)
            }
            _ => Err(QueueError::of(&format!("looking up {name}"), e)),
        },
    }
}

/// Login from the URLs' `user:pass@` (or `token@`), and the URLs without it: the client
/// takes credentials from its options, not from the address.
fn split_credentials(url: &str) -> (String, Option<(String, Option<String>)>) {
    let mut login = None;
    let clean = url
        .split(',')
        .map(|one| {
            let one = one.trim();
            let start = one.find("://").map_or(0, |i| i + 3);
            match one[start..].rfind('@') {
                Some(at) => {
                    let info = &one[start..start + at];
                    if login.is_none() {
                        login = Some(match info.split_once(':') {
                            Some((u, p)) => (percent_decode(u), Some(percent_decode(p))),
                            None => (percent_decode(info), None),
                        });
                    }
                    format!("{}{}", &one[..start], &one[start + at + 1..])
                }
                None => one.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join(",");
    (clean, login)
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16)
        {
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
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
    /// Copies of a stream or bucket this client creates.
    pub(crate) replicas: usize,
}

impl std::fmt::Debug for Queue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Queue")
            .field("replicas", &self.replicas)
            .finish_non_exhaustive()
    }
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
        let (url, login) = split_credentials(&o.url);
        match login {
            Some((user, Some(pass))) => options = options.user_and_password(user, pass),
            Some((token, None)) => options = options.token(token),
            None => {}
        }
        if let Some(creds) = &o.creds {
            options = options.credentials_file(creds).await.map_err(|e| {
                QueueError::of(
                    &format!("reading the credentials file {}", creds.display()),
                    e,
                )
            })?;
        }
        let servers = url
            .split(',')
            .map(|u| u.trim().parse::<async_nats::ServerAddr>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| QueueError::of(&format!("NATS URL {shown}"), e))?;
        let client = options
            .connect(servers)
            .await
            .map_err(|e| QueueError::of(&format!("connecting to NATS at {shown}"), e))?;
        let js = jetstream::new(client.clone());
        // A cluster that just lost a node answers nothing for a moment: a few tries.
        let mut tries = 0;
        loop {
            match Queue::open(client.clone(), js.clone(), o.replicas.max(1), o.journal).await {
                Ok(q) => return Ok(q),
                Err(e) if tries >= 10 => {
                    return Err(QueueError::new(format!(
                        "{e} (NATS at {shown}; is JetStream on: -js?)"
                    )));
                }
                Err(e) => {
                    tracing::debug!(error = %e, "opening the queue; trying again");
                    tries += 1;
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            }
        }
    }

    async fn open(
        client: async_nats::Client,
        js: jetstream::Context,
        replicas: usize,
        limits: JournalLimits,
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
        let journal = open_journal(&js, replicas, limits).await?;
        // Created only when the server says they do not exist: a bucket that cannot be read
        // right now (a cluster electing a leader) is an error to retry, not one to recreate.
        let state = if stream_exists(&js, &format!("KV_{STATE_BUCKET}")).await? {
            js.get_key_value(STATE_BUCKET)
                .await
                .map_err(|e| QueueError::of("opening the job state bucket", e))?
        } else {
            js.create_key_value(kv::Config {
                bucket: STATE_BUCKET.into(),
                history: 1,
                storage: stream::StorageType::File,
                num_replicas: replicas,
                ..Default::default()
            })
            .await
            .map_err(|e| QueueError::of("opening the job state bucket", e))?
        };
        let runs = if stream_exists(&js, &format!("OBJ_{RUNS_BUCKET}")).await? {
            js.get_object_store(RUNS_BUCKET)
                .await
                .map_err(|e| QueueError::of("opening the run store", e))?
        } else {
            js.create_object_store(object_store::Config {
                bucket: RUNS_BUCKET.into(),
                storage: stream::StorageType::File,
                num_replicas: replicas,
                ..Default::default()
            })
            .await
            .map_err(|e| QueueError::of("opening the run store", e))?
        };
        Ok(Queue {
            client,
            js,
            jobs,
            journal,
            state,
            runs,
            replicas,
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
    use super::{redact_url, split_credentials};

    #[test]
    fn credentials_are_taken_out_of_urls() {
        let (url, login) = split_credentials("nats://al%40ce:p%3Aw@h:1, nats://h2:2");
        assert_eq!(url, "nats://h:1,nats://h2:2");
        assert_eq!(login, Some(("al@ce".into(), Some("p:w".into()))));
        let (url, login) = split_credentials("tls://tok@h:1");
        assert_eq!(url, "tls://h:1");
        assert_eq!(login, Some(("tok".into(), None)));
        assert_eq!(split_credentials("h:1"), ("h:1".into(), None));
    }

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
