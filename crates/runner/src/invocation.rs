//! `invocation.json`: what started a run or batch and the working directory it started in,
//! so it can be resumed with the same settings. A job records its [`JobSpec`] (typed; every
//! front end writes the same: [`Invocation`]); a batch records its command line
//! ([`BatchInvocation`]), which the binary parses again.
//!
//! API keys are never options, so none are recorded; an option whose URL carries a
//! credential (`--llm-base-url http://user:SECRET@host/v1`) is left out with its value, and
//! named, so a resume asks for it again instead of guessing.

use std::path::{Path, PathBuf};

use crate::error::Context;
use planwave_config::spec::JobSpec;
use planwave_storage::{RunDir, RunDirError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::InvalidInput;

const FILE: &str = "invocation.json";

/// A job's `invocation.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Invocation {
    /// The job, as chosen (a run, `run --recover`, a research).
    pub spec: JobSpec,
    #[serde(flatten)]
    pub origin: Origin,
}

/// A batch's `invocation.json`: the arguments after the program name, as typed (a batch's
/// options are its command's flags, parsed again by the binary to resume it).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BatchInvocation {
    pub argv: Vec<String>,
    #[serde(flatten)]
    pub origin: Origin,
}

/// Where a job or batch was started, and what of it was left out.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    pub cwd: PathBuf,
    /// Flags left out because their URL carried a credential.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<String>,
}

impl Origin {
    /// Before resuming: the model URL left out for its credential must come from the
    /// environment (it cannot be guessed); other flags left out are named in the notes.
    pub fn check_redacted(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Vec<String>, InvalidInput> {
        let mut notes = Vec::new();
        for flag in &self.redacted {
            if flag == "--llm-base-url" {
                let var = planwave_config::ENV_BASE_URL;
                if env(var).is_none_or(|v| v.trim().is_empty()) {
                    return Err(InvalidInput::one(
                        FILE,
                        format!(
                            "the run's --llm-base-url carried credentials, which are not recorded; set {var} to that URL to resume"
                        ),
                    ));
                }
            } else {
                notes.push(format!(
                    "{flag} was not recorded (its URL carried credentials); give it again if needed"
                ));
            }
        }
        Ok(notes)
    }

    /// Moves to the recorded working directory, so relative paths (config, plan, job and
    /// latency files) mean what they meant.
    pub fn enter_cwd(&self) -> std::io::Result<()> {
        std::env::set_current_dir(&self.cwd)
    }
}

impl BatchInvocation {
    /// This process's own command line and working directory.
    pub fn current() -> crate::Result<BatchInvocation> {
        let cwd = std::env::current_dir().context("reading the working directory")?;
        let args = std::env::args_os()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned());
        let (argv, redacted) = without_secrets(args);
        Ok(BatchInvocation {
            argv,
            origin: Origin { cwd, redacted },
        })
    }

    pub fn record(&self, out: &RunDir) -> Result<(), RunDirError> {
        out.write_json(FILE, self)
    }

    /// The batch's invocation recorded in `dir`, or why `dir` is not a batch directory.
    pub fn read(dir: &Path) -> Result<BatchInvocation, InvalidInput> {
        read(dir, "a batch directory")
    }
}

impl Invocation {
    /// A job's spec as recorded: a model URL that carries a credential is left out (and
    /// named), so nothing secret reaches the run directory.
    pub fn job(spec: &JobSpec, cwd: PathBuf) -> Invocation {
        let mut spec = spec.clone();
        let mut redacted = Vec::new();
        let llm = &mut spec.options.host.llm;
        if llm
            .llm_base_url
            .as_deref()
            .is_some_and(planwave_redact::url_has_secret)
        {
            llm.llm_base_url = None;
            redacted.push("--llm-base-url".to_owned());
        }
        Invocation {
            spec,
            origin: Origin { cwd, redacted },
        }
    }

    /// A job started by this process: its spec, and the other flags of its command line
    /// whose URL carried a credential named (they are not part of the job, so a resume is
    /// told to give them again).
    pub fn current_job(spec: &JobSpec) -> crate::Result<Invocation> {
        let current = BatchInvocation::current()?;
        let mut inv = Invocation::job(spec, current.origin.cwd);
        for flag in current.origin.redacted {
            if !inv.origin.redacted.contains(&flag) {
                inv.origin.redacted.push(flag);
            }
        }
        Ok(inv)
    }

    pub fn record(&self, out: &RunDir) -> Result<(), RunDirError> {
        out.write_json(FILE, self)
    }

    /// The job recorded in `dir`, or why `dir` is not a resumable run directory. A file as
    /// unreleased builds wrote it (only a command line, `argv`, or options grouped by kind)
    /// is refused saying what to do instead.
    pub fn read(dir: &Path) -> Result<Invocation, InvalidInput> {
        let value: Value = read(dir, "a resumable run directory")?;
        let old = if value.get("argv").is_some() && value.get("spec").is_none() {
            Some("only a command line (\"argv\")")
        } else if ["exec", "model"]
            .iter()
            .any(|group| value["spec"]["options"].get(group).is_some())
        {
            Some("its options grouped by kind (`exec`, `model`)")
        } else {
            None
        };
        if let Some(what) = old {
            return Err(InvalidInput::one(
                dir.display().to_string(),
                format!(
                    "{FILE} records {what}, as unreleased builds wrote it; this version cannot \
                     resume it: start the job again with `planwave run PLAN --out DIR` or \
                     `planwave research GOAL --out DIR` (`--force` replaces this directory)"
                ),
            ));
        }
        serde_json::from_value(value).map_err(|e| {
            InvalidInput::one(
                dir.display().to_string(),
                format!("{FILE} is not valid: {e}"),
            )
        })
    }
}

/// `T` from `dir`'s `invocation.json`; `what` names the directory a good one would be.
fn read<T: DeserializeOwned>(dir: &Path, what: &str) -> Result<T, InvalidInput> {
    let bad = |p: String| InvalidInput::one(dir.display().to_string(), p);
    let text = std::fs::read_to_string(dir.join(FILE))
        .map_err(|e| bad(format!("not {what}: cannot read {FILE}: {e}")))?;
    serde_json::from_str(&text).map_err(|e| bad(format!("{FILE} is not valid: {e}")))
}

/// `args` without the flags (and their values) whose URL carries a credential, and the names
/// of those flags; a bare argument holding such a URL is kept, redacted.
fn without_secrets(args: impl Iterator<Item = String>) -> (Vec<String>, Vec<String>) {
    use planwave_redact::url_has_secret;
    let args: Vec<String> = args.collect();
    let mut kept = Vec::with_capacity(args.len());
    let mut redacted = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if let Some((flag, value)) = arg.split_once('=').filter(|(f, _)| f.starts_with("--"))
            && url_has_secret(value)
        {
            redacted.push(flag.to_owned());
        } else if arg.starts_with("--") && args.get(i + 1).is_some_and(|v| url_has_secret(v)) {
            redacted.push(arg.clone());
            i += 1;
        } else if url_has_secret(arg) {
            kept.push(planwave_redact::redact_url(arg).into_owned());
            redacted.push(arg.split("://").next().unwrap_or("url").to_owned());
        } else {
            kept.push(arg.clone());
        }
        i += 1;
    }
    (kept, redacted)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_spec_is_recorded_without_a_model_url_that_carries_credentials() {
        let mut spec: planwave_config::spec::JobSpec = serde_json::from_value(
            serde_json::json!({"work": {"plan": {"plan": "p.json"}}, "out": "o"}),
        )
        .unwrap();
        spec.options.host.llm.llm_base_url = Some("http://u:S3CRET@h/v1".into());
        let inv = super::Invocation::job(&spec, "/".into());
        let text = serde_json::to_string(&inv).unwrap();
        assert!(!text.contains("S3CRET"), "{text}");
        assert_eq!(inv.origin.redacted, ["--llm-base-url"]);
        let back: super::Invocation = serde_json::from_str(&text).unwrap();
        assert_eq!(back.spec.out, std::path::PathBuf::from("o"));
    }

    #[test]
    fn flags_with_credentials_in_their_urls_are_left_out() {
        let args = [
            "run",
            "p.json",
            "--llm-base-url",
            "http://u:S3CRET@h/v1",
            "--otlp-endpoint=http://u:S3CRET@o:4317",
            "--model",
            "m",
        ];
        let (argv, redacted) = super::without_secrets(args.iter().map(|s| s.to_string()));
        assert_eq!(argv, ["run", "p.json", "--model", "m"]);
        assert_eq!(redacted, ["--llm-base-url", "--otlp-endpoint"]);
    }

    #[test]
    fn a_command_line_recorded_without_a_spec_is_refused_saying_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let old = serde_json::json!({"argv": ["run", "p.json", "--out", "o"], "cwd": "/"});
        std::fs::write(dir.path().join("invocation.json"), old.to_string()).unwrap();
        let err = super::Invocation::read(dir.path()).unwrap_err();
        assert_eq!(err.problems.len(), 1);
        assert!(
            err.problems[0].starts_with("invocation.json records only a command line"),
            "{err:?}"
        );
        assert!(
            err.problems[0].contains("`planwave run PLAN --out DIR`"),
            "{err:?}"
        );
        let grouped = serde_json::json!({"spec": {"work": {"plan": {"plan": "p.json"}},
            "out": "o", "options": {"exec": {"seed": 1}}}, "cwd": "/"});
        std::fs::write(dir.path().join("invocation.json"), grouped.to_string()).unwrap();
        let err = super::Invocation::read(dir.path()).unwrap_err();
        assert!(
            err.problems[0].starts_with("invocation.json records its options grouped"),
            "{err:?}"
        );
    }
}
