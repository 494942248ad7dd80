//! `planwave serve [--addr 127.0.0.1:8080] [--data DIR] [--nats URL]`: the HTTP API and web
//! view (crates/serve), running jobs here or, with `--nats`, on the queue's workers. Here
//! only the flags, the first line of stdout (the base URL, so `--addr 127.0.0.1:0` can be
//! scripted) and the host's options every job has (the server's config file and MCP
//! servers).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;
use planwave_config::spec::{HostOptions, JobOptions};
use planwave_runner::ops::{CtrlC, Stderr};
use planwave_serve::{ServeConfig, Server};

use super::exit::Outcome;
use super::job::Prepare;
use super::llm;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on; a non-loopback one requires PLANWAVE_SERVE_TOKEN.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Directory of the runs (one run directory each; created if missing).
    #[arg(long, value_name = "DIR", default_value = "runs")]
    pub data: PathBuf,
    /// The largest request body (a plan, a job file), e.g. `16MiB`; larger ones get 413.
    #[arg(long, value_name = "SIZE", default_value = "16MiB")]
    pub max_body: planwave_config::ByteSize,
    /// Config file for the model every run shares (default: $PLANWAVE_CONFIG, else
    /// ./planwave.toml if present); the model also comes from the environment as usual.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// MCP servers shared by every run (the `mcpServers` JSON format).
    #[arg(long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,
    #[command(flatten)]
    pub limits: super::serve_limits::LimitArgs,
    /// With `--nats`: what is POSTed is queued on JetStream and run by `planwave worker`s;
    /// the API and pages read every run back from JetStream (`--data` is then a cache).
    #[command(flatten)]
    pub nats: super::nats::NatsOptions,
}

/// The token every request must carry (required off loopback).
const TOKEN_ENV: &str = "PLANWAVE_SERVE_TOKEN";

fn absolute(path: &Option<PathBuf>) -> anyhow::Result<Option<PathBuf>> {
    path.as_deref()
        .map(std::path::absolute)
        .transpose()
        .map_err(Into::into)
}

/// The name the NATS server shows for this client.
fn client_name() -> String {
    format!("planwave serve {}", std::process::id())
}

pub async fn serve(args: ServeArgs) -> anyhow::Result<Outcome> {
    // The server's own options every job has, with absolute paths so a recorded job means
    // the same files wherever it is resumed from.
    let mut host = HostOptions::default();
    host.llm.config = absolute(&args.config)?;
    host.mcp.mcp_config = absolute(&args.mcp_config)?;
    // The shared model client and MCP servers, from those options (a job with a simulated
    // model gets its own, with its options).
    let job = JobOptions {
        host: host.clone(),
        ..JobOptions::default()
    };
    let settings = llm::settings(&[&job])?;
    let resources = job.resources(&settings)?;
    let interrupt = CtrlC::listen();
    let resources = resources
        .start_mcp(settings.mcp.as_ref(), false, &Stderr)
        .await;
    let queue = match &args.nats.nats {
        Some(_) => Some(args.nats.connect(&client_name()).await?),
        None => None,
    };
    let over_queue = queue.is_some();
    let config = ServeConfig {
        addr: args.addr,
        data: args.data.clone(),
        token: std::env::var(TOKEN_ENV).ok(),
        max_body: usize::try_from(args.max_body.as_u64()).unwrap_or(usize::MAX),
        host,
        limits: args.limits.limits(),
        queue,
    };
    resources
        .scope(async |resources| {
            let server = Server::bind(config, resources.clone()).await?;
            // The first line of stdout, for scripts and tests.
            println!("{}", server.url());
            if over_queue {
                eprintln!(
                    "planwave serve: runs on the queue's workers (cache in {}); Ctrl-C stops",
                    args.data.display()
                );
            } else {
                eprintln!(
                    "planwave serve: runs in {}; Ctrl-C stops (running jobs stay resumable)",
                    args.data.display()
                );
            }
            let token = interrupt.token();
            server.run(async move { token.cancelled().await }).await?;
            eprintln!("planwave serve: stopped");
            Ok::<_, anyhow::Error>(Outcome(super::exit::OK))
        })
        .await
}
