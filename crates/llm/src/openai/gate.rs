//! A limiter outside the client that admits every HTTP attempt: a fleet's limits shared by
//! many processes (`planwave worker`s on a queue hold them in NATS KV).
//!
//! Why per attempt rather than around `chat()`: a provider counts every request it receives,
//! a retry after a 429, a 5xx or a timeout included, and a call that finally fails made its
//! attempts all the same. Admitted here, each one is charged before it goes, so no shared
//! window ever lets through more than the provider counts. The client's own [`Limiter`]
//! (this process's) is waited for first, then the gate.
//!
//! [`Limiter`]: super::Limiter

use async_trait::async_trait;

/// Admits HTTP attempts; set as [`OpenAiConfig::gate`](super::OpenAiConfig::gate).
#[async_trait]
pub trait AttemptGate: Send + Sync {
    /// Waits until one more attempt of about `estimate` tokens (prompt and the completion's
    /// bound) may be sent, and charges it. The ticket is held while the attempt runs.
    async fn admit(&self, estimate: u64) -> Box<dyn AdmittedAttempt>;
}

/// One admitted attempt. Dropped without [`AdmittedAttempt::settle`] (the call was
/// cancelled), it keeps its charge and frees whatever it held.
#[async_trait]
pub trait AdmittedAttempt: Send {
    /// The attempt is over: `used` is the usage the answer reported, `None` when it failed
    /// (what the provider counted of it is unknown, so the estimate stands).
    async fn settle(self: Box<Self>, used: Option<u64>);
}
