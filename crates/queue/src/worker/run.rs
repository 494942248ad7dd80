//! One job on a worker: its local run directory rebuilt from JetStream (the journal of an
//! earlier attempt, so completed tasks are kept), the run, and its files stored.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use planwave_batch::{JobInput, JobSummary, ResolvedJob};
use planwave_config::spec::Work;
use planwave_plan::ValidatedPlan;
use planwave_runner::ops::JobContext;
use planwave_storage::RunDir;
use tokio_util::sync::CancellationToken;

use super::Worker;
use crate::QueueError;
use crate::dir_mirror::{DirStream, dir_subject, restore_dir};
use crate::journal::{StreamMirror, read_journal};
use crate::names::{job_key, journal_subject, object_name};
use crate::submit::JobMessage;

/// The object holding a job's run directory.
pub(crate) const RUN_ARCHIVE: &str = "run-dir.json";

pub(super) struct JobDone {
    pub summary: JobSummary,
    pub files: Vec<String>,
}

pub(super) fn failed_summary(job: &JobMessage, error: Option<String>) -> JobSummary {
    JobSummary::failed(&job.id, job.line, &job.kind, &job.dir, error)
}

impl Worker<'_> {
    /// `Err` when the job cannot start here (it goes back to the queue).
    pub(super) async fn run_job(
        &self,
        job: &JobMessage,
        cancel: CancellationToken,
        slots: Option<planwave_engine::Slots>,
    ) -> crate::Result<JobDone> {
        // Checked when the message was decoded; checked again here, where it becomes a path.
        crate::message::check_dir(&job.dir).map_err(QueueError::new)?;
        let key = job_key(&job.id);
        let resolved = self.resolve(job)?;
        // The cache is rebuilt from JetStream: whatever an earlier attempt left here locally
        // may be older or newer than what is durable.
        let root_path = self.cache.job_dir(&job.batch, &key)?;
        let _ = std::fs::remove_dir_all(&root_path);
        let root = RunDir::create(&root_path).map_err(|e| QueueError::of("the job cache", e))?;
        let subject = journal_subject(&job.batch, &key);
        if let JobInput::Plan(plan) = &resolved.input {
            let journal = read_journal(&self.queue, &subject).await?;
            if !journal.is_empty() {
                let out = root
                    .child(&format!("jobs/{}", job.dir))
                    .map_err(|e| QueueError::of("the job cache", e))?;
                let plan = serde_json::to_vec_pretty(plan.spec())
                    .map_err(|e| QueueError::of("the job's plan", e))?;
                out.write_unsynced("plan.json", &plan)
                    .and_then(|_| out.write_unsynced("events.jsonl", &journal))
                    .map_err(|e| QueueError::of("the job cache", e))?;
            }
        }
        let ledger_root = self.plan_job_ledger(&resolved, &root, &subject).await?;
        let mut root = root;
        let mut mirror: Option<Arc<dyn planwave_storage::JournalMirror>> = None;
        if let JobInput::Goal(_) = &resolved.input {
            // The loop's rounds, planner files and journals: the whole directory, mirrored.
            let subject = dir_subject(&subject);
            let restored = restore_dir(&self.queue, &subject, &root).await?;
            if restored > 0 {
                self.notes.note(&format!(
                    "worker: job {}: {restored} file(s) of an earlier attempt restored",
                    job.id
                ));
            }
            root = root.with_mirror(DirStream::new(
                self.queue.clone(),
                subject,
                self.stop.clone(),
            ));
        } else {
            mirror = Some(Arc::new(StreamMirror {
                queue: self.queue.clone(),
                subject,
                session: uuid::Uuid::new_v4().simple().to_string(),
                seq: AtomicU64::new(0),
                handle: tokio::runtime::Handle::current(),
                on_commit: self.on_commit.clone(),
                stop: self.stop.clone(),
            }));
        }
        // Workers share no counter: on the queue a budget is each job's own.
        let (resources, budget) =
            self.resources
                .budgeted(self.settings.budget, &self.settings.run.prices, (0, 0.0));
        let ctx = JobContext {
            root: root.clone(),
            settings: self.settings,
            resources,
            budget,
            config: self.settings.run.clone(),
            slots,
            cancel,
            watch: self.watch,
            notes: self.notes,
            mirror,
            ledger_root,
        };
        let mut summary = ctx.run(resolved).await;
        summary.kind = job.kind.clone();
        let dir = root_path.join("jobs").join(&job.dir);
        let files = self.store_files(job, &key, &dir).await?;
        let _ = std::fs::remove_dir_all(&root_path);
        Ok(JobDone { summary, files })
    }

    /// With the Batch API, a plan job's record of its provider batches (the one file of its
    /// directory not rebuilt from its journal): restored from the job's `.dir` subject, and
    /// mirrored there line by line, so a worker taking the job over polls the same batches
    /// rather than submitting its calls again. A goal job's whole directory is mirrored
    /// already (`None`).
    async fn plan_job_ledger(
        &self,
        job: &ResolvedJob,
        root: &RunDir,
        journal_subject: &str,
    ) -> crate::Result<Option<RunDir>> {
        if self.resources.batch.is_none() || !matches!(job.input, JobInput::Plan(_)) {
            return Ok(None);
        }
        let subject = dir_subject(journal_subject);
        restore_dir(&self.queue, &subject, root).await?;
        Ok(Some(root.clone().with_mirror(DirStream::new(
            self.queue.clone(),
            subject,
            self.stop.clone(),
        ))))
    }

    /// The message's job as a batch runs it: its plan validated against this worker's tools.
    fn resolve(&self, job: &JobMessage) -> crate::Result<ResolvedJob> {
        let metadata: BTreeMap<String, String> =
            job.options.run.meta.meta.iter().cloned().collect();
        let (kind, input) = match (&job.work, &job.plan) {
            (Work::Goal { goal, .. }, _) => ("goal", JobInput::Goal(goal.clone())),
            (Work::Plan { .. }, Some(spec)) => {
                let mut spec = spec.clone();
                spec.about.meta.extend(metadata.clone());
                let plan =
                    ValidatedPlan::with_tools(spec, &self.resources.catalog()).map_err(|e| {
                        let each: Vec<String> = e.0.iter().map(ToString::to_string).collect();
                        QueueError::new(format!("invalid plan: {}", each.join("; ")))
                    })?;
                // Given inline, as the job line of the previous version was.
                ("plan", JobInput::Plan(Box::new(plan)))
            }
            (Work::Plan { .. }, None) => {
                return Err(QueueError::new("the message holds no plan"));
            }
        };
        Ok(ResolvedJob {
            id: job.id.clone(),
            line: job.line,
            dir: job.dir.clone(),
            kind,
            input,
            metadata,
            answers: match &job.work {
                Work::Goal { research, .. } => research
                    .planner
                    .answers
                    .clone()
                    .map(|a| a.0)
                    .unwrap_or_default(),
                Work::Plan { .. } => Vec::new(),
            },
        })
    }

    /// Stores the run directory as one object (a JSON map of relative path to base64
    /// content: one upload per job rather than one per file); returns the relative paths.
    async fn store_files(
        &self,
        job: &JobMessage,
        key: &str,
        dir: &Path,
    ) -> crate::Result<Vec<String>> {
        use base64::Engine;
        let files = list_files(dir);
        let mut archive = serde_json::Map::new();
        for rel in &files {
            let bytes = std::fs::read(dir.join(rel))
                .map_err(|e| QueueError::of(&format!("reading {rel}"), e))?;
            archive.insert(
                rel.clone(),
                base64::engine::general_purpose::STANDARD
                    .encode(bytes)
                    .into(),
            );
        }
        let body = serde_json::to_vec(&archive).map_err(|e| QueueError::of("run archive", e))?;
        let name = object_name(&job.batch, key, RUN_ARCHIVE);
        crate::record::retrying("storing the run directory", || {
            let mut reader = body.as_slice();
            let name = name.clone();
            async move { self.queue.runs.put(name.as_str(), &mut reader).await }
        })
        .await?;
        Ok(files)
    }
}

/// Files under `dir` as `/`-separated relative paths (no lock file, no temporaries, no links).
fn list_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    while let Some((at, prefix)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || planwave_storage::is_leftover_temp(&e.file_name()) {
                continue;
            }
            let rel = format!("{prefix}{name}");
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push((e.path(), format!("{rel}/"))),
                Ok(t) if t.is_file() => out.push(rel),
                _ => {}
            }
        }
    }
    out.sort();
    out
}
