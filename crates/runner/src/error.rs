//! What stops a job, typed so each front end maps it onto its own answer: bad input is the
//! CLI's exit 2 and a server's 422; anything else is the job's environment failing (a file,
//! the journal, the model client, the engine).

use std::error::Error as StdError;

use crate::InvalidInput;

type Source = Box<dyn StdError + Send + Sync + 'static>;

/// `{}` shows the error itself; `{:#}` its whole chain, `a: b: c`, as one line for a
/// record (a batch's `error`, a note).
#[derive(Debug)]
pub enum RunnerError {
    /// The caller's input: a plan, the settings, the goal, a job file, a run directory that
    /// cannot be resumed, or a planner that never produced a valid plan.
    Invalid(InvalidInput),
    /// Something the job was doing failed; `doing` says what, the source why.
    Failed { doing: String, source: Source },
    /// A failure that names its own subject (a run directory write, the lock, the model
    /// client's configuration).
    Other(Source),
    /// A failure with nothing beneath it.
    Message(String),
    /// The goal is too vague to plan: the planner asked these questions, and no answers
    /// were given (`--answers`, a job line's or request's `answers`).
    NeedsInput(Vec<String>),
}

impl std::fmt::Display for RunnerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunnerError::Invalid(i) => std::fmt::Display::fmt(i, f)?,
            RunnerError::Failed { doing, .. } => f.write_str(doing)?,
            RunnerError::Other(source) => std::fmt::Display::fmt(source, f)?,
            RunnerError::Message(m) => f.write_str(m)?,
            RunnerError::NeedsInput(q) => {
                write!(f, "the goal needs clarifying: {}", q.join(" / "))?;
            }
        }
        if f.alternate() {
            let mut cause = StdError::source(self);
            while let Some(c) = cause {
                write!(f, ": {c}")?;
                cause = c.source();
            }
        }
        Ok(())
    }
}

impl StdError for RunnerError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            RunnerError::Failed { source, .. } => Some(source.as_ref()),
            // Transparent: the wrapped error stands for this one, so its causes come next.
            RunnerError::Other(source) => source.source(),
            RunnerError::Invalid(_) | RunnerError::Message(_) | RunnerError::NeedsInput(_) => None,
        }
    }
}

impl From<InvalidInput> for RunnerError {
    fn from(e: InvalidInput) -> RunnerError {
        RunnerError::Invalid(e)
    }
}

impl RunnerError {
    pub fn message(text: impl Into<String>) -> RunnerError {
        RunnerError::Message(text.into())
    }

    /// The bad input this error is about, if it is one.
    pub fn invalid_input(&self) -> Option<&InvalidInput> {
        match self {
            RunnerError::Invalid(i) => Some(i),
            RunnerError::Failed { source, .. } | RunnerError::Other(source) => source
                .downcast_ref::<RunnerError>()
                .and_then(RunnerError::invalid_input),
            RunnerError::Message(_) | RunnerError::NeedsInput(_) => None,
        }
    }

    /// The planner's questions, when this error is that the goal needs clarifying.
    pub fn questions(&self) -> Option<&[String]> {
        match self {
            RunnerError::NeedsInput(q) => Some(q),
            RunnerError::Failed { source, .. } | RunnerError::Other(source) => source
                .downcast_ref::<RunnerError>()
                .and_then(RunnerError::questions),
            _ => None,
        }
    }
}

macro_rules! other_from {
    ($($t:ty),*) => {
        $(impl From<$t> for RunnerError {
            fn from(e: $t) -> RunnerError {
                RunnerError::Other(Box::new(e))
            }
        })*
    };
}

other_from!(
    planwave_storage::RunDirError,
    planwave_storage::LockError,
    planwave_llm::LlmError,
    std::io::Error,
    serde_json::Error
);

/// `.context(..)` for the runner's results: what was being done when the error happened.
pub trait Context<T> {
    fn context(self, doing: impl Into<String>) -> Result<T, RunnerError>;
    fn with_context<S: Into<String>>(self, doing: impl FnOnce() -> S) -> Result<T, RunnerError>;
}

impl<T, E: StdError + Send + Sync + 'static> Context<T> for Result<T, E> {
    fn context(self, doing: impl Into<String>) -> Result<T, RunnerError> {
        self.map_err(|e| RunnerError::Failed {
            doing: doing.into(),
            source: Box::new(e),
        })
    }

    fn with_context<S: Into<String>>(self, doing: impl FnOnce() -> S) -> Result<T, RunnerError> {
        self.map_err(|e| RunnerError::Failed {
            doing: doing().into(),
            source: Box::new(e),
        })
    }
}

pub type Result<T, E = RunnerError> = std::result::Result<T, E>;
