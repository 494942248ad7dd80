//! Whether a new job may write into its output directory: planwave never writes over what is
//! not its own.
//!
//! `--out .` once replaced the user's own `plan.json` and appended a second run to the first
//! one's journal. A new job's directory must be new, empty, or the directory of an earlier
//! run that the user asks to replace (`--force`, which removes that run's files and nothing
//! else); to continue an earlier run there is `resume`. The input files of the job are never
//! inside what the job will write.

use std::path::{Path, PathBuf};

use crate::InvalidInput;

use crate::own_files::{RUN_DIRS, RUN_FILES, remove_run_files};

/// One of these present at the top makes a directory a planwave directory.
const MARKERS: [&str; 4] = ["invocation.json", "run.json", "events.jsonl", "batch.json"];

/// Checks `out` for a new job reading `inputs`; with `force`, removes an earlier run's files
/// first. Nothing is created.
pub fn claim_out_dir(out: &Path, inputs: &[&Path], force: bool) -> Result<(), InvalidInput> {
    let name = out.display().to_string();
    let bad = |p: String| InvalidInput::one(&name, p);
    let meta = match std::fs::symlink_metadata(out) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(bad(format!("cannot use it as the output directory: {e}"))),
    };
    if !meta.is_dir() {
        return Err(bad(
            "is not a directory; --out names the directory a run writes (new or empty)".into(),
        ));
    }
    for input in inputs {
        let written = RUN_FILES.iter().chain(RUN_DIRS.iter());
        if written.into_iter().any(|f| inside(input, &out.join(f))) {
            return Err(bad(format!(
                "holds the input {}, which the run would write over; choose another --out",
                input.display()
            )));
        }
    }
    let entries: Vec<std::ffi::OsString> = std::fs::read_dir(out)
        .map_err(|e| bad(format!("cannot read the output directory: {e}")))?
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    if entries.is_empty() {
        return Ok(());
    }
    // A run killed before its first file left only its lock and `sections/`: still a run
    // directory. (A user's own `plan.json` or `report.md` are not evidence of one.)
    let only_ours = out.join(".lock").exists()
        && entries
            .iter()
            .all(|name| name == ".lock" || name == "sections");
    if !only_ours && !MARKERS.iter().any(|m| out.join(m).exists()) {
        return Err(bad(
            "is not empty and is not a planwave run directory; choose a new or empty directory"
                .into(),
        ));
    }
    if !force {
        return Err(bad(format!(
            "holds an earlier run; `planwave resume {name}` continues it, --force replaces it"
        )));
    }
    // Never remove the files of a run another process is driving (a batch's job, say).
    let lock = planwave_storage::RunLock::acquire(out).map_err(|e| bad(e.to_string()))?;
    let removed = remove_run_files(out);
    drop(lock);
    removed.map_err(|e| bad(format!("cannot remove the earlier run: {e}")))
}

/// Whether `path` is `dir` or inside it, comparing resolved paths (symlinks, `..`).
pub fn inside(path: &Path, dir: &Path) -> bool {
    match (resolved(path), resolved(dir)) {
        (Some(p), Some(d)) => p.starts_with(d),
        _ => false,
    }
}

/// `path` made absolute, `.` and `..` applied, and its longest existing part resolved
/// (symlinks), so a path that does not exist yet can still be compared.
fn resolved(path: &Path) -> Option<PathBuf> {
    use std::path::Component;
    let abs = std::env::current_dir().ok()?.join(path);
    let mut lexical = PathBuf::new();
    for c in abs.components() {
        match c {
            Component::ParentDir => {
                lexical.pop();
            }
            Component::CurDir => {}
            other => lexical.push(other),
        }
    }
    let mut existing = lexical.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            return Some(rest.iter().rev().fold(real, |p, c| p.join(c)));
        }
        rest.push(existing.file_name()?.to_owned());
        existing = existing.parent()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_empty_and_forced_run_directories_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("out");
        assert!(claim_out_dir(&out, &[], false).is_ok(), "new");
        std::fs::create_dir(&out).expect("mkdir");
        assert!(claim_out_dir(&out, &[], false).is_ok(), "empty");
        std::fs::write(out.join("notes.txt"), "mine").expect("write");
        let e = claim_out_dir(&out, &[], true).expect_err("not a run directory");
        assert!(
            e.problems[0].contains("not a planwave run directory"),
            "{e:?}"
        );
        std::fs::write(out.join("run.json"), "{}").expect("write");
        std::fs::create_dir(out.join("sections")).expect("mkdir");
        let e = claim_out_dir(&out, &[], false).expect_err("an earlier run");
        assert!(e.problems[0].contains("--force replaces it"), "{e:?}");
        claim_out_dir(&out, &[], true).expect("forced");
        assert!(!out.join("run.json").exists() && !out.join("sections").exists());
        assert!(out.join("notes.txt").exists(), "not ours: kept");
        let input = out.join("plan.json");
        std::fs::write(&input, "{}").expect("write");
        let e = claim_out_dir(&out, &[&input], true).expect_err("input inside");
        assert!(e.problems[0].contains("would write over"), "{e:?}");

        // A run killed before its first file: only planwave's own entries, no marker yet.
        let early = dir.path().join("early");
        std::fs::create_dir_all(early.join("sections")).expect("mkdir");
        std::fs::write(early.join(".lock"), "").expect("lock");
        let e = claim_out_dir(&early, &[], false).expect_err("an earlier run");
        assert!(e.problems[0].contains("--force replaces it"), "{e:?}");
    }
}
