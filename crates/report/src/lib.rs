//! A finished run as people read it: [`render_markdown`] writes `report.md` (sections in
//! dependency order, placeholders for the ones not written, the Mermaid DAG and Gantt
//! timeline, statistics, the sections the quality checks flagged), [`render_html`] turns it
//! into the self-contained `report.html` with the pictures drawn as inline SVG, and
//! [`dag_svg`]/[`gantt_svg`] give `planwave serve`'s run page the same pictures;
//! [`waves_mermaid`] draws a plan's waves before it runs (`planwave waves`);
//! [`render_run_table`] is the text table `planwave show` prints.
//! [`place_transitions`] takes the executive summary's transitions out and places each
//! before the section it leads into.
//!
//! Pure functions of a [`ValidatedPlan`](planwave_plan::ValidatedPlan) and the run's values
//! (`planwave-record`): no I/O, no async, no actors. It deliberately knows nothing of how a
//! run is executed or stored, so a front end can draw a run without linking the engine.

mod answer;
mod gantt;
mod html;
mod markdown;
mod run_table;
mod transitions;
mod warnings;

pub use answer::{answer_steps, output_markdown, step_answer};
pub use html::{dag_svg, gantt_svg, render_html};
pub use markdown::{
    ReportInput, dependency_order, mermaid_label, plain_summary, render_markdown, waves_mermaid,
};
pub use run_table::render_run_table;
pub use transitions::{Placed, place_transitions};
