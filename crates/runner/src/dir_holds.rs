//! What a directory a person names holds (`planwave show DIR`): a batch (its `batch.json`),
//! runs directly under it (a server's data directory, a batch's `jobs/`) or a run; and what a
//! run that has not finished waits on (`--batch-api`: the provider batch of the newest
//! `provider_batch` event in its journals).

use std::path::{Path, PathBuf};

use crate::{is_run_dir, runs_under};

/// What [`dir_holds`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DirHolds {
    /// A batch directory: its record, `batch.json` (its runs are under `jobs/`).
    Batch(PathBuf),
    /// No run of its own, but runs directly under it.
    Runs(Vec<PathBuf>),
    /// A run directory, or what can only be meant as one: reading it says what is wrong.
    Run,
}

/// What `dir` holds.
pub fn dir_holds(dir: &Path) -> DirHolds {
    // A batch directory has batch.json and no run.json of its own.
    let batch = dir.join("batch.json");
    if !dir.join("run.json").exists() && batch.is_file() {
        return DirHolds::Batch(batch);
    }
    if !is_run_dir(dir) {
        let runs = runs_under(dir);
        if !runs.is_empty() {
            return DirHolds::Runs(runs);
        }
    }
    DirHolds::Run
}

/// The newest `provider_batch` event among the run's `events.jsonl` files (its rounds' and
/// passes' included): the batch id and its state.
pub fn last_provider_batch(dir: &Path) -> Option<(String, String)> {
    let mut best: Option<(String, String, String)> = None;
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(kind) = e.file_type() else { continue };
            let path = e.path();
            if kind.is_dir() && depth < 4 {
                stack.push((path, depth + 1));
            } else if kind.is_file() && e.file_name() == "events.jsonl" {
                for (ts, id, state) in batch_events(&path) {
                    if best.as_ref().is_none_or(|(t, _, _)| ts > *t) {
                        best = Some((ts, id, state));
                    }
                }
            }
        }
    }
    best.map(|(_, id, state)| (id, state))
}

fn batch_events(path: &Path) -> Vec<(String, String, String)> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter(|l| l.contains("\"provider_batch\""))
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "provider_batch")
        .filter_map(|v| {
            Some((
                v["ts"].as_str()?.to_owned(),
                v["batch_id"].as_str()?.to_owned(),
                v["state"].as_str()?.to_owned(),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_runs_under_a_data_directory_or_a_run() {
        let root = tempfile::tempdir().expect("tempdir");
        let dir = |name: &str| {
            let d = root.path().join(name);
            std::fs::create_dir_all(&d).expect("mkdir");
            d
        };
        let batch = dir("batch");
        std::fs::write(batch.join("batch.json"), "{}").expect("write");
        assert_eq!(dir_holds(&batch), DirHolds::Batch(batch.join("batch.json")));

        let data = dir("data");
        for run in ["b", "a"] {
            let run = dir(&format!("data/{run}"));
            std::fs::write(run.join("run.json"), "{}").expect("write");
        }
        dir("data/not-a-run");
        assert_eq!(
            dir_holds(&data),
            DirHolds::Runs(vec![data.join("a"), data.join("b")])
        );
        // A run of its own wins over a batch record beside it; an empty directory can only
        // be meant as a run (reading it says it has not finished).
        assert_eq!(dir_holds(&data.join("a")), DirHolds::Run);
        std::fs::write(data.join("a/batch.json"), "{}").expect("write");
        assert_eq!(dir_holds(&data.join("a")), DirHolds::Run);
        assert_eq!(dir_holds(&dir("empty")), DirHolds::Run);
    }
}
