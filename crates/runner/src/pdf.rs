//! `--pdf`: `report.html` printed to `report.pdf` by a locally installed headless Chromium.
//! planwave ships no browser: it looks for one (`PLANWAVE_CHROMIUM`, else `chromium`,
//! `chromium-browser`, `google-chrome`, `google-chrome-stable` on `PATH`) and says so clearly
//! when there is none. The page needs nothing from the network, and Chromium is pointed at a
//! proxy that does not exist so that nothing could leave even if it did.

use std::path::{Path, PathBuf};
use std::time::Duration;

use planwave_storage::RunDir;

use crate::RunnerError;
use crate::error::Context;

/// Printing a report never takes this long; a hung browser is killed.
const PRINT_TIMEOUT: Duration = Duration::from_secs(120);

const NAMES: [&str; 4] = [
    "chromium",
    "chromium-browser",
    "google-chrome",
    "google-chrome-stable",
];

/// The Chromium to print with, or why there is none.
pub fn find_chromium() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("PLANWAVE_CHROMIUM") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!("PLANWAVE_CHROMIUM={} is not a file", p.display()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        for name in NAMES {
            let candidate = dir.join(name);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    Err(format!(
        "no headless Chromium found (looked for {} on PATH; set PLANWAVE_CHROMIUM to its path, \
         or install one, e.g. `apt-get install chromium`)",
        NAMES.join(", ")
    ))
}

/// Prints `DIR/report.html` to `DIR/report.pdf` (written through the run directory, so the
/// file is complete or absent); returns its path.
pub async fn print_pdf(out: &RunDir) -> crate::Result<PathBuf> {
    let chromium = find_chromium().map_err(|e| RunnerError::message(format!("--pdf: {e}")))?;
    // Chromium takes a URL: a relative `--out` (`r15/report.html`) would make
    // `file://r15/report.html`, a file on the host `r15`.
    let html = std::path::absolute(out.path("report.html")?)
        .context("finding report.html's absolute path")?;
    if !html.is_file() {
        return Err(RunnerError::message(
            "--pdf: the run wrote no report.html to print",
        ));
    }
    let scratch = std::path::absolute(tempdir_in(out.root())?)
        .context("finding the scratch directory's absolute path")?;
    let target = scratch.join("report.pdf");
    let mut cmd = tokio::process::Command::new(&chromium);
    cmd.args(chromium_args(&scratch, &target))
        .arg(file_url(&html))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let result = tokio::time::timeout(PRINT_TIMEOUT, cmd.output()).await;
    let printed = match result {
        Err(_) => Err(format!(
            "Chromium did not finish within {} s",
            PRINT_TIMEOUT.as_secs()
        )),
        Ok(Err(e)) => Err(format!("cannot run {}: {e}", chromium.display())),
        Ok(Ok(o)) if !target.is_file() => Err(format!(
            "{} wrote no PDF (exit {}): {}",
            chromium.display(),
            o.status,
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )),
        Ok(Ok(_)) => std::fs::read(&target).map_err(|e| e.to_string()),
    };
    let _ = std::fs::remove_dir_all(&scratch);
    let bytes = printed.map_err(|e| RunnerError::message(format!("--pdf: {e}")))?;
    out.write("report.pdf", &bytes)
        .context("writing report.pdf")?;
    Ok(out.root().join("report.pdf"))
}

/// Headless printing with a throwaway profile, no sandbox (root in containers has none to
/// give) and every network request sent to a proxy on the discard port.
fn chromium_args(profile: &Path, target: &Path) -> Vec<String> {
    vec![
        "--headless".into(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--no-first-run".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--no-pdf-header-footer".into(),
        "--proxy-server=127.0.0.1:9".into(),
        "--proxy-bypass-list=<-loopback>".into(),
        format!("--user-data-dir={}", profile.join("profile").display()),
        format!("--print-to-pdf={}", target.display()),
    ]
}

fn file_url(path: &Path) -> String {
    // Percent-encode what a file URL cannot hold literally.
    let mut url = String::from("file://");
    for b in path.to_string_lossy().bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                url.push(b as char)
            }
            other => url.push_str(&format!("%{other:02X}")),
        }
    }
    url
}

/// A scratch directory inside the run directory (same file system), removed after printing.
fn tempdir_in(root: &Path) -> crate::Result<PathBuf> {
    let dir = root.join(format!(".pdf.tmp{}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}
