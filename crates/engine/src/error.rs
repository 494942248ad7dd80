//! How a run can fail as a whole (a task's failure is its record's, never this).

use planwave_storage::RunDirError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("could not start the {actor} actor: {reason}")]
    Spawn { actor: &'static str, reason: String },
    #[error("the {0} actor stopped before the run finished")]
    Lost(&'static str),
    /// An actor of the run's own machinery (not a subagent, whose panic fails only its task)
    /// panicked: the run stopped there. Tasks that had completed are in the journal, so a
    /// resume goes on from them.
    #[error(
        "the {actor} actor panicked: {message}; the run stopped (a resume continues from its journal)"
    )]
    Panicked {
        actor: &'static str,
        message: String,
    },
    #[error(transparent)]
    Output(#[from] RunDirError),
}
