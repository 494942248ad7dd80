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
        })
        .await?)
    }
}
