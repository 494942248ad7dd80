//! What `planwave show` says of a run that has not finished: the provider batch it waits on
//! (`--batch-api`), from the newest `provider_batch` event in its journals.

use std::path::Path;

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

/// The sentence for a run without `run.json`.
pub fn not_finished(dir: &Path) -> String {
    match last_provider_batch(dir) {
        Some((id, state))
            if !matches!(state.as_str(), "completed" | "failed" | "expired" | "cancelled") =>
        {
            format!(
                "the run has not finished: it is waiting on provider batch {id} ({state}); `planwave resume` goes on polling it"
            )
        }
        Some((id, state)) => format!(
            "the run has not finished (its last provider batch, {id}, is {state}; events.jsonl shows its progress)"
        ),
        None => "no run.json here: not a run directory, or the run has not finished (events.jsonl shows its progress)".into(),
    }
}
