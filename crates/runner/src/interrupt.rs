//! Ctrl-C as a cancellation token: the one place a process turns the signal into the
//! token every layer below watches (planning, execution, the loop's model calls, a batch).

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Cancels its token on Ctrl-C for as long as it lives.
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
                if tokio::signal::ctrl_c().await.is_ok() {
                    token.cancel();
                }
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
