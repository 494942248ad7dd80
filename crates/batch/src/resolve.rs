//! From parsed jobs to runnable ones: plan files read, plans validated, run directory names
//! chosen. Every problem stays attached to its line.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use planwave_plan::{ToolCatalog, ValidatedPlan, parse_plan, plan_from_value};

use crate::jobs::{BadLine, JobFile, JobSource};
use crate::template::Renderer;

#[derive(Debug)]
pub enum JobInput {
    Goal(String),
    Plan(Box<ValidatedPlan>),
}

#[derive(Debug)]
pub struct ResolvedJob {
    pub id: String,
    pub line: usize,
    /// The job's run directory under `OUT/jobs/`: the id made safe for a file name,
    /// unique within the batch.
    pub dir: String,
    /// `goal`, `plan`, `plan_file` or `template`.
    pub kind: &'static str,
    pub input: JobInput,
    /// The batch's `--meta` with the job line's `metadata` over it: the planner's task
    /// context for a goal job (a given plan has it already, as its `meta`).
    pub metadata: std::collections::BTreeMap<String, String>,
    /// A goal job's answers to its planner's clarifying questions.
    pub answers: Vec<planwave_plan::clarification::Clarification>,
}

/// Reads plan files (relative paths against `base`, the job file's directory) and validates
/// plans (against the batch's tools when it has MCP servers); a job that fails becomes a bad
/// line with every problem listed.
/// Plan files and templates are read by `read_plan` (the front end's bounded reader); a
/// template shared by many jobs is read and parsed once, then rendered per job.
pub fn resolve_jobs(
    file: JobFile,
    base: &Path,
    tools: Option<&ToolCatalog>,
    meta: &std::collections::BTreeMap<String, String>,
    read_plan: &dyn Fn(&Path) -> Result<Vec<u8>, String>,
) -> (Vec<ResolvedJob>, Vec<BadLine>) {
    let mut bad = file.bad;
    let mut jobs = Vec::new();
    let mut dirs = HashSet::new();
    let renderer = Renderer::new();
    let mut templates: HashMap<PathBuf, Result<serde_json::Value, String>> = HashMap::new();
    for job in file.jobs {
        let kind = job.source.kind();
        let mut metadata = meta.clone();
        metadata.extend(job.metadata);
        // A plan's `{{meta.KEY}}` references are checked against the job's metadata.
        let validate = |mut spec: planwave_plan::PlanSpec| {
            spec.about.meta.extend(metadata.clone());
            validate(spec, tools)
        };
        let input = match job.source {
            JobSource::Goal(g) => Ok(JobInput::Goal(g)),
            JobSource::Plan(v) => plan_from_value(v)
                .map_err(|e| e.to_string())
                .and_then(validate),
            JobSource::PlanFile(p) => {
                let path = base.join(&p);
                read_plan(&path)
                    .map_err(|e| format!("plan file {}: {e}", p.display()))
                    .and_then(|bytes| {
                        parse_plan(&bytes).map_err(|e| format!("plan file {}: {e}", p.display()))
                    })
                    .and_then(validate)
            }
            JobSource::Template { path, vars } => {
                let name = path.display().to_string();
                templates
                    .entry(path)
                    .or_insert_with_key(|p| read_template(&base.join(p), read_plan))
                    .clone()
                    .and_then(|t| renderer.render(&t, &vars))
                    .and_then(|v| plan_from_value(v).map_err(|e| e.to_string()))
                    .map_err(|e| format!("template {name}: {e}"))
                    .and_then(validate)
            }
        };
        match input {
            Ok(input) => {
                let dir = unique_dir(&job.id, &mut dirs);
                jobs.push(ResolvedJob {
                    id: job.id,
                    line: job.line,
                    dir,
                    kind,
                    input,
                    metadata,
                    answers: job.answers,
                });
            }
            Err(e) => bad.push(BadLine {
                line: job.line,
                error: format!("job {:?}: {}", job.id, e.replace('\n', "; ")),
            }),
        }
    }
    bad.sort_by_key(|b| b.line);
    (jobs, bad)
}

/// A template is a plan in JSON (not wrapped in prose: its strings are rendered before the
/// plan is parsed).
fn read_template(
    path: &Path,
    read: &dyn Fn(&Path) -> Result<Vec<u8>, String>,
) -> Result<serde_json::Value, String> {
    let bytes = read(path)?;
    serde_json::from_slice(&bytes).map_err(|e| format!("not a JSON plan: {e}"))
}

fn validate(
    spec: planwave_plan::PlanSpec,
    tools: Option<&ToolCatalog>,
) -> Result<JobInput, String> {
    match tools {
        Some(t) => ValidatedPlan::with_tools(spec, t),
        None => ValidatedPlan::new(spec),
    }
    .map(|p| JobInput::Plan(Box::new(p)))
    .map_err(|e| {
        let problems: Vec<String> = e.0.iter().map(ToString::to_string).collect();
        format!("invalid plan: {}", problems.join("; "))
    })
}

/// ASCII letters, digits, `-` and `_` survive; anything else becomes `_` and a short hash of
/// the id is appended, so no id can leave `OUT/jobs/` or collide with another.
fn unique_dir(id: &str, used: &mut HashSet<String>) -> String {
    let mut stem: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if stem != id || stem.is_empty() {
        stem = format!("{stem}-{:08x}", fnv(id) as u32);
    }
    let mut dir = stem.clone();
    let mut n = 1;
    while !used.insert(dir.to_ascii_lowercase()) {
        n += 1;
        dir = format!("{stem}-{n}");
    }
    dir
}

fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::parse_jobs;

    #[test]
    fn missing_and_invalid_plans_are_bad_lines_and_dirs_are_safe_and_unique() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(
            dir.path().join("ok.json"),
            r#"{"topic": "t", "tasks": [{"id": 1, "description": "d", "dependencies": []}]}"#,
        )
        .expect("write");
        let text = concat!(
            "{\"id\": \"../../etc\", \"plan_file\": \"ok.json\"}\n",
            "{\"id\": \"missing\", \"plan_file\": \"nope.json\"}\n",
            "{\"id\": \"cyclic\", \"plan\": {\"topic\": \"t\", \"tasks\": [{\"id\": 1, \"description\": \"d\", \"dependencies\": [1]}]}}\n",
            "{\"id\": \"A\", \"goal\": \"g\"}\n",
            "{\"id\": \"a\", \"goal\": \"g\"}\n",
        );
        let (jobs, bad) = resolve_jobs(
            parse_jobs(text),
            dir.path(),
            None,
            &Default::default(),
            &|p| std::fs::read(p).map_err(|e| e.to_string()),
        );
        let dirs: Vec<&str> = jobs.iter().map(|j| j.dir.as_str()).collect();
        assert_eq!(dirs.len(), 3);
        assert!(dirs[0].starts_with("______etc-"), "{dirs:?}");
        assert_eq!(&dirs[1..], &["A", "a-2"]);
        assert_eq!(bad.len(), 2);
        assert_eq!(bad[0].line, 2);
        assert!(
            bad[0]
                .error
                .starts_with("job \"missing\": plan file nope.json: "),
            "{}",
            bad[0].error
        );
        assert_eq!(bad[1].line, 3);
        assert!(bad[1].error.contains("invalid plan: "), "{}", bad[1].error);
    }
}
