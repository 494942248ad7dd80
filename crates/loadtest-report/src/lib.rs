//! The load tester's results drawn for people and programs: a sweep as text
//! ([`render_sweep_text`]: the workload line, the run and serving tables, the knee, the
//! saturation check; [`render_turns`] per turn of a session workload), as the `--json`
//! document ([`JsonReport`]), as CSV rows ([`render_csv`]), one row per request
//! ([`render_requests_jsonl`], [`render_requests_csv`]) and as one self-contained HTML
//! page of inline SVG charts ([`render_sweep_html`]); and saved `--json` outputs read back
//! ([`read_saved`]), compared ([`compare`]) or summed up over repeats ([`repeat_estimates`]).
//!
//! It only presents what `planwave-loadtest` measured: it runs nothing, sends nothing and
//! knows no command line; the HTML it writes fetches nothing either (no script, no fonts).

mod csv;
mod html;
mod json;
mod requests;
mod saved;
#[cfg(test)]
mod test_data;
mod text;

pub use csv::render_csv;
pub use html::render_sweep_html;
pub use json::{JsonReport, WorkloadDoc};
pub use requests::{render_requests_csv, render_requests_jsonl};
pub use saved::compare::{
    CompareRow, SavedError, compare, read_saved, render_compare_html, render_compare_table,
};
pub use saved::repeat::{Estimate, repeat_estimates};
pub use text::{render_sweep_text, render_turns};
