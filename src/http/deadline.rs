//! A write timeout for a connection: a write (or flush) that cannot make progress for the
//! timeout fails with `TimedOut`, so a client that stops reading, whatever it is being sent,
//! is dropped instead of holding its connection, its task and its buffers forever. The kernel
//! send buffer is kept small for the same reason (see `server`).

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

pub struct WriteDeadline<T> {
    inner: T,
    timeout: Duration,
    /// Armed while a write is blocked; cleared by any progress.
    stalled: Option<Pin<Box<Sleep>>>,
    timeouts: Arc<AtomicU64>,
}

impl<T> WriteDeadline<T> {
    /// `timeouts` counts the connections cut off.
    pub fn new(inner: T, timeout: Duration, timeouts: Arc<AtomicU64>) -> Self {
        WriteDeadline {
            inner,
            timeout,
            stalled: None,
            timeouts,
        }
    }

    fn check<R>(
        &mut self,
        cx: &mut Context<'_>,
        result: Poll<io::Result<R>>,
    ) -> Poll<io::Result<R>> {
        match result {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => {
                let timeout = self.timeout;
                let sleep = self
                    .stalled
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => {
                        self.timeouts.fetch_add(1, Ordering::Relaxed);
                        Poll::Ready(Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            "the client has not read for the write timeout",
                        )))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }
}

use std::future::Future;

impl<T: AsyncRead + Unpin> AsyncRead for WriteDeadline<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteDeadline<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.check(cx, result)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.check(cx, result)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_flush(cx);
        self.check(cx, result)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.check(cx, result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A peer that never reads: writes stop once the pipe's buffer is full, and the deadline
    /// (on tokio's paused clock) turns the wait into an error and counts it.
    #[tokio::test(start_paused = true)]
    async fn a_write_that_cannot_progress_fails_after_the_timeout() {
        let (near, _far) = tokio::io::duplex(1024);
        let timeouts = Arc::new(AtomicU64::new(0));
        let mut io = WriteDeadline::new(near, Duration::from_secs(10), timeouts.clone());
        let started = tokio::time::Instant::now();
        let err = io.write_all(&[0u8; 4096]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(10));
        assert_eq!(timeouts.load(Ordering::Relaxed), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn progress_rearms_the_deadline() {
        let (near, mut far) = tokio::io::duplex(1024);
        let timeouts = Arc::new(AtomicU64::new(0));
        let mut io = WriteDeadline::new(near, Duration::from_secs(10), timeouts.clone());
        // The peer reads 1 KiB every 6 s: each wait is under the timeout, the total is not.
        let reader = tokio::spawn(async move {
            use tokio::io::AsyncReadExt;
            let mut buf = [0u8; 1024];
            let mut total = 0;
            while total < 4096 {
                tokio::time::sleep(Duration::from_secs(6)).await;
                total += far.read(&mut buf).await.unwrap();
            }
            total
        });
        io.write_all(&[0u8; 4096]).await.unwrap();
        io.flush().await.unwrap();
        assert_eq!(reader.await.unwrap(), 4096);
        assert_eq!(timeouts.load(Ordering::Relaxed), 0);
    }
}
