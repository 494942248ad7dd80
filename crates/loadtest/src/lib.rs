//! Load tests of the engine: build a workload (a generated or given plan plus a latency per
//! task), run it through [`planwave_engine::execute`] with any [`LlmProvider`], and measure
//! what matters: makespan against the critical-path and wave-barrier lower bounds,
//! throughput, dispatch latency, memory and model calls.
//!
//! [`run_sweep`] is the load test as one operation (cargo's `ops` habit): a [`SweepOptions`]
//! in (workload, [`Endpoint`], [`Traffic`], schedules), every point of a sweep over rate or
//! concurrency run in turn until done or cancelled, a [`SweepOutcome`] out (each run's
//! [`LoadReport`], the workload, the knee and the saturation check); [`run()`] is one run.
//!
//! The modules, by concern: `workload` (plans, latency models, data, traces, multi-turn
//! sessions, a tokenizer's counts), `traffic` (arrival processes, sweep points), `endpoint`
//! (who answers over HTTP: [`TextEndpoint`], [`RequestHeaders`], the I/O threads, the
//! endpoint's own stats and scraped metrics), `probe` (the [`Probe`] that timestamps every
//! model call, [`Shaping`] of each request, live histograms, the timeline), `run`, `sweep`,
//! and `figures` (what a run measured: serving metrics, percentiles, knee, saturation).
//!
//! Its results are data: drawing them (tables, JSON, CSV, HTML) is `planwave-loadtest-report`'s
//! job, and the command line is `planwave-loadtest-cli`'s; this crate knows neither clap nor
//! the simulator's HTTP server. It never decides latency itself (the provider does), it only
//! knows what the workload planned.
//!
//! [`LlmProvider`]: planwave_llm::LlmProvider

mod endpoint;
mod figures;
mod probe;
mod run;
mod sweep;
mod traffic;
mod workload;

pub use endpoint::headers::{HeaderError, RequestHeaders};
pub use endpoint::scrape::{
    DEFAULT_SERIES, MAX_SCRAPE_BYTES, MAX_SERIES, MetricsSample, ScrapeDropped, ScrapeTarget,
};
pub use endpoint::text::{EndpointKind, TextEndpoint, TextEndpointConfig};
pub use figures::cache::{CACHED_SHARE_WARNING, CacheFigures, ServerClock};
pub use figures::knee::{KneeMetric, SweepPoint, SweepSummary};
pub use figures::load_report::LoadReport;
pub use figures::percentiles::{Distribution, Percentiles};
pub use figures::saturation::{
    PointCheck, RateUnit, SaturationReason, SaturationReport, SaturationRule,
};
pub use figures::serving::{CallRecord, ServerSide, ServingReport, Slo};
pub use figures::turns::TurnFigures;
pub use planwave_llm::ServerTimings;
pub use probe::Probe;
pub use probe::live::LiveSnapshot;
pub use probe::shaping::Shaping;
pub use probe::timeline::{TaskTiming, Timeline, TimelineHeader};
pub use run::{LoadError, LoadRequest, ServingOptions, run};
pub use sweep::{
    Connect, DEFAULT_LATENCY, Endpoint, LatencyFile, PlanChoice, RunStart, SweepError,
    SweepOptions, SweepOutcome, SweepStatus, SweepWatch, WorkloadInfo, run_sweep,
};
pub use traffic::{Traffic, TrafficError};
pub use workload::dataset::{
    DataPrompts, DatasetError, TokenCount, prompt_lengths, prompts_of_lengths, read_dataset,
    synthetic_prompts,
};
pub use workload::limits::{
    MAX_PROMPT_TOKENS, MAX_PROMPT_TOKENS_TOTAL, MAX_TRACE_SPAN, MAX_TURNS_PER_SESSION, SPEED_RANGE,
    parse_speed,
};
pub use workload::sessions::{
    Session, SessionMap, SessionWorkload, read_sessions, session_workload, synthetic_sessions,
};
pub use workload::synthetic::{SharedPrefix, SyntheticPrompts, SyntheticSpec};
pub use workload::tokenizer::{TokenCounter, TokenizerError};
pub use workload::trace::{TraceError, TraceRequest, parse_trace, read_trace, trace_arrivals};
pub use workload::{LatencyModel, LatencyModelError, Shape, planned_latencies};
