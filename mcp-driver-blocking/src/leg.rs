//! The driver loop of [`mcp_proto::operation`] with real I/O: legs on the wire, their answers
//! fed back, nested legs run while a stream is read, waits for resumption.

use std::io::{self, Read};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use mcp_proto::{
    Clock, DRAIN_BYTES, Error, Input, Leg, LegId, LegKind, LegStatus, MonotonicClock, Observer,
    Operation, Outcome, Output, TransportError, TransportErrorKind,
};

use crate::cancel::Shared;
use crate::trace;
use mcp_driver_common::LegSpans;

/// The size of one body read. Small enough that events reach the observer as they arrive,
/// large enough that a big JSON answer takes few calls.
const CHUNK: usize = 16 * 1024;

/// The caller's authorizer, shared by the operations of a client (one person's step at a
/// time).
pub(crate) type SharedAuthorizer = std::sync::Arc<Mutex<Box<dyn crate::Authorizer>>>;

/// How long the wait for the authorizer's answer goes before it looks for a cancel again.
const AUTHORIZER_SLICE: std::time::Duration = std::time::Duration::from_millis(20);

/// Runs one operation: everything it needs from the client, borrowed for its duration.
pub(crate) struct Driver<'a> {
    agent: &'a ureq::Agent,
    shared: &'a Shared,
    /// The session, and its other operations' news.
    client: &'a crate::ClientShared,
    clock: MonotonicClock,
    observer: &'a mut dyn Observer,
    /// The caller's authorizer, for the step of an authorization that needs a person.
    authorizer: Option<SharedAuthorizer>,
    /// The body read buffer, kept by the client between legs and operations.
    buf: &'a mut Vec<u8>,
    /// The result, when the operation ended while a stream was being read.
    done: Option<Result<Outcome, Error>>,
    /// The operation's span (feature `tracing`), parent of each leg's.
    span: trace::Span,
    /// The spans of the legs in flight.
    spans: LegSpans,
}

impl<'a> Driver<'a> {
    pub(crate) fn new(
        agent: &'a ureq::Agent,
        shared: &'a Shared,
        client: &'a crate::ClientShared,
        observer: &'a mut dyn Observer,
        authorizer: Option<SharedAuthorizer>,
        buf: &'a mut Vec<u8>,
        span: trace::Span,
    ) -> Self {
        Self {
            agent,
            shared,
            client,
            clock: MonotonicClock,
            observer,
            authorizer,
            buf,
            done: None,
            span,
            spans: LegSpans::default(),
        }
    }

    /// Drives `op` to its end and returns its result: the loop of the proto's module docs,
    /// one leg at a time. A leg handed out while another is read (the answer to a server's
    /// request) runs to its end in between two reads of the outer one.
    pub(crate) fn drive(&mut self, op: &mut Operation) -> Result<Outcome, Error> {
        // What the operation handed out while it was given its session (under the lock).
        let mut next = None;
        loop {
            if let Some(result) = self.done.take() {
                return result;
            }
            self.cancelled(op);
            let output = next
                .take()
                .unwrap_or_else(|| op.poll_output(self.clock.now()));
            match output {
                Output::Update(update) => self.client.shell.apply(update),
                Output::Transmit(leg) => self.run_leg(op, leg),
                Output::Event(event) => self.observer.event(&event),
                Output::LegEnded(report) => self.spans.ended(&report, self.observer),
                Output::AwaitSession(_) => next = self.await_session(op),
                Output::Wait(until) => {
                    // Nothing is read at this level (every leg is fed to its end before the
                    // loop polls again): this is a pause the proto asked for (before resuming
                    // a stream the server closed). A cancel cuts it short.
                    self.shared.sleep_until(until);
                    op.handle_input(Input::Timeout, self.clock.now());
                }
                Output::Authorize(step) => self.authorize(op, &step),
                Output::Done(result) => return result,
            }
        }
    }

    /// Waits for the session another operation establishes: hands `op` the session, and
    /// while it still awaits it, waits (under the session's lock, so no change is missed)
    /// until the session changes, the operation is cancelled, or the instant it names (its
    /// budget's end). Returns what the operation handed out once it stopped waiting.
    fn await_session(&mut self, op: &mut Operation) -> Option<Output> {
        let mut session = self.client.shell.session();
        loop {
            let now = self.clock.now();
            op.handle_input(Input::Session(&mut session), now);
            let until = match op.poll_output(now) {
                Output::AwaitSession(until) => until,
                Output::Update(update) => {
                    session.apply(update);
                    self.client.shell.changed().notify_all();
                    continue;
                }
                output => return Some(output),
            };
            if self.shared.is_cancelled() {
                return None;
            }
            if now >= until {
                drop(session);
                op.handle_input(Input::Timeout, now);
                return None;
            }
            session = self
                .client
                .shell
                .changed()
                .wait_timeout(session, until - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Hands the person's step to the caller's authorizer and feeds back its redirect; without
    /// an authorizer (or when it fails) the operation is told at once. The authorizer runs on
    /// a thread of its own, so that the step's end (the operation's timer) and a cancel bound
    /// it whatever it does: one that never returns is left to finish on its own, its answer
    /// dropped.
    fn authorize(&mut self, op: &mut Operation, step: &mcp_proto::Authorize) {
        let Some(authorizer) = self.authorizer.clone() else {
            trace::authorized(&self.span, None);
            op.handle_input(Input::NoAuthorizer, self.clock.now());
            return;
        };
        let (answer, answered) = std::sync::mpsc::channel();
        let asked = step.clone();
        std::thread::spawn(move || {
            let redirect = authorizer
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .authorize(&asked);
            let _ = answer.send(redirect);
        });
        loop {
            let now = self.clock.now();
            if now >= step.ends_at {
                trace::authorized(&self.span, Some(false));
                op.handle_input(Input::Timeout, now);
                return;
            }
            if self.shared.is_cancelled() {
                // The loop passes the cancel on.
                return;
            }
            match answered.recv_timeout((step.ends_at - now).min(AUTHORIZER_SLICE)) {
                Ok(redirect) => {
                    trace::authorized(&self.span, Some(redirect.is_ok()));
                    match redirect {
                        Ok(url) => {
                            op.handle_input(Input::Redirect(&url), self.clock.now());
                        }
                        Err(detail) => {
                            op.handle_input(Input::AuthorizerFailed(&detail), self.clock.now());
                        }
                    }
                    return;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    // The authorizer panicked: the caller's code failed.
                    let failed = "the authorizer panicked";
                    op.handle_input(Input::AuthorizerFailed(failed), self.clock.now());
                    return;
                }
            }
        }
    }

    /// Applies a cancel from the handle, once: true when the operation was cancelled (the
    /// leg in flight must be dropped). After that, the legs the operation still hands out
    /// (its cancel notice) are not cancelled again.
    fn cancelled(&mut self, op: &mut Operation) -> bool {
        if !self.shared.is_cancelled() || op.is_finished() {
            return false;
        }
        op.handle_input(Input::Cancel, self.clock.now());
        self.shared.settle();
        true
    }

    /// Sends `leg` and feeds its response into `op` (which reports it).
    fn run_leg(&mut self, op: &mut Operation, leg: Leg) {
        self.spans.sent(&leg, &self.span);
        if leg.kind == LegKind::Listen {
            // The standalone stream must be read beside the other legs, which this driver
            // cannot do: it is declined, and the operation goes on without it.
            let declined = TransportError::new(
                TransportErrorKind::Declined,
                "the blocking driver reads one response at a time",
            );
            op.handle_input(
                Input::Failed {
                    leg: leg.id,
                    error: declined,
                },
                self.clock.now(),
            );
            return;
        }
        self.exchange(op, leg);
    }

    fn exchange(&mut self, op: &mut Operation, leg: Leg) {
        let (id, ends_at) = (leg.id, leg.ends_at);
        if self.cancelled(op) {
            return;
        }
        self.shared.begin_leg();
        let sent = send(self.agent, leg.request, leg.timeout);
        let now = self.clock.now();
        if self.cancelled(op) {
            return;
        }
        let response = match sent {
            Ok(response) => response,
            Err(err) => {
                let error = request_error(err, self.shared.connect_failed());
                op.handle_input(Input::Failed { leg: id, error }, now);
                return;
            }
        };
        let (head, body) = response.into_parts();
        if op.handle_input(Input::head(id, &head), now) == LegStatus::Complete {
            // Dropping an unread body closes its connection; an empty one is already back
            // in the pool.
            return;
        }
        let mut reader = body.into_reader();
        let mut buf = std::mem::take(self.buf);
        buf.resize(CHUNK, 0);
        self.read_body(op, id, &mut reader, &mut buf, ends_at);
        *self.buf = buf;
    }

    fn read_body(
        &mut self,
        op: &mut Operation,
        id: LegId,
        reader: &mut ureq::BodyReader<'static>,
        buf: &mut [u8],
        ends_at: Instant,
    ) {
        loop {
            let read = reader.read(buf);
            let now = self.clock.now();
            if self.cancelled(op) {
                return;
            }
            match read {
                Ok(0) => {
                    op.handle_input(Input::End { leg: id }, now);
                    return;
                }
                Ok(n) => {
                    if op.handle_input(
                        Input::Chunk {
                            leg: id,
                            bytes: &buf[..n],
                        },
                        now,
                    ) == LegStatus::Complete
                    {
                        // A leg that ran out has nothing worth draining.
                        if now < ends_at {
                            self.drain(reader, buf, now, ends_at);
                        }
                        return;
                    }
                    if self.between_chunks(op) {
                        // The operation ended while this stream was open (a nested leg
                        // failed or was cancelled): drop the stream.
                        return;
                    }
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => {
                    let error = body_error(err);
                    op.handle_input(Input::Failed { leg: id, error }, now);
                    return;
                }
            }
        }
    }

    /// The answer is in. If the rest of the body ends within the proto's drain bounds, read it
    /// so the connection goes back to the pool; otherwise drop the reader (and with it the
    /// connection), however long the server meant to keep the stream open.
    fn drain(
        &mut self,
        reader: &mut ureq::BodyReader<'static>,
        buf: &mut [u8],
        now: Instant,
        ends_at: Instant,
    ) {
        let until = mcp_proto::drain_until(now, ends_at);
        self.shared.set_drain(Some(until));
        let mut left = DRAIN_BYTES;
        while left > 0 {
            match reader.read(buf) {
                Ok(n) if n > 0 => left = left.saturating_sub(n),
                _ => break,
            }
        }
        self.shared.set_drain(None);
    }

    /// Drains `op` while a stream is being read: events go to the observer, a leg it hands
    /// out meanwhile (the answer to a request the server sent on the stream) runs to its end.
    /// Returns true when the operation ended meanwhile, so the stream must be dropped.
    fn between_chunks(&mut self, op: &mut Operation) -> bool {
        loop {
            match op.poll_output(self.clock.now()) {
                Output::Update(update) => self.client.shell.apply(update),
                Output::Event(event) => self.observer.event(&event),
                Output::LegEnded(report) => self.spans.ended(&report, self.observer),
                Output::Transmit(nested) => self.run_leg(op, nested),
                Output::Authorize(step) => self.authorize(op, &step),
                Output::Wait(_) | Output::AwaitSession(_) => return false,
                Output::Done(result) => {
                    self.done = Some(result);
                    return true;
                }
            }
        }
    }
}

/// Sends `request` with the whole exchange (resolve, connect, TLS, send, head and every body
/// read) bounded by `grant`. A request without a body (a GET or DELETE) is sent without one,
/// not with an empty one.
fn send(
    agent: &ureq::Agent,
    request: http::Request<Vec<u8>>,
    grant: Duration,
) -> Result<http::Response<ureq::Body>, ureq::Error> {
    if request.body().is_empty() {
        let (parts, _) = request.into_parts();
        let request = http::Request::from_parts(parts, ());
        let request = agent
            .configure_request(request)
            .timeout_global(Some(grant))
            .build();
        agent.run(request)
    } else {
        let request = agent
            .configure_request(request)
            .timeout_global(Some(grant))
            .build();
        agent.run(request)
    }
}

/// Maps a failure before the response head. `connect_failed` is true when the connector
/// chain (TCP, proxy, TLS) failed during this leg.
fn request_error(err: ureq::Error, connect_failed: bool) -> TransportError {
    use ureq::Error as E;
    let kind = match &err {
        E::Rustls(tls) => {
            return TransportError::new(
                TransportErrorKind::Tls(crate::tls::problem_of(tls)),
                tls.to_string(),
            );
        }
        E::Tls(crate::connector::HANDSHAKE_TIMED_OUT) => {
            return TransportError::new(
                TransportErrorKind::Tls(mcp_proto::TlsProblem::TimedOut),
                crate::connector::HANDSHAKE_TIMED_OUT,
            );
        }
        E::ConnectProxyFailed(reason) => {
            return TransportError::new(TransportErrorKind::Proxy, reason.clone());
        }
        E::Timeout(_) => TransportErrorKind::TimedOut,
        E::Io(io) if is_timeout(io) => TransportErrorKind::TimedOut,
        E::HostNotFound | E::ConnectionFailed | E::Pem(_) | E::TlsRequired | E::InvalidProxyUrl => {
            TransportErrorKind::Connect
        }
        E::Tls(_) => TransportErrorKind::Tls(mcp_proto::TlsProblem::Handshake),
        E::Io(io) if is_connect(io) => TransportErrorKind::Connect,
        _ if connect_failed => TransportErrorKind::Connect,
        // The server answered, but not in HTTP (e.g. a header value with CR or LF in it).
        E::Protocol(_) => TransportErrorKind::Protocol,
        _ => TransportErrorKind::Io,
    };
    TransportError::new(kind, err.to_string())
}

/// Maps a failed body read (after the head arrived).
fn body_error(err: io::Error) -> TransportError {
    let err = ureq::Error::from(err);
    let kind = match &err {
        ureq::Error::Timeout(_) => TransportErrorKind::TimedOut,
        ureq::Error::Io(io) if is_timeout(io) => TransportErrorKind::TimedOut,
        _ => TransportErrorKind::Io,
    };
    TransportError::new(kind, err.to_string())
}

fn is_timeout(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock
    )
}

fn is_connect(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable
            | io::ErrorKind::NetworkDown
            | io::ErrorKind::AddrNotAvailable
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_errors_map_to_their_kinds() {
        let kind = |err, connect| request_error(err, connect).kind;
        assert_eq!(
            kind(ureq::Error::Timeout(ureq::Timeout::Global), false),
            TransportErrorKind::TimedOut
        );
        assert_eq!(
            kind(ureq::Error::HostNotFound, false),
            TransportErrorKind::Connect
        );
        let refused = io::Error::new(io::ErrorKind::ConnectionRefused, "refused");
        assert_eq!(
            kind(ureq::Error::Io(refused), false),
            TransportErrorKind::Connect
        );
        let reset = || io::Error::new(io::ErrorKind::ConnectionReset, "reset");
        assert_eq!(
            kind(ureq::Error::Io(reset()), false),
            TransportErrorKind::Io
        );
        assert_eq!(
            kind(ureq::Error::Io(reset()), true),
            TransportErrorKind::Connect
        );
        let detail = request_error(ureq::Error::HostNotFound, false).detail;
        assert!(!detail.is_empty());
    }

    #[test]
    fn body_errors_map_to_timeout_or_io() {
        let timeout = ureq::Error::Timeout(ureq::Timeout::RecvBody).into_io();
        assert_eq!(body_error(timeout).kind, TransportErrorKind::TimedOut);
        let eof = io::Error::new(io::ErrorKind::UnexpectedEof, "Peer disconnected");
        assert_eq!(body_error(eof).kind, TransportErrorKind::Io);
    }
}
