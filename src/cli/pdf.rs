//! `--pdf` of the commands that write a report: `report.html` printed by a local Chromium.

use clap::Args;
use planwave_storage::RunDir;

#[derive(Debug, Default, Args)]
pub struct PdfOptions {
    /// Also print report.html to report.pdf with a locally installed headless Chromium
    /// (PLANWAVE_CHROMIUM, else chromium on PATH); without one this fails with a message,
    /// after the run is saved.
    #[arg(long)]
    pub pdf: bool,
}

impl PdfOptions {
    /// Prints the report when asked and there is one (an interrupted run has none yet).
    pub async fn print(&self, out: &RunDir) -> anyhow::Result<()> {
        if !self.pdf {
            return Ok(());
        }
        if !out.root().join("report.html").is_file() {
            eprintln!("--pdf: no report.html yet (the run did not finish); nothing printed");
            return Ok(());
        }
        let pdf = planwave_runner::ops::print_pdf(out).await?;
        eprintln!("pdf: {}", pdf.display());
        Ok(())
    }
}
