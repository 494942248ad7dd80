//! `invocation.json`: the command line and working directory that started a run or batch, so
//! it can be resumed with the same settings. API keys are never flags, so none are recorded.

use std::path::{Path, PathBuf};

use crate::error::Context;
use planwave_engine::{RunDir, RunDirError};
use serde::{Deserialize, Serialize};

use crate::InvalidInput;

const FILE: &str = "invocation.json";

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Invocation {
    /// The arguments after the program name.
    pub argv: Vec<String>,
    pub cwd: PathBuf,
}

impl Invocation {
    /// This process's own command line and working directory.
    pub fn current() -> crate::Result<Invocation> {
        let cwd = std::env::current_dir().context("reading the working directory")?;
        let argv = std::env::args_os()
            .skip(1)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        Ok(Invocation { argv, cwd })
    }

    pub fn record(&self, out: &RunDir) -> Result<(), RunDirError> {
        out.write_json(FILE, self)
    }

    /// The invocation recorded in `dir`; `what` names the directory a good one would be
    /// ("a resumable run directory", "a batch directory") for the error.
    pub fn read(dir: &Path, what: &str) -> Result<Invocation, InvalidInput> {
        let bad = |p: String| InvalidInput::one(dir.display().to_string(), p);
        let text = std::fs::read_to_string(dir.join(FILE))
            .map_err(|e| bad(format!("not {what}: cannot read {FILE}: {e}")))?;
        serde_json::from_str(&text).map_err(|e| bad(format!("{FILE} is not valid: {e}")))
    }

    /// Moves to the recorded working directory, so relative paths in the command line
    /// (config, plan and latency files) mean what they meant.
    pub fn enter_cwd(&self) -> std::io::Result<()> {
        std::env::set_current_dir(&self.cwd)
    }
}
