//! A local server's stdout as the blocking driver reads it: waited for until an instant the
//! operation names, or until a cancel wakes the wait, whichever comes first.
//!
//! On Unix the operation's own thread reads the pipe: `poll(2)` on stdout and on a wake-up
//! socket (which a cancel writes a byte to), then one read of what is there. No thread of its
//! own, so an answer costs no hand-over between threads (a wake-up and a switch each way, as
//! much as the rest of a warm call) and a server's start no thread's start. Between
//! operations nobody reads: what the server writes then waits in the pipe (bounded by it: a
//! server that fills it blocks until the next operation reads), as it does on the tokio
//! driver. Elsewhere a reader thread hands stdout over, at most 1 MiB ahead of the operation.
//!
//! Nothing here decides what the bytes mean or when the wait is over; it must never block
//! past the instant it was given, nor read after a cancel woke it.

use std::time::Instant;

use std::process::ChildStdout;

use crate::lanes::{Shared, Wake};

/// What a wait brought.
pub(crate) enum Delivery {
    /// Bytes of stdout, as one read brought them: [`Stdout::chunk`] until the next wait (read
    /// where they landed, never copied).
    Chunk,
    /// Stdout ended: the process closed it (it is exiting, or gone).
    Closed,
    /// The instant came, or a cancel woke the waiter.
    Timeout,
}

/// One read of stdout at most (64 KiB).
const CHUNK: usize = 64 * 1024;

#[cfg(unix)]
pub(crate) use unix::Stdout;

#[cfg(not(unix))]
pub(crate) use threaded::Stdout;

#[cfg(unix)]
mod unix {
    use std::io::{ErrorKind, Read, Write};
    use std::os::unix::net::UnixStream;
    use std::sync::Arc;
    use std::time::Duration;

    use rustix::event::{PollFd, PollFlags, Timespec};

    use super::{CHUNK, ChildStdout, Delivery, Instant, Shared, Wake};

    /// The server's stdout, read on the operation's thread; see the [module docs](super).
    pub(crate) struct Stdout {
        pipe: ChildStdout,
        buf: Vec<u8>,
        /// How much of `buf` the last read filled.
        filled: usize,
        wake: Arc<WakeUp>,
    }

    /// The wake-up a cancel sends: a byte on a socket pair the wait also polls.
    pub(crate) struct WakeUp {
        tx: UnixStream,
        rx: UnixStream,
    }

    impl Wake for WakeUp {
        fn wake(&self) {
            // Non-blocking: a full socket already holds a wake-up.
            let _ = (&self.tx).write(&[1]);
        }
    }

    impl WakeUp {
        /// Takes the wake-ups sent so far; whether there was one.
        fn take(&self) -> bool {
            let mut sink = [0u8; 64];
            let mut woken = false;
            while let Ok(n) = (&self.rx).read(&mut sink) {
                if n == 0 {
                    break;
                }
                woken = true;
            }
            woken
        }
    }

    impl Stdout {
        /// Reads `pipe` from now on (made non-blocking: a read never waits).
        pub(crate) fn new(pipe: ChildStdout) -> std::io::Result<Self> {
            rustix::io::ioctl_fionbio(&pipe, true).map_err(std::io::Error::from)?;
            let (tx, rx) = UnixStream::pair()?;
            tx.set_nonblocking(true)?;
            rx.set_nonblocking(true)?;
            Ok(Self {
                pipe,
                buf: vec![0u8; CHUNK],
                filled: 0,
                wake: Arc::new(WakeUp { tx, rx }),
            })
        }

        /// What a cancel calls to wake this stdout's wait.
        pub(crate) fn waker(&self) -> Arc<dyn Wake> {
            Arc::clone(&self.wake) as Arc<dyn Wake>
        }

        /// The bytes the last [`Delivery::Chunk`] brought.
        pub(crate) fn chunk(&self) -> &[u8] {
            &self.buf[..self.filled]
        }

        /// Waits for stdout until `until` (or a cancel). What stdout holds already is
        /// delivered first, as the bytes came before the instant or the cancel did.
        pub(crate) fn wait(&mut self, until: Instant, shared: &Shared) -> Delivery {
            loop {
                let now = Instant::now();
                let due = shared.is_cancelled() || now >= until;
                // Due: one look at what is there already, no wait.
                let left = if due { Duration::ZERO } else { until - now };
                let timeout = Timespec {
                    tv_sec: i64::try_from(left.as_secs()).unwrap_or(i64::MAX),
                    tv_nsec: i64::from(left.subsec_nanos()),
                };
                let mut fds = [
                    PollFd::new(&self.pipe, PollFlags::IN),
                    PollFd::new(&self.wake.rx, PollFlags::IN),
                ];
                match rustix::event::poll(&mut fds, Some(&timeout)) {
                    Ok(_) => {}
                    // A signal: look again.
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(_) => return Delivery::Closed,
                }
                let (stdout, woken) = (!fds[0].revents().is_empty(), !fds[1].revents().is_empty());
                if stdout {
                    // Readable, closed or in error: the read says which.
                    match self.pipe.read(&mut self.buf) {
                        Ok(0) => return Delivery::Closed,
                        Ok(n) => {
                            self.filled = n;
                            return Delivery::Chunk;
                        }
                        Err(err)
                            if matches!(
                                err.kind(),
                                ErrorKind::WouldBlock | ErrorKind::Interrupted
                            ) => {}
                        Err(_) => return Delivery::Closed,
                    }
                }
                if (woken && self.wake.take()) || due {
                    return Delivery::Timeout;
                }
            }
        }
    }
}

#[cfg(not(unix))]
mod threaded {
    use std::collections::VecDeque;
    use std::io::Read;
    use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

    use super::{CHUNK, ChildStdout, Delivery, Instant, Shared, Wake};

    /// The most stdout bytes waiting to be fed (1 MiB): past it the reader stops reading (the
    /// server then blocks on a full pipe) until the operation catches up.
    const QUEUE_BYTES: usize = 1024 * 1024;

    /// What the reader thread hands over, and whether a cancel wants the waiter up.
    #[derive(Default)]
    struct MailboxState {
        chunks: VecDeque<Vec<u8>>,
        queued: usize,
        closed: bool,
        woken: bool,
    }

    /// The meeting point of the stdout reader, the operation's thread and a cancel.
    #[derive(Default)]
    struct Mailbox {
        state: Mutex<MailboxState>,
        changed: Condvar,
    }

    impl Mailbox {
        fn lock(&self) -> MutexGuard<'_, MailboxState> {
            self.state.lock().unwrap_or_else(PoisonError::into_inner)
        }

        fn push(&self, chunk: Vec<u8>) {
            let mut state = self.lock();
            while state.queued >= QUEUE_BYTES {
                state = self
                    .changed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            state.queued += chunk.len();
            state.chunks.push_back(chunk);
            self.changed.notify_all();
        }

        fn close(&self) {
            self.lock().closed = true;
            self.changed.notify_all();
        }
    }

    impl Wake for Mailbox {
        fn wake(&self) {
            self.lock().woken = true;
            self.changed.notify_all();
        }
    }

    /// The server's stdout, handed over by a reader thread; see the [module docs](super).
    pub(crate) struct Stdout {
        mailbox: Arc<Mailbox>,
        /// The chunk the last [`Delivery::Chunk`] brought.
        current: Vec<u8>,
    }

    impl Stdout {
        pub(crate) fn new(mut pipe: ChildStdout) -> std::io::Result<Self> {
            let mailbox = Arc::new(Mailbox::default());
            let reader = Arc::clone(&mailbox);
            std::thread::spawn(move || {
                let mut buf = vec![0u8; CHUNK];
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    reader.push(buf[..n].to_vec());
                }
                reader.close();
            });
            Ok(Self {
                mailbox,
                current: Vec::new(),
            })
        }

        pub(crate) fn waker(&self) -> Arc<dyn Wake> {
            Arc::clone(&self.mailbox) as Arc<dyn Wake>
        }

        /// The bytes the last [`Delivery::Chunk`] brought.
        pub(crate) fn chunk(&self) -> &[u8] {
            &self.current
        }

        pub(crate) fn wait(&mut self, until: Instant, shared: &Shared) -> Delivery {
            let mut state = self.mailbox.lock();
            loop {
                if let Some(chunk) = state.chunks.pop_front() {
                    state.queued -= chunk.len();
                    self.mailbox.changed.notify_all();
                    self.current = chunk;
                    return Delivery::Chunk;
                }
                if state.closed {
                    return Delivery::Closed;
                }
                let now = Instant::now();
                if state.woken || shared.is_cancelled() || now >= until {
                    state.woken = false;
                    return Delivery::Timeout;
                }
                state = self
                    .mailbox
                    .changed
                    .wait_timeout(state, until - now)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
        }
    }
}
