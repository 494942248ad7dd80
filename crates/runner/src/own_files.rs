//! What `--force` removes of an earlier run: the files planwave wrote, found by name and
//! from the run's own records, and nothing else. A directory of the run (`sections/`,
//! `planner/`, a round, a batch's job) is removed only once it is empty, so a file of the
//! user's inside one survives (with the directory holding it).
//!
//! A section's file name comes from its task id (`storage::section_files`): the names are
//! read back from `run.json` and the journal (`section_file`), and derived from the run's
//! `plan.json` for a section written just before a crash could journal it.

use std::collections::HashSet;
use std::io;
use std::path::Path;

/// Files a run writes at the top of a directory of its own (the run, a round, a job).
pub(crate) const RUN_FILES: [&str; 13] = [
    "invocation.json",
    "run.json",
    "events.jsonl",
    "batch.json",
    "plan.json",
    "report.md",
    "report.html",
    "report.pdf",
    "round.json",
    "evaluation.json",
    "reflection.json",
    "provider-batches.jsonl",
    ".lock",
];
/// Directories a run writes in its directory.
pub(crate) const RUN_DIRS: [&str; 4] = ["sections", "rounds", "planner", "jobs"];

/// Removes what the run in `dir` wrote (and leftover temporary files), nothing else.
pub(crate) fn remove_run_files(dir: &Path) -> io::Result<()> {
    // Read before the records go.
    let sections = section_names(dir);
    remove_matching(&dir.join("sections"), |name| {
        sections.contains(name) || is_temp_of(name, |stem| sections.contains(&format!("{stem}.md")))
    })?;
    remove_matching(&dir.join("planner"), |name| {
        name == "attempts.json" || is_attempt_text(name) || is_temp_of(name, |_| true)
    })?;
    for sub in ["rounds", "jobs"] {
        let parent = dir.join(sub);
        if let Some(entries) = real_dir(&parent)
            .then(|| std::fs::read_dir(&parent).ok())
            .flatten()
        {
            for e in entries.flatten() {
                let round = sub != "rounds" || e.file_name().to_str().is_some_and(is_number);
                // A link is never followed (`file_type` does not follow it).
                if round && e.file_type().is_ok_and(|t| t.is_dir()) {
                    remove_run_files(&e.path())?;
                }
            }
        }
        remove_if_empty(&parent)?;
    }
    for f in RUN_FILES {
        remove_file_if_there(&dir.join(f))?;
    }
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if planwave_storage::is_leftover_temp(&entry.file_name()) {
            remove_file_if_there(&entry.path())?;
        }
    }
    remove_if_empty(&dir.join("sections"))?;
    remove_if_empty(&dir.join("planner"))?;
    if dir.file_name().is_some_and(|n| n != "." && n != "..") && is_nested(dir) {
        remove_if_empty(dir)?;
    }
    Ok(())
}

/// Whether `dir` is a round's or a job's directory (not the top one, which is kept).
fn is_nested(dir: &Path) -> bool {
    dir.parent()
        .and_then(Path::file_name)
        .is_some_and(|p| p == "rounds" || p == "jobs")
}

fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

/// `attempt-N.txt`: a planner attempt's text.
fn is_attempt_text(name: &str) -> bool {
    name.strip_prefix("attempt-")
        .and_then(|r| r.strip_suffix(".txt"))
        .is_some_and(is_number)
}

/// Whether `name` is a leftover temporary file (`STEM.tmp<pid>`) whose stem `ours` accepts.
fn is_temp_of(name: &str, ours: impl Fn(&str) -> bool) -> bool {
    planwave_storage::is_leftover_temp(std::ffi::OsStr::new(name))
        && name.rsplit_once('.').is_some_and(|(stem, _)| ours(stem))
}

/// The section files (names inside `sections/`) the run in `dir` wrote or would write.
fn section_names(dir: &Path) -> HashSet<String> {
    let mut names = HashSet::new();
    let mut recorded = |v: &serde_json::Value| {
        if let Some(name) = v
            .get("section_file")
            .and_then(serde_json::Value::as_str)
            .and_then(|f| f.strip_prefix("sections/"))
        {
            names.insert(name.to_owned());
        }
    };
    if let Some(run) = read_json(&dir.join("run.json")) {
        for t in run["tasks"].as_array().into_iter().flatten() {
            recorded(t);
        }
    }
    if let Ok(text) = std::fs::read_to_string(dir.join("events.jsonl")) {
        for line in text.lines() {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                recorded(&v);
            }
        }
    }
    let plan = std::fs::read(dir.join("plan.json"))
        .ok()
        .and_then(|b| planwave_plan::parse_plan(&b).ok())
        .and_then(|spec| planwave_plan::ValidatedPlan::new(spec).ok());
    if let Some(plan) = plan {
        let keys: Vec<_> = (0..plan.len()).map(|i| plan.id(i).key()).collect();
        for f in planwave_storage::section_files(keys.iter().map(|k| k.as_ref())) {
            if let Some(name) = f.strip_prefix("sections/") {
                names.insert(name.to_owned());
            }
        }
    }
    names
}

fn read_json(path: &Path) -> Option<serde_json::Value> {
    serde_json::from_slice(&std::fs::read(path).ok()?).ok()
}

/// Whether `path` is a directory itself, not a link to one (whose entries are not ours).
fn real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// Removes the regular files (or links) in the directory `dir` whose names `ours` accepts.
fn remove_matching(dir: &Path, ours: impl Fn(&str) -> bool) -> io::Result<()> {
    if !real_dir(dir) {
        return Ok(());
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries.flatten() {
        let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir && e.file_name().to_str().is_some_and(&ours) {
            remove_file_if_there(&e.path())?;
        }
    }
    Ok(())
}

/// Removes `path` (a link as a link), if there.
fn remove_file_if_there(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if !m.is_dir() => std::fs::remove_file(path),
        _ => Ok(()),
    }
}

/// Removes the directory `path` if it is one and empty (a link in its place: the link).
fn remove_if_empty(path: &Path) -> io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => std::fs::remove_file(path),
        Ok(m) if m.is_dir() => match std::fs::remove_dir(path) {
            Err(e) if e.kind() == io::ErrorKind::DirectoryNotEmpty => Ok(()),
            other => other,
        },
        _ => Ok(()),
    }
}
