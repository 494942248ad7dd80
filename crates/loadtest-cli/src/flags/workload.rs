//! `planwave loadtest` request options (issue 37): per-request output bounds, a model's
//! tokenizer, multi-turn sessions with think time, request headers, cancelled streams and
//! the endpoint (chat, completions, embeddings). The flags are checked here and become the
//! load test's [`Shaping`], its session plan, and the endpoint's client.

use std::path::PathBuf;
use std::sync::Arc;

use clap::{Args, ValueEnum};
use planwave_llm::LlmProvider;
use planwave_runner::ops::InvalidInput;

use planwave_loadtest::{
    EndpointKind, LatencyModel, PlanChoice, RequestHeaders, Session, SessionMap, Shaping,
    TextEndpoint, TextEndpointConfig, TokenCount, TokenCounter, Traffic,
};
use planwave_prompts::PromptSet;

use super::LoadtestArgs;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum EndpointArg {
    /// POST /chat/completions (messages).
    Chat,
    /// POST /completions: the messages' texts joined as one prompt.
    Completions,
    /// POST /embeddings: the messages' texts joined as one input.
    Embeddings,
}

#[derive(Debug, Args)]
pub(crate) struct WorkloadOptions {
    /// Bound each request's answer with its own `max_tokens`, drawn from a normal
    /// distribution of this mean and spread (`256,64`; `256` for all alike), seeded by
    /// --seed. A trace's GeneratedTokens are sent so without it.
    #[arg(long, value_name = "MEAN,SPREAD")]
    pub(crate) output_tokens: Option<TokenCount>,
    /// A Hugging Face tokenizer.json: synthetic prompts (--input-tokens, --turns, --trace)
    /// are sized in its tokens, and the tokens of a request whose endpoint reports no usage
    /// are counted with it (else estimated).
    #[arg(long, value_name = "FILE")]
    pub(crate) tokenizer: Option<PathBuf>,
    /// With --dataset: replay every user turn of each conversation (ShareGPT or `messages`),
    /// each turn sent with the earlier turns and the endpoint's answers to them.
    #[arg(long, requires = "dataset")]
    pub(crate) multi_turn: bool,
    /// Synthetic multi-turn sessions: each conversation has a number of turns drawn from
    /// this mean and spread (`4,1`), each turn an --input-tokens prompt.
    #[arg(
        long,
        value_name = "MEAN,SPREAD",
        requires = "input_tokens",
        conflicts_with = "multi_turn"
    )]
    pub(crate) turns: Option<TokenCount>,
    /// With --multi-turn or --turns: how many conversations (default: the dataset's, or 10);
    /// --rate R starts them at R per second (several rates: a sweep, saturation checked in
    /// conversations).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub(crate) sessions: Option<u64>,
    /// With --multi-turn or --turns: the wait between an answer and the next turn, fixed:MS
    /// or lognormal:MEAN_MS:SIGMA, seeded by --seed [default: none].
    #[arg(long, value_name = "MODEL", value_parser = super::traffic::parse_latency)]
    pub(crate) think_time: Option<LatencyModel>,
    /// With --llm-url: add this header to every request (`-H 'X-Tenant: acme'`; repeatable).
    /// The values of credential headers (Authorization, *-Key, *-Token, Cookie) are never
    /// shown.
    #[arg(
        short = 'H',
        long = "header",
        value_name = "NAME: VALUE",
        requires = "llm_url"
    )]
    pub(crate) headers: Vec<String>,
    /// Cancel this share of streamed requests mid-stream (0.05: one in twenty), as users
    /// closing a tab: the connection is closed after 1 to 8 chunks of the answer. Counted as
    /// `cancelled`, not as errors.
    #[arg(long, value_name = "F", value_parser = planwave_config::parse_share)]
    pub(crate) cancel_rate: Option<f64>,
    /// With --llm-url: the API the requests go to: chat (/chat/completions), completions
    /// (/completions, the messages' texts as one prompt) or embeddings (/embeddings).
    #[arg(long, value_enum, default_value = "chat")]
    pub(crate) endpoint: EndpointArg,
}

impl WorkloadOptions {
    fn sessions_asked(&self) -> bool {
        self.multi_turn || self.turns.is_some()
    }
}

/// The tokenizer of `--tokenizer`, loaded once.
pub(crate) fn tokenizer(a: &LoadtestArgs) -> anyhow::Result<Option<Arc<TokenCounter>>> {
    match &a.workload.tokenizer {
        None => Ok(None),
        Some(path) => TokenCounter::load(path)
            .map(|t| Some(Arc::new(t)))
            .map_err(|e| InvalidInput::one("--tokenizer", e.to_string()).into()),
    }
}

/// The headers of `-H`, checked.
pub(crate) fn headers(a: &LoadtestArgs) -> anyhow::Result<RequestHeaders> {
    RequestHeaders::parse(&a.workload.headers)
        .map_err(|e| InvalidInput::one("-H/--header", e.to_string()).into())
}

/// Options that contradict each other or the endpoint.
pub(crate) fn check(a: &LoadtestArgs) -> anyhow::Result<()> {
    let w = &a.workload;
    let bad = |flag: &str, problem: &str| -> anyhow::Result<()> {
        Err(InvalidInput::one(flag, problem).into())
    };
    if w.endpoint != EndpointArg::Chat && a.llm_url.is_none() {
        return bad("--endpoint", "completions and embeddings need --llm-url");
    }
    if w.cancel_rate.is_some_and(|r| r > 0.0) {
        if a.no_stream {
            return bad(
                "--cancel-rate",
                "only streamed requests can be cancelled mid-stream: leave out --no-stream",
            );
        }
        if w.endpoint == EndpointArg::Embeddings {
            return bad("--cancel-rate", "embeddings are not streamed");
        }
    }
    if !w.sessions_asked() && (w.sessions.is_some() || w.think_time.is_some()) {
        return bad(
            "--sessions/--think-time",
            "they are for multi-turn sessions: give --multi-turn (with --dataset) or --turns",
        );
    }
    Ok(())
}

/// What the sessions flags make: the plan, its prompts and the map of its turns.
pub(crate) struct SessionSetup {
    pub(crate) plan: PlanChoice,
    pub(crate) prompts: Arc<dyn PromptSet>,
    pub(crate) map: Arc<SessionMap>,
}

/// The session workload, when --multi-turn or --turns asks for one. The traffic's rates
/// become the conversations' start rates (several: a sweep, each rate starting the same
/// conversations).
pub(crate) fn sessions(
    a: &LoadtestArgs,
    traffic: &mut Traffic,
    tokenizer: Option<&TokenCounter>,
) -> anyhow::Result<Option<SessionSetup>> {
    let w = &a.workload;
    if !w.sessions_asked() {
        return Ok(None);
    }
    let conflict = |what: &str| {
        InvalidInput::one(
            "--multi-turn/--turns",
            format!("sessions set the requests: leave out {what}"),
        )
    };
    if a.plan.is_some() || a.trace.is_some() {
        return Err(conflict("--plan and --trace").into());
    }
    if traffic.requests.is_some() || traffic.duration.is_some() || traffic.plan_rate.is_some() {
        return Err(conflict(
            "--requests, --duration and --plan-rate (--sessions N sets how many)",
        )
        .into());
    }
    let given: Vec<Session> = match (&a.dataset, &w.turns, &a.input_tokens) {
        (Some(path), _, _) => planwave_loadtest::read_sessions(path)
            .map_err(|e| InvalidInput::one("--dataset", e.to_string()))?,
        (None, Some(turns), Some(input)) => {
            let n = w.sessions.unwrap_or(DEFAULT_SESSIONS) as usize;
            planwave_loadtest::synthetic_sessions(turns, input, n, a.seed, tokenizer)
                .map_err(|e| InvalidInput::one("--turns/--input-tokens/--sessions", e))?
        }
        _ => return Err(InvalidInput::one("--turns", "needs --input-tokens").into()),
    };
    let count = w.sessions.map_or(given.len(), |n| n as usize);
    let builtin: Arc<dyn PromptSet> = Arc::new(planwave_prompts::Templates::builtin());
    let s = planwave_loadtest::session_workload(&given, count, w.think_time, a.seed, builtin)
        .map_err(|e| InvalidInput::one("--sessions", e))?;
    traffic.sessions = Some(s.map.clone());
    let turns = s.plan.len();
    Ok(Some(SessionSetup {
        plan: PlanChoice::Given {
            plan: Arc::new(s.plan),
            name: format!("{count} conversations, {turns} turns"),
        },
        prompts: s.prompts,
        map: s.map,
    }))
}

/// Conversations of `--turns` when --sessions does not say.
const DEFAULT_SESSIONS: u64 = 10;

/// Per-request bounds drawn this many times at most, and cycled.
const MAX_DRAWS: usize = 1_000_000;

/// What is done to each request, when anything is: `max_tokens` per request (drawn, or a
/// trace's), cancelling, the tokenizer's counts, sessions.
pub(crate) fn shaping(
    a: &LoadtestArgs,
    requests: Option<u64>,
    trace_output: Option<Vec<u32>>,
    tokenizer: Option<Arc<TokenCounter>>,
    sessions: Option<Arc<SessionMap>>,
) -> Option<Arc<Shaping>> {
    let w = &a.workload;
    let max_tokens: Option<Arc<[u32]>> = match (&w.output_tokens, trace_output) {
        (Some(t), _) => {
            let n = requests.map_or(1024, |r| r as usize).clamp(1, MAX_DRAWS);
            // Another stream of draws than the prompts' lengths (same seed).
            let draws = t.draw(n, a.seed ^ 0x6f75_7470);
            Some(
                draws
                    .into_iter()
                    .map(|d| d.min(u32::MAX as u64) as u32)
                    .collect(),
            )
        }
        (None, Some(per_row)) => Some(per_row.into()),
        (None, None) => None,
    };
    let s = Shaping {
        max_tokens,
        cancel_rate: w.cancel_rate.unwrap_or(0.0),
        seed: a.seed,
        tokenizer,
        sessions,
    };
    (s.shapes_calls() || s.sessions.is_some()).then(|| Arc::new(s))
}

/// The client of `--endpoint completions|embeddings` at `url`, with the chat client's key
/// and timeouts.
pub(crate) fn text_endpoint(
    a: &LoadtestArgs,
    url: &str,
    settings: &planwave_config::Settings,
    headers: &RequestHeaders,
) -> anyhow::Result<Arc<dyn LlmProvider>> {
    let kind = match a.workload.endpoint {
        EndpointArg::Chat => EndpointKind::Chat,
        EndpointArg::Completions => EndpointKind::Completions,
        EndpointArg::Embeddings => EndpointKind::Embeddings,
    };
    let (api_key, timeouts) = match &settings.llm {
        planwave_config::LlmChoice::OpenAi { config, .. } => {
            (config.api_key.clone(), config.timeouts)
        }
        planwave_config::LlmChoice::Sim => (None, Default::default()),
    };
    let endpoint = TextEndpoint::new(TextEndpointConfig {
        kind,
        base_url: url.to_owned(),
        model: a.model.clone(),
        stream: !a.no_stream,
        api_key,
        headers: headers.map().clone(),
        connect_timeout: timeouts.connect,
        request_timeout: timeouts.request,
    })?;
    Ok(Arc::new(endpoint))
}

/// Whether the chat client should be replaced by a text endpoint's.
pub(crate) fn wants_text_endpoint(a: &LoadtestArgs) -> bool {
    a.workload.endpoint != EndpointArg::Chat
}

/// `-H` headers into the chat client's settings.
pub(crate) fn add_headers(settings: &mut planwave_config::Settings, headers: &RequestHeaders) {
    if let planwave_config::LlmChoice::OpenAi { config, .. } = &mut settings.llm {
        config.extra_headers = headers.map().clone();
    }
}

/// The line shown before the runs, naming what shapes the requests (credential values
/// hidden), when anything does.
pub(crate) fn describe(a: &LoadtestArgs, headers: &RequestHeaders) -> Option<String> {
    let w = &a.workload;
    let mut parts = Vec::new();
    if w.endpoint != EndpointArg::Chat {
        parts.push(format!(
            "endpoint {}",
            match w.endpoint {
                EndpointArg::Completions => "completions",
                _ => "embeddings",
            }
        ));
    }
    if !headers.is_empty() {
        parts.push(format!("headers {}", headers.shown()));
    }
    if let Some(r) = w.cancel_rate.filter(|r| *r > 0.0) {
        parts.push(format!("cancel rate {r}"));
    }
    (!parts.is_empty()).then(|| format!("planwave loadtest: requests: {}", parts.join("; ")))
}
