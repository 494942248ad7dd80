//! Ctrl-C and SIGTERM as a cancellation token: the one place a process turns a stop signal
//! into the token every layer below watches (planning, execution, the loop's model calls, a
//! batch). `docker stop`, systemd and `timeout` send SIGTERM; it gets the same clean stop as
//! Ctrl-C (journal flushed, `run.json` cancelled, MCP servers stopped), and front ends can
//! tell which signal it was ([`terminated`]) to exit with 143 rather than 130.

use std::sync::atomic::{AtomicBool, Ordering};

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

static TERMINATED: AtomicBool = AtomicBool::new(false);

/// Whether this process was asked to stop by SIGTERM (rather than Ctrl-C).
pub fn terminated() -> bool {
    TERMINATED.load(Ordering::SeqCst)
}

/// Resolves on the first Ctrl-C or SIGTERM (recording which, see [`terminated`]).
pub async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    r = tokio::signal::ctrl_c() => {
                        // Without a Ctrl-C handler, only SIGTERM can stop us.
                        if r.is_err() {
                            term.recv().await;
                            TERMINATED.store(true, Ordering::SeqCst);
                        }
                    }
                    _ = term.recv() => TERMINATED.store(true, Ordering::SeqCst),
                }
                return;
            }
            Err(e) => tracing::warn!("cannot listen for SIGTERM: {e}"),
        }
    }
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Cancels its token on Ctrl-C or SIGTERM for as long as it lives.
pub struct CtrlC {
    token: CancellationToken,
    listener: JoinHandle<()>,
}

impl CtrlC {
    /// Starts listening (inside a tokio runtime).
    pub fn listen() -> CtrlC {
        let token = CancellationToken::new();
        let listener = {
            let token = token.clone();
            tokio::spawn(async move {
                stop_signal().await;
                token.cancel();
            })
        };
        CtrlC { token, listener }
    }

    pub fn token(&self) -> CancellationToken {
        self.token.clone()
    }
}

impl Drop for CtrlC {
    fn drop(&mut self) {
        self.listener.abort();
    }
}
