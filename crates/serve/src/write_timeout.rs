//! A connection whose writes must make progress (`--write-timeout`): a client that asks for
//! an event stream (or any answer) and never reads fills the socket's buffers, and from then
//! on the server's writes wait for it. Without a bound it would hold its connection, and a
//! place under `--max-connections`, for as long as it likes. Here a write that cannot proceed
//! starts a timer; any byte written stops it; when it runs out the write fails (`TimedOut`)
//! and hyper drops the connection. Time a client spends sending, or an idle kept-alive
//! connection, is not counted: only a server that has something to send and cannot.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

pub struct WriteTimeout<S> {
    inner: S,
    limit: Duration,
    /// Running while a write is blocked; cleared by any progress.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> WriteTimeout<S> {
    pub fn new(inner: S, limit: Duration) -> WriteTimeout<S> {
        WriteTimeout {
            inner,
            limit,
            stalled: None,
        }
    }

    /// What a blocked write returns: still waiting, or the error once the limit has passed
    /// since it first blocked. Registers the timer with `cx`, so the connection is polled
    /// again when it runs out even if the client never reads.
    fn blocked<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let limit = self.limit;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the client read nothing for {limit:?} (--write-timeout): connection dropped"
                ),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    fn settle<T>(
        &mut self,
        cx: &mut Context<'_>,
        polled: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match polled {
            Poll::Pending => self.blocked(cx),
            done => {
                self.stalled = None;
                done
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteTimeout<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.settle(cx, polled)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.settle(cx, polled)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_flush(cx);
        this.settle(cx, polled)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.settle(cx, polled)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::WriteTimeout;

    #[tokio::test(start_paused = true)]
    async fn a_write_nobody_reads_fails_after_the_limit_and_progress_restarts_the_clock() {
        let (server, mut client) = tokio::io::duplex(16);
        let mut w = WriteTimeout::new(server, Duration::from_secs(5));
        w.write_all(&[1; 16]).await.unwrap();
        // Full: the next write waits. The client reads just before the limit, so it goes on.
        let reader = async {
            tokio::time::sleep(Duration::from_secs(4)).await;
            let mut buf = [0; 16];
            client.read_exact(&mut buf).await.unwrap();
            client
        };
        let (wrote, mut client) = tokio::join!(w.write_all(&[2; 16]), reader);
        wrote.unwrap();
        // Full again, and nobody reads: refused once 5 s have passed since it blocked (the
        // 4 s waited before do not count).
        let started = tokio::time::Instant::now();
        let err = w.write_all(&[3; 1]).await.unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        let mut buf = [0; 16];
        client.read_exact(&mut buf).await.unwrap();
        assert_eq!(buf, [2; 16]);
    }
}
