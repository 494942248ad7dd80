//! Why a sweep could not run.

use std::path::PathBuf;

use crate::run::LoadError;
use crate::traffic::TrafficError;

/// A sweep's failure. `E` is the front end's own error from [`Endpoint::Http`]'s `connect`,
/// handed back untouched so the front end keeps its own classification of it.
///
/// [`Endpoint::Http`]: crate::Endpoint::Http
#[derive(Debug, thiserror::Error)]
pub enum SweepError<E> {
    /// The traffic options contradict each other.
    #[error(transparent)]
    Traffic(#[from] TrafficError),
    /// A generated or replicated plan did not validate (`what` says which).
    #[error("{what}: {}", problems.join("; "))]
    Plan {
        what: &'static str,
        problems: Vec<String>,
    },
    /// A latency file names tasks the plan does not have: replaying it would silently fall
    /// back to the model for every task.
    #[error("{}: {}", path.display(), problems.join("; "))]
    LatencyFileIds {
        path: PathBuf,
        problems: Vec<String>,
    },
    /// A latency model was given for an endpoint, which decides latency itself.
    #[error("an endpoint decides latency itself")]
    LatencyWithEndpoint,
    /// Latencies were to be saved, but an endpoint's are not known before the run.
    #[error("the latencies of an endpoint are not known before the run")]
    LatenciesUnknown,
    /// The front end could not build the endpoint's client.
    #[error("{0}")]
    Connect(E),
    #[error("{action} {}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("writing the journal")]
    JournalClose(#[source] std::io::Error),
    #[error("running the workload")]
    Run(#[source] LoadError),
}

impl<E> SweepError<E> {
    pub(crate) fn io(action: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        SweepError::Io {
            action,
            path: path.to_owned(),
            source,
        }
    }
}
