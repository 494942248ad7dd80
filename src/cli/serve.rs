//! `planwave serve [--addr 127.0.0.1:8080] [--data DIR]`: the HTTP API and web view
//! (crates/serve). Here only the flags, the first line of stdout (the base URL, so
//! `--addr 127.0.0.1:0` can be scripted) and how a job's command line becomes settings:
//! parsed by this binary's own parser, so a request's options mean what the flags mean.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, Parser};
use planwave_runner::{CtrlC, InvalidInput, Resources, Stderr};
use planwave_serve::{Front, JobSetup, ServeConfig, Server};

use super::exit::Outcome;
use super::llm::{self, MaxRounds};
use super::{Cli, Command};

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
}

/// The token every request must carry (required off loopback).
const TOKEN_ENV: &str = "PLANWAVE_SERVE_TOKEN";

/// Job command lines parsed as this binary parses its own.
struct CliFront {
    /// The server's own flags every job gets (absolute paths), recorded in its
    /// invocation.json so `planwave resume` sees the same model and tools.
    base: Vec<String>,
}

fn problems(e: InvalidInput) -> Vec<String> {
    e.problems
        .into_iter()
        .map(|p| format!("{}: {p}", e.source_name))
        .collect()
}

impl Front for CliFront {
    fn job(&self, argv: &[String]) -> Result<JobSetup, Vec<String>> {
        let mut args = vec!["planwave".to_owned()];
        let (head, rest) = argv
            .split_first()
            .ok_or_else(|| vec!["empty command line".to_owned()])?;
        args.push(head.clone());
        // The server's flags first: a job's own (recorded) flags come after and win.
        if !argv
            .iter()
            .any(|a| a.starts_with("--config") || a.starts_with("--mcp-config"))
        {
            args.extend(self.base.iter().cloned());
        }
        args.extend(rest.iter().cloned());
        let cli = Cli::try_parse_from(args).map_err(|e| {
            e.to_string()
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more"))
                .map(|l| l.trim_start_matches("error: ").to_owned())
                .collect::<Vec<_>>()
        })?;
        match cli.command {
            Command::Run(a) => {
                let settings = llm::settings(&[&a.job]).map_err(problems)?;
                let sim = a
                    .job
                    .model
                    .sim
                    .sim_config(settings.run.seed)
                    .map_err(problems)?;
                Ok(JobSetup {
                    settings,
                    sim,
                    goal: None,
                    recover: a.recover,
                    stream_plan: false,
                })
            }
            Command::Research(a) => {
                let settings =
                    llm::settings(&[&a.job, &a.planner, &a.plan_cache, &MaxRounds(a.max_rounds)])
                        .map_err(problems)?;
                let sim = a
                    .job
                    .model
                    .sim
                    .sim_config(settings.run.seed)
                    .map_err(problems)?;
                Ok(JobSetup {
                    settings,
                    sim,
                    goal: Some(a.goal),
                    recover: false,
                    stream_plan: !a.no_stream_plan,
                })
            }
            _ => Err(vec!["not a run or research command line".into()]),
        }
    }

    fn server_args(&self) -> Vec<String> {
        self.base.clone()
    }
}

fn absolute(flag: &str, path: &Option<PathBuf>) -> anyhow::Result<Option<String>> {
    let Some(p) = path else { return Ok(None) };
    let abs = std::path::absolute(p)?;
    Ok(Some(format!("--{flag}={}", abs.display())))
}

pub async fn serve(args: ServeArgs) -> anyhow::Result<Outcome> {
    let base: Vec<String> = [
        absolute("config", &args.config)?,
        absolute("mcp-config", &args.mcp_config)?,
    ]
    .into_iter()
    .flatten()
    .collect();
    let front = Arc::new(CliFront { base });
    // The shared model client and MCP servers, from the server's own flags.
    let data = args.data.display().to_string();
    let setup = front
        .job(&["run".into(), "--out".into(), data, "--".into(), "-".into()])
        .map_err(|p| InvalidInput {
            source_name: "serve".into(),
            problems: p,
        })?;
    let resources = Resources::prepare(
        &setup.settings,
        setup.sim.clone(),
        super::telemetry::traced,
        &Stderr,
    )?;
    let interrupt = CtrlC::listen();
    let resources = resources
        .start_mcp(setup.settings.mcp.as_ref(), false, &Stderr)
        .await;
    let config = ServeConfig {
        addr: args.addr,
        data: args.data.clone(),
        token: std::env::var(TOKEN_ENV).ok(),
        max_body: usize::try_from(args.max_body.as_u64()).unwrap_or(usize::MAX),
    };
    resources
        .scope(async |resources| {
            let server = Server::bind(config, front.clone(), resources.clone()).await?;
            // The first line of stdout, for scripts and tests.
            println!("{}", server.url());
            eprintln!(
                "planwave serve: runs in {}; Ctrl-C stops (running jobs stay resumable)",
                args.data.display()
            );
            let token = interrupt.token();
            server.run(async move { token.cancelled().await }).await?;
            eprintln!("planwave serve: stopped");
            Ok::<_, anyhow::Error>(Outcome(super::exit::OK))
        })
        .await
}
