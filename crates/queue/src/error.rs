//! One error type: what failed, in words (the server's URL never appears, it may carry
//! credentials).

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct QueueError(pub String);

impl QueueError {
    pub fn new(what: impl Into<String>) -> QueueError {
        QueueError(what.into())
    }

    /// `what: cause`, for any error of the NATS client or the runner.
    pub fn of(what: &str, cause: impl std::fmt::Display) -> QueueError {
        QueueError(format!("{what}: {cause}"))
    }
}
