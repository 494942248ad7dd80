//! Load tests of the engine: build a workload (a generated or given plan plus a latency per
//! task), run it through [`planwave_engine::execute`] with any [`LlmProvider`], and measure
//! what matters: makespan against the critical-path and wave-barrier lower bounds,
//! throughput, dispatch latency, memory and model calls.
//!
//! The provider is wrapped in a [`Probe`] that timestamps every model call, so the figures
//! come from the calls the engine really made, whichever provider answers (the in-process
//! simulator or an OpenAI-compatible server over HTTP).
//!
//! [`run_sweep`] is the load test as one operation (cargo's `ops` habit): a
//! [`SweepOptions`] in (workload, endpoint, [`Traffic`], schedules), every point of a sweep
//! over rate or concurrency run in turn until done or cancelled, a [`SweepOutcome`] out (the
//! runs, the workload, the knee as a typed [`SweepSummary`]); [`JsonReport`] is its `--json`
//! document. The endpoint's own figures come from `sim-llm serve`'s stats ([`server_stats`]).
//!
//! Beyond planwave's own prompts: workloads from data ([`read_dataset`], [`read_trace`]),
//! multi-turn sessions ([`session_workload`]), per-request shaping ([`Shaping`]: `max_tokens`,
//! cancelled streams, a real tokenizer's counts), request headers ([`RequestHeaders`]) and
//! the completions and embeddings endpoints ([`TextEndpoint`]).
//!
//! Outside module `cli` (the `planwave loadtest` command: flags, live view, printed figures,
//! behind the `cli` feature only the binary enables) this crate knows nothing of the command
//! line; it never decides latency itself (the provider does), it only knows what the
//! workload planned.
//!
//! [`LlmProvider`]: planwave_llm::LlmProvider

mod abandon;
mod arrivals;
mod bounds;
#[cfg(feature = "cli")]
pub mod cli;
mod compare;
mod csv;
mod dataset;
mod endpoints;
mod headers;
mod html;
mod html_server;
mod html_turns;
mod io_threads;
mod knee;
mod live;
mod output;
mod percentiles;
mod probe;
mod repeat;
mod report;
mod rss;
mod run;
mod saturation;
mod scrape;
mod server_stats;
mod serving;
mod serving_table;
mod sessions;
mod shaping;
mod svg;
mod sweep;
mod sweep_text;
mod timeline;
mod tokenizer;
mod trace;
mod traffic;
mod workload;

pub use arrivals::{gamma_arrivals, per_copy, replicate};
pub use bounds::{Bounds, critical_path_bound, wave_barrier_bound};
pub use compare::{
    CompareRow, SavedError, compare, read_saved, render_compare_html, render_compare_table,
};
pub use csv::render_csv;
pub use dataset::{
    DataPrompts, DatasetError, TokenCount, prompts_of_lengths, read_dataset, synthetic_prompts,
};
pub use endpoints::{EndpointKind, TextEndpoint, TextEndpointConfig};
pub use headers::{HeaderError, RequestHeaders};
pub use html::{HtmlInput, render_html};
pub use knee::{KneeMetric, SweepPoint, SweepSummary, knee, render_sweep_line};
pub use live::{AtomicHistogram, LiveLatencies, LiveSnapshot, render_live_line};
pub use output::{JsonReport, WorkloadDoc};
pub use percentiles::{Distribution, Percentiles};
pub use probe::{Probe, ProbeSnapshot};
pub use repeat::{Estimate, repeat_estimates};
pub use report::{LoadReport, render_load_table};
pub use rss::{current_rss_bytes, peak_rss_bytes, reset_peak_rss};
pub use run::{LoadError, LoadRequest, ServingOptions, run};
pub use saturation::{
    PointCheck, RateUnit, SaturationReason, SaturationReport, SaturationRule, check_point,
    check_sessions_point, inner_rate, render_saturation,
};
pub use scrape::{MetricsSample, Scraper, parse_exposition};
pub use server_stats::{server_side, server_stats};
pub use serving::{CallRecord, ServerSide, ServingReport, Slo, error_class, parse_ms};
pub use serving_table::render_serving_table;
pub use sessions::{
    MAX_TURNS_TOTAL, Session, SessionMap, SessionPrompts, SessionWorkload, TurnFigures,
    read_sessions, render_turns, session_workload, synthetic_sessions, turn_figures,
};
pub use shaping::Shaping;
pub use sweep::{
    Connect, DEFAULT_LATENCY, Endpoint, LatencyFile, PlanChoice, RunStart, SweepError,
    SweepOptions, SweepOutcome, SweepStatus, SweepWatch, WorkloadInfo, run_sweep,
};
pub use sweep_text::{render_sweep_html, render_sweep_text, render_workload_line};
pub use timeline::{TaskTiming, Timeline, TimelineHeader, monotonic_now_ns, timings};
pub use tokenizer::{TokenCounter, TokenizerError};
pub use trace::{TraceError, TraceRequest, read_trace, trace_arrivals};
pub use traffic::{Point, Traffic, TrafficError};
pub use workload::{
    LatencyModel, LatencyModelError, Shape, check_latency_ids, generate, planned_latencies,
};
