//! Load tests of the engine: build a workload (a generated or given plan plus a latency per
//! task), run it through [`planwave_engine::execute`] with any [`LlmProvider`], and measure
//! what matters: makespan against the critical-path and wave-barrier lower bounds,
//! throughput, dispatch latency, memory and model calls.
//!
//! The provider is wrapped in a [`Probe`] that timestamps every model call, so the figures
//! come from the calls the engine really made, whichever provider answers (the in-process
//! simulator or an OpenAI-compatible server over HTTP).
//!
//! This crate knows nothing of the command line; it never decides latency itself (the
//! provider does), it only knows what the workload planned.
//!
//! [`LlmProvider`]: planwave_llm::LlmProvider

mod arrivals;
mod bounds;
mod compare;
mod html;
mod probe;
mod report;
mod rss;
mod run;
mod serving;
mod serving_table;
mod svg;
mod timeline;
mod workload;

pub use arrivals::{gamma_arrivals, per_copy, replicate};
pub use bounds::{Bounds, critical_path_bound, wave_barrier_bound};
pub use compare::{CompareRow, compare, render_compare_html, render_compare_table};
pub use html::{HtmlInput, render_html};
pub use probe::{Probe, ProbeSnapshot};
pub use report::{Distribution, LoadReport, render_load_table};
pub use rss::{current_rss_bytes, peak_rss_bytes, reset_peak_rss};
pub use run::{LoadError, LoadRequest, ServingOptions, run};
pub use serving::{
    CallRecord, Percentiles, ServerSide, ServingReport, Slo, error_class, knee, parse_ms,
};
pub use serving_table::render_serving_table;
pub use timeline::{TaskTiming, Timeline, TimelineHeader, monotonic_now_ns, timings};
pub use workload::{
    LatencyModel, LatencyModelError, Shape, check_latency_ids, generate, planned_latencies,
};
