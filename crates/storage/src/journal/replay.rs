//! Reading a journal back: which tasks of a run are durably completed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use planwave_plan::{TaskId, ValidatedPlan};
use serde::Deserialize;

use planwave_record::{Preset, TaskRecord, TaskStatus, Usage};

use crate::rundir::{RunDir, section_files};

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} records no run (no run_started event)")]
    NoRun { path: PathBuf },
}

/// The hash recorded with each section (FNV-1a, 64 bits, hex): enough to tell an intact file
/// from a changed or half-written one, not a security measure.
pub fn section_hash(text: &str) -> String {
    format!("{:016x}", planwave_record::stable_hash(0, text, 0))
}

/// A `task_completed` event as journaled.
#[derive(Debug, Clone, Deserialize)]
pub struct CompletedTask {
    pub task: TaskId,
    pub attempts: u32,
    #[serde(default)]
    pub usage: Usage,
    pub ts: DateTime<Utc>,
    #[serde(default)]
    pub section_file: Option<String>,
    #[serde(default)]
    pub section_hash: Option<String>,
    /// The section itself, journaled with the completion (the durable copy).
    #[serde(default)]
    pub section: Option<String>,
    /// The step's result when its section reads otherwise (absent in journals written
    /// before results were kept: the section is read as the result then).
    #[serde(default)]
    pub result: Option<Box<serde_json::Value>>,
    /// Cut by the output cap: resumed as `truncated`, not `completed`.
    #[serde(default)]
    pub truncated: bool,
}

#[derive(Deserialize)]
struct Header {
    #[serde(rename = "type")]
    kind: String,
}

#[derive(Deserialize)]
struct RunStarted {
    run_id: uuid::Uuid,
}

#[derive(Deserialize)]
struct TaskStarted {
    task: TaskId,
    ts: DateTime<Utc>,
}

/// A streamed plan's close: the tasks whose early work the final plan does not keep.
#[derive(Deserialize)]
struct PlanCompleted {
    #[serde(default)]
    cancelled: Vec<TaskId>,
    #[serde(default)]
    discarded: Vec<TaskId>,
}

/// What a journal says about the latest run it records.
#[derive(Debug, Default)]
pub struct Replay {
    pub run_id: Option<uuid::Uuid>,
    pub completed: HashMap<TaskId, CompletedTask>,
    pub started: HashMap<TaskId, DateTime<Utc>>,
    /// Times the run was resumed before.
    pub resumes: usize,
    /// Lines that could not be read (a torn last line, or kinds this version does not know).
    pub skipped_lines: usize,
    /// 1-based numbers of lines before the last that are not JSON at all: not a crash's torn
    /// tail but damage, which resume reports.
    pub garbage_lines: Vec<usize>,
    /// Tasks completed while a streamed plan was still open whose plan never closed in the
    /// journal (`plan_completed` missing: a crash after the final plan was written but before
    /// its close was journaled). Whether the final plan kept them is unknown, so they are not
    /// counted as completed; [`Replay::presets`] says so.
    pub unconfirmed: Vec<TaskId>,
}

impl Replay {
    /// Reads the journal at `path`. A line that is not UTF-8 (a journal mirrored from a
    /// queue holds whatever was published on its subject) is damage like a line that is not
    /// JSON: skipped and reported, never a reason to refuse the rest.
    pub fn read(path: &Path) -> Result<Replay, ReplayError> {
        let bytes = std::fs::read(path).map_err(|source| ReplayError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let replay = Replay::parse_lines(lines_of(&bytes));
        if replay.run_id.is_none() {
            return Err(ReplayError::NoRun {
                path: path.to_path_buf(),
            });
        }
        Ok(replay)
    }

    /// Never fails: a line that is not a known event is counted and skipped, since only the
    /// events that mark progress matter and a crash can tear the last line.
    pub fn parse(text: &str) -> Replay {
        Replay::parse_lines(text.lines().map(Some).collect())
    }

    /// [`Replay::parse`] of lines, `None` for one that is not UTF-8.
    fn parse_lines(lines: Vec<Option<&str>>) -> Replay {
        let mut r = Replay::default();
        // Completions journaled while a streamed plan was open (after `plan_task_received`,
        // before `plan_completed`): they count only once the plan's close says they were kept.
        let mut open = false;
        let mut provisional: Vec<TaskId> = Vec::new();
        let last = lines.len();
        for (i, line) in lines.into_iter().enumerate() {
            if line.is_some_and(|l| l.trim().is_empty()) {
                continue;
            }
            let Some(Ok(value)) = line.map(serde_json::from_str::<serde_json::Value>) else {
                r.skipped_lines += 1;
                if i + 1 < last {
                    r.garbage_lines.push(i + 1);
                }
                continue;
            };
            let Ok(h) = Header::deserialize(&value) else {
                r.skipped_lines += 1;
                continue;
            };
            let ok = match h.kind.as_str() {
                "run_started" => RunStarted::deserialize(&value)
                    .map(|s| {
                        if r.run_id != Some(s.run_id) {
                            // Another run was started into this directory: only the latest counts.
                            r.completed.clear();
                            r.started.clear();
                            r.resumes = 0;
                            r.run_id = Some(s.run_id);
                        }
                    })
                    .is_ok(),
                "run_resumed" => {
                    r.resumes += 1;
                    // The attempt before this one ran with the plan's close unrecorded: its
                    // open-plan completions were not trusted then either.
                    r.distrust(std::mem::take(&mut provisional));
                    open = false;
                    true
                }
                "plan_task_received" => {
                    open = true;
                    true
                }
                "task_started" => TaskStarted::deserialize(&value)
                    .map(|s| {
                        r.started.insert(s.task, s.ts);
                    })
                    .is_ok(),
                // A completion from before a streamed plan closed that the final plan
                // discarded is no completion of the final plan's task (same id, other task).
                "plan_completed" => PlanCompleted::deserialize(&value)
                    .map(|p| {
                        open = false;
                        provisional.clear();
                        for t in p.cancelled.iter().chain(&p.discarded) {
                            r.completed.remove(t);
                            r.started.remove(t);
                        }
                    })
                    .is_ok(),
                "task_completed" => CompletedTask::deserialize(&value)
                    .map(|c| {
                        if open {
                            provisional.push(c.task.clone());
                        } else if !r.unconfirmed.is_empty() {
                            // Run again (after a resume): this completion is trusted.
                            r.unconfirmed.retain(|t| *t != c.task);
                        }
                        r.completed.insert(c.task.clone(), c);
                    })
                    .is_ok(),
                _ => true,
            };
            if !ok {
                r.skipped_lines += 1;
            }
        }
        if open {
            r.distrust(provisional);
        }
        r
    }

    /// Takes back completions whose plan's close was never journaled.
    fn distrust(&mut self, tasks: Vec<TaskId>) {
        for t in tasks {
            if self.completed.remove(&t).is_some() {
                self.started.remove(&t);
                self.unconfirmed.push(t);
            }
        }
    }

    /// The durably completed tasks of `plan`, to be preset instead of run again: those whose
    /// journaled section file is present with the journaled hash. The notes say which
    /// completions were not trusted and why (those tasks run again).
    pub fn presets(&self, plan: &ValidatedPlan, out: &RunDir) -> (Vec<Preset>, Vec<String>) {
        let files = section_files(
            (0..plan.len())
                .map(|i| plan.id(i).key().into_owned())
                .collect::<Vec<_>>()
                .iter()
                .map(String::as_str),
        );
        let mut presets = Vec::new();
        let mut notes: Vec<String> = self
            .unconfirmed
            .iter()
            .map(|id| {
                format!(
                    "task {id}: completed while the plan was still streaming, and the plan's \
                     close was not journaled; running it again"
                )
            })
            .collect();
        for (i, file) in files.iter().enumerate() {
            let id = plan.id(i);
            let Some(c) = self.completed.get(id) else {
                continue;
            };
            let (Some(rec_file), Some(hash)) = (&c.section_file, &c.section_hash) else {
                notes.push(format!(
                    "task {id}: its section was never written; running it again"
                ));
                continue;
            };
            if rec_file != file {
                notes.push(format!(
                    "task {id}: journaled section {rec_file} is not {file}; running it again"
                ));
                continue;
            }
            let text = match section_text(out, file, hash, c.section.as_deref()) {
                Ok((text, restored)) => {
                    if restored {
                        notes.push(format!("task {id}: {file} restored from the journal"));
                    }
                    text
                }
                Err(why) => {
                    notes.push(format!("task {id}: {why}; running it again"));
                    continue;
                }
            };
            presets.push(Preset {
                index: i,
                record: TaskRecord {
                    status: if c.truncated {
                        TaskStatus::Truncated
                    } else {
                        TaskStatus::Completed
                    },
                    attempts: c.attempts,
                    started_at: self.started.get(id).copied(),
                    finished_at: Some(c.ts),
                    context_from: plan
                        .deps(i)
                        .iter()
                        .map(|&d| plan.id(d as usize).clone())
                        .collect(),
                    section_file: Some(file.clone()),
                    usage: c.usage,
                    result: c.result.clone(),
                    // Tool calls are not journaled: a resumed run's record lists this attempt's.
                    ..TaskRecord::pending(plan, i)
                },
                section: Arc::from(text),
            });
        }
        (presets, notes)
    }
}

/// The lines of a journal's bytes as `str::lines` cuts them (a final newline ends the last
/// line, `\r\n` counts as one), `None` for a line that is not UTF-8.
fn lines_of(bytes: &[u8]) -> Vec<Option<&str>> {
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if bytes.is_empty() {
        return Vec::new();
    }
    body.split(|&b| b == b'\n')
        .map(|l| std::str::from_utf8(l.strip_suffix(b"\r").unwrap_or(l)).ok())
        .collect()
}

/// The completed section: the file when it holds what was journaled; else the journal's own
/// copy, written back to the file (`true`). The file is written without a sync of its own at
/// completion, so after a power loss it may be missing or short; the journal line is not.
fn section_text(
    out: &RunDir,
    file: &str,
    hash: &str,
    journaled: Option<&str>,
) -> Result<(String, bool), String> {
    let path = out.path(file).map_err(|e| e.to_string())?;
    let on_disk = std::fs::read_to_string(&path);
    if let Ok(text) = &on_disk
        && section_hash(text) == hash
    {
        return Ok((text.clone(), false));
    }
    if let Some(text) = journaled.filter(|t| section_hash(t) == hash) {
        out.write(file, text.as_bytes())
            .map_err(|e| e.to_string())?;
        return Ok((text.to_owned(), true));
    }
    Err(match on_disk {
        Ok(_) => format!("{file} changed since it was written"),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            format!("its section {} is missing", path.display())
        }
        Err(e) => format!("cannot read {}: {e}", path.display()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latest_run_counts_and_unknown_or_torn_lines_are_skipped() {
        let a = uuid::Uuid::new_v4();
        let b = uuid::Uuid::new_v4();
        let text = format!(
            concat!(
                "{{\"ts\":\"2026-01-01T00:00:00Z\",\"type\":\"run_started\",\"run_id\":\"{a}\"}}\n",
                "{{\"ts\":\"2026-01-01T00:00:01Z\",\"type\":\"task_completed\",\"task\":1,\"attempts\":1,\"duration_ms\":1.0,\"usage\":{{\"prompt_tokens\":1,\"completion_tokens\":2,\"reasoning_tokens\":0}},\"section_file\":\"sections/1.md\",\"section_hash\":\"00\"}}\n",
                "{{\"ts\":\"2026-01-01T00:00:02Z\",\"type\":\"run_started\",\"run_id\":\"{b}\"}}\n",
                "{{\"ts\":\"2026-01-01T00:00:03Z\",\"type\":\"something_new\"}}\n",
                "{{\"ts\":\"2026-01-01T00:00:04Z\",\"type\":\"task_completed\",\"task\":\"x\",\"attempts\":2,\"duration_ms\":1.0}}\n",
                "{{\"ts\":\"2026-01-01T00:00:05Z\",\"type\":\"task_comp"
            ),
            a = a,
            b = b
        );
        let r = Replay::parse(&text);
        assert_eq!(r.run_id, Some(b));
        assert_eq!(r.completed.len(), 1);
        assert_eq!(r.completed[&TaskId::Str("x".into())].attempts, 2);
        assert_eq!(r.skipped_lines, 1);
    }

    /// A journal rebuilt from a queue's subject holds whatever was published there: bytes
    /// that are not UTF-8 are a damaged line, not an unreadable journal.
    #[test]
    fn lines_that_are_not_utf8_are_skipped_and_the_rest_is_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("events.jsonl");
        let a = uuid::Uuid::new_v4();
        let mut bytes = format!(
            "{{\"ts\":\"2026-01-01T00:00:00Z\",\"type\":\"run_started\",\"run_id\":\"{a}\"}}\r\n"
        )
        .into_bytes();
        bytes.extend_from_slice(b"\xff\xfe{\"type\":\"task_completed\"}\n");
        bytes.extend_from_slice(
            b"{\"ts\":\"2026-01-01T00:00:01Z\",\"type\":\"task_completed\",\"task\":1,\"attempts\":1}\n\xc3",
        );
        std::fs::write(&path, &bytes).expect("write");
        let r = Replay::read(&path).expect("read");
        assert_eq!(r.run_id, Some(a));
        assert_eq!(r.completed.len(), 1);
        assert_eq!(r.skipped_lines, 2, "the damaged line and the torn last one");
        assert_eq!(r.garbage_lines, vec![2]);
    }

    #[test]
    fn work_a_streamed_plan_discarded_is_not_completed() {
        let a = uuid::Uuid::new_v4();
        let done = |t: u32, s: u32| {
            format!(
                "{{\"ts\":\"2026-01-01T00:00:0{s}Z\",\"type\":\"task_completed\",\"task\":{t},\"attempts\":1,\"duration_ms\":1.0}}\n"
            )
        };
        let text = format!(
            "{{\"ts\":\"2026-01-01T00:00:00Z\",\"type\":\"run_started\",\"run_id\":\"{a}\"}}\n{}{}{{\"ts\":\"2026-01-01T00:00:03Z\",\"type\":\"plan_completed\",\"valid\":false,\"tasks\":3,\"kept\":[2],\"discarded\":[1]}}\n",
            done(1, 1),
            done(2, 2)
        );
        let r = Replay::parse(&text);
        assert!(!r.completed.contains_key(&TaskId::Int(1)));
        assert!(r.completed.contains_key(&TaskId::Int(2)));
        // The final plan's own run of task 1 counts.
        let r = Replay::parse(&format!("{text}{}", done(1, 4)));
        assert!(r.completed.contains_key(&TaskId::Int(1)));
    }

    /// A crash after the final plan was written but before its close was journaled: the
    /// completions made while the plan streamed may belong to tasks the final plan changed,
    /// so none of them counts; those after a resume do.
    #[test]
    fn work_done_while_the_plan_streamed_counts_only_once_the_close_is_journaled() {
        let a = uuid::Uuid::new_v4();
        let line = |body: String| format!("{{\"ts\":\"2026-01-01T00:00:01Z\",{body}}}\n");
        let received = |t: u32| {
            line(format!(
                "\"type\":\"plan_task_received\",\"task\":{t},\"token\":1,\"chars\":1"
            ))
        };
        let done = |t: u32| {
            line(format!(
                "\"type\":\"task_completed\",\"task\":{t},\"attempts\":1"
            ))
        };
        let started = line(format!("\"type\":\"run_started\",\"run_id\":\"{a}\""));
        let open = format!(
            "{}{started}{}{}{}",
            received(1),
            done(1),
            received(2),
            done(2)
        );

        let r = Replay::parse(&open);
        assert!(r.completed.is_empty(), "{:?}", r.completed.keys());
        assert_eq!(r.unconfirmed, vec![TaskId::Int(1), TaskId::Int(2)]);

        let closed = format!(
            "{open}{}",
            line("\"type\":\"plan_completed\",\"valid\":true,\"tasks\":2,\"kept\":[1,2]".into())
        );
        let r = Replay::parse(&closed);
        assert_eq!(r.completed.len(), 2);
        assert!(r.unconfirmed.is_empty());

        // Resumed without the close: what the resumed attempt completes counts.
        let resumed = format!(
            "{open}{}{}",
            line("\"type\":\"run_resumed\"".into()),
            done(2)
        );
        let r = Replay::parse(&resumed);
        assert_eq!(
            r.completed.keys().collect::<Vec<_>>(),
            vec![&TaskId::Int(2)]
        );
        assert_eq!(r.unconfirmed, vec![TaskId::Int(1)]);
    }
}
