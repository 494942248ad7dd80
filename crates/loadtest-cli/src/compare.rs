//! `planwave loadtest --compare A.json B.json`: two saved `--json` outputs side by side.

use std::path::PathBuf;

use anyhow::Context;

use planwave_runner::ops::InvalidInput;
use planwave_runner::{eprintln, print, println};

use planwave_loadtest::SweepStatus;
use planwave_loadtest_report::{read_saved, render_compare_html, render_compare_table};

fn read(path: &std::path::Path) -> Result<serde_json::Value, InvalidInput> {
    read_saved(path).map_err(|e| InvalidInput::one(path.display().to_string(), e.to_string()))
}

/// Prints (and with `html`, plots) the ratios B/A of two saved runs.
pub(crate) fn compare(
    files: &[PathBuf],
    json: bool,
    html: Option<&PathBuf>,
) -> anyhow::Result<SweepStatus> {
    let [a, b] = files else {
        return Err(InvalidInput::one("--compare", "give two files: A.json B.json").into());
    };
    let rows = planwave_loadtest_report::compare(&read(a)?, &read(b)?);
    let (an, bn) = (a.display().to_string(), b.display().to_string());
    if json {
        let out = serde_json::json!({"a": an, "b": bn, "rows": rows});
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!("A: {an}\nB: {bn}");
        print!("{}", render_compare_table(&rows, "A", "B"));
    }
    if let Some(path) = html {
        std::fs::write(path, render_compare_html(&rows, &an, &bn))
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("planwave loadtest: wrote {}", path.display());
    }
    Ok(SweepStatus::Completed)
}
