//! `--nats URL`, `--nats-creds FILE` and `--replicas N`: where the queue is. The URL may
//! carry `user:pass@`; it is only ever shown redacted.

use std::path::PathBuf;

use clap::Args;
use planwave_queue::{Queue, QueueOptions};

#[derive(Debug, Args, Clone)]
pub struct NatsOptions {
    /// NATS server URL(s), comma-separated, e.g. `nats://127.0.0.1:4222` or
    /// `nats://user:pass@host:4222` (credentials are never printed or recorded).
    #[arg(
        long,
        value_name = "URL",
        env = "PLANWAVE_NATS_URL",
        hide_env_values = true
    )]
    pub nats: Option<String>,
    /// NATS credentials file (JWT and nkey seed).
    #[arg(long, value_name = "FILE", requires = "nats")]
    pub nats_creds: Option<PathBuf>,
    /// Copies of each stream and bucket when they are first created (3 on a 3-node cluster).
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=5), requires = "nats")]
    pub replicas: u64,
    /// Drop journal messages (runs' events) older than this from the journal stream, e.g.
    /// `30d`; it must outlast the longest run (default: kept until removed).
    #[arg(long, value_name = "DURATION", value_parser = journal_age, requires = "nats")]
    pub journal_max_age: Option<std::time::Duration>,
    /// Keep at most this much of the journal stream, e.g. `20GiB` (oldest dropped first).
    #[arg(long, value_name = "SIZE", requires = "nats")]
    pub journal_max_bytes: Option<planwave_config::ByteSize>,
}

/// At least a minute: a shorter age would drop a running job's journal under it.
fn journal_age(s: &str) -> Result<std::time::Duration, String> {
    let d = planwave_config::parse_duration(s)?;
    if d < std::time::Duration::from_secs(60) {
        return Err(format!("{s:?}: at least 1m"));
    }
    Ok(d)
}

impl NatsOptions {
    pub async fn connect(&self, client_name: &str) -> anyhow::Result<Queue> {
        let url = self
            .nats
            .clone()
            .ok_or_else(|| anyhow::anyhow!("--nats URL is required"))?;
        Ok(Queue::connect(&QueueOptions {
            url,
            creds: self.nats_creds.clone(),
            replicas: self.replicas as usize,
            client_name: client_name.to_owned(),
            journal: planwave_queue::JournalLimits {
                max_age: self.journal_max_age,
                max_bytes: self.journal_max_bytes.map(|b| b.as_u64()),
            },
        })
        .await?)
    }
}
