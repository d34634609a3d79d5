//! What a driver exchanges with an operation: the legs it hands out ([`Leg`], [`LegKind`],
//! [`LegId`]), the outputs ([`Output`]) and the one input type ([`Input`]), how a leg's body
//! is read ([`LegStatus`], the drain rule) and what a transport failure or a process exit
//! says ([`TransportError`], [`ProcessExit`]).
//!
//! Plain data. Nothing here decides anything; the operation reads these, the driver carries
//! them out.

use std::fmt;
use std::time::{Duration, Instant};

use http::{HeaderMap, StatusCode};
use serde_json::Value;

pub use super::leg_kind::LegKind;
use super::types::{Event, Outcome};
use crate::error::Error;
use crate::jsonrpc::RpcError;
use crate::session::Session;
use crate::tls::TlsProblem;

/// The most a `notifications/cancelled` leg is granted (see
/// [`SessionConfig::with_cancel_notice`](crate::SessionConfig::with_cancel_notice)): what is
/// left of the budget, at most this. Once the budget is spent a notice over HTTP is not sent,
/// and one over stdio is written only if the server's stdin takes it at once
/// ([`LegKind::CancelNotice`]; the whole rule: [`leg_grant`](crate::driver::leg_grant)).
pub const CANCEL_NOTICE_GRANT: Duration = Duration::from_secs(1);
/// How long the work request waits for the standalone stream's head before going out anyway.
pub const LISTEN_HEAD_WAIT: Duration = Duration::from_secs(1);
/// After a leg answered [`LegStatus::Complete`] with its body unread to the end, a driver may
/// read what is left for at most this long (and [`DRAIN_BYTES`]) so the connection can be
/// reused; a body that does not end by then is dropped with its connection.
pub const DRAIN_WAIT: Duration = Duration::from_millis(1);
/// The most body bytes a driver reads after [`LegStatus::Complete`] (see [`DRAIN_WAIT`]).
pub const DRAIN_BYTES: usize = 64 * 1024;

/// A leg's identity within its operation: the leg's number, 1-based, in the order the legs
/// were handed out. Every input about a leg names it; an id of a leg that is already over is
/// ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LegId(pub(crate) u32);

impl LegId {
    /// The leg's number within the operation (1-based).
    pub const fn number(self) -> u32 {
        self.0
    }
}

impl fmt::Display for LegId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "leg {}", self.0)
    }
}

/// Which of the server's requests a [`ServerRequest`] is, for the caller's
/// [`Input::Reply`]: unique within the operation, never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ReplyId(pub(crate) u32);

/// A request the server sent for the caller to answer ([`Output::Request`]): a legacy
/// server's JSON-RPC request on a stream or on stdout, or one of a modern result's
/// `inputRequests`. Only a method the caller registered an answer for
/// ([`SessionConfig::respond_to`](crate::SessionConfig::respond_to)) is asked; `ping` and the
/// rest are answered by the operation itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerRequest {
    /// Name it in the answer ([`Input::Reply`]).
    pub reply: ReplyId,
    /// The method (`elicitation/create`, `sampling/createMessage`, `roots/list`, ...).
    pub method: String,
    /// The params, verbatim.
    pub params: Value,
    /// The budget's end: an answer given at or after it cannot go out (the operation ends
    /// with the budget spent, or the request the server answers times out).
    pub ends_at: Instant,
}

impl ServerRequest {
    /// The answer of the responder the caller registered for this request's method in
    /// `config` ([`SessionConfig::answer`](crate::SessionConfig::answer)), as the input that
    /// gives it: `op.handle_input(request.reply_from(op.session_config()), now)`. This runs the
    /// caller's code: a driver calls it between polls, never from inside one.
    pub fn reply_from(&self, config: &crate::SessionConfig) -> Input<'static> {
        Input::Reply {
            to: self.reply,
            answer: config.answer(&self.method, &self.params),
        }
    }
}

/// One HTTP request to send, with the part of the budget it may spend.
#[derive(Debug)]
#[must_use = "a leg must be sent (or declined), or the operation waits for it until its grant ends"]
pub struct Leg {
    /// The leg's identity: name it in every input about this leg.
    pub id: LegId,
    /// Which request it carries.
    pub kind: LegKind,
    /// The request, ready to send. Over stdio its body is the line to write, newline
    /// included (a spawn or a shutdown has none).
    pub request: http::Request<Vec<u8>>,
    /// The leg's grant: bound the **whole** leg by it. Never zero.
    pub timeout: Duration,
    /// The instant the grant ends (`now + timeout` at the poll that produced the leg).
    pub ends_at: Instant,
}

impl Leg {
    /// After this leg answered [`LegStatus::Complete`] at `now` with its body unread to the
    /// end: the instant a driver stops reading the rest (to keep the connection for reuse),
    /// [`DRAIN_WAIT`] from `now` but never past the leg's grant, and [`DRAIN_BYTES`] at most.
    /// A body that has not ended by then is dropped with its connection. The one drain rule
    /// of both drivers.
    pub fn drain_until(&self, now: Instant) -> Instant {
        drain_until(now, self.ends_at)
    }
}

/// [`Leg::drain_until`] for a driver that kept only the leg's end.
pub fn drain_until(now: Instant, ends_at: Instant) -> Instant {
    now.checked_add(DRAIN_WAIT).unwrap_or(now).min(ends_at)
}

/// What the driver must do next.
#[derive(Debug)]
#[must_use]
pub enum Output {
    /// The operation learned something about its session: apply it
    /// ([`Session::apply`](crate::Session::apply)) before polling this operation again, and
    /// wake the other operations on the session that
    /// [await it](Output::AwaitSession). Updates come before anything else the operation hands
    /// out.
    Update(crate::session::SessionUpdate),
    /// Send this leg (beside any other leg in flight), and feed what comes back under its id.
    Transmit(Leg),
    /// Nothing to send: feed the legs in flight, and give [`Input::Timeout`] once this
    /// instant has come (the earliest of the operation's timers: a leg's end, a pause before a
    /// resumption, the wait for the standalone stream's head).
    Wait(Instant),
    /// The operation needs its session and has not got it: give it the session
    /// ([`Input::Session`]) and poll again. If it awaits it still (another operation is
    /// establishing the session, or authorizing for it), wait until this instant (the end of
    /// the budget, or an earlier timer: then give [`Input::Timeout`]) or until the session
    /// changes (another operation's update applied, or another operation ended), whichever
    /// comes first, and give it the session again.
    AwaitSession(Instant),
    /// Hand this to the caller, then poll again.
    Event(Event),
    /// The server asks the caller something: get the caller's answer and give it
    /// ([`Input::Reply`]), then poll again. [`ServerRequest::reply_from`] answers with the
    /// responder the caller registered. The operation goes on meanwhile (a
    /// stream is still read); what needs the answer waits for it, until `ends_at` at most.
    Request(ServerRequest),
    /// A leg ended (answered, failed, timed out, dropped or cancelled): hand the report to the
    /// caller's [`Observer`](crate::Observer), then poll again. Every leg handed out ends in
    /// exactly one report, before [`Output::Done`]; the driver measures nothing itself.
    LegEnded(LegReport),
    /// An authorization needs a person: give the URL to the caller's authorizer (a browser
    /// and the listener its redirect comes back to), bounded by `ends_at`, and feed the
    /// redirect URL ([`Input::Redirect`]). Without an authorizer, give [`Input::NoAuthorizer`]
    /// at once: the operation ends with [`Error::AuthorizationRequired`] having waited for no
    /// one.
    Authorize(Authorize),
    /// The operation is over: drop every leg still in flight. Polling again yields
    /// [`Error::AlreadyFinished`].
    Done(Result<Outcome, Error>),
}

/// What came, for [`Operation::handle_input`](crate::driver::Operation::handle_input): the one way a
/// driver tells the operation anything. Each input about a leg names it; an input for a leg
/// the operation no longer has is ignored, and one that comes at or after the leg's end ends
/// that leg as timed out (a driver never decides that a leg was late).
#[derive(Debug)]
pub enum Input<'a> {
    /// The response head of leg `leg`. Read the body while the answer is
    /// [`LegStatus::ReadMore`].
    Head {
        /// The leg it answers.
        leg: LegId,
        /// The response's status.
        status: StatusCode,
        /// The response's headers.
        headers: &'a HeaderMap,
    },
    /// The next bytes of leg `leg`'s body, as they came (any split).
    Chunk {
        /// The leg whose body this is.
        leg: LegId,
        /// The bytes.
        bytes: &'a [u8],
    },
    /// The body of leg `leg` ended.
    End {
        /// The leg whose body ended.
        leg: LegId,
    },
    /// Leg `leg` failed in the transport, or the driver declined it
    /// ([`TransportErrorKind::Declined`]). A failure reported at or after the leg's end is its
    /// timeout, except a TLS handshake that ran out of the grant
    /// ([`TlsProblem::TimedOut`](crate::TlsProblem::TimedOut)) or a proxy that did
    /// ([`TransportErrorKind::ProxyTimedOut`]): that is what the driver saw at the leg's end,
    /// and the error says so.
    Failed {
        /// The leg that failed.
        leg: LegId,
        /// What failed, in the driver's words.
        error: TransportError,
    },
    /// Over stdio: the whole message of leg `leg` was written to the server's stdin (for a
    /// [`LegKind::Spawn`] leg: the process started). A notification or an answer is over
    /// then; a request now awaits its answer on stdout.
    Sent {
        /// The leg whose message was written.
        leg: LegId,
    },
    /// Over stdio: the next bytes the server wrote on its stdout, as they came (any split).
    /// Feed them whenever they arrive, also while no leg awaits an answer.
    Stdout(&'a [u8]),
    /// Over HTTP+SSE: the next bytes of the session's event stream (the body of the
    /// [`LegKind::Events`] leg whose head the operation took), as they came (any split). Feed
    /// them to the operation that runs on the session whenever they arrive, also while no leg
    /// awaits an answer; bytes that came between operations go to the next one.
    Events(&'a [u8]),
    /// Over HTTP+SSE: the session's event stream ended (`error`: how it broke, when it did), or
    /// was dropped for a [`LegKind::Hangup`]. A request awaiting its answer fails; a hangup is
    /// complete; the next operation opens a new stream.
    EventsEnded {
        /// The transport's failure, when the stream broke rather than ended.
        error: Option<TransportError>,
    },
    /// Over stdio: the server process ended (or closed its stdout). A request awaiting its
    /// answer fails with [`Error::ServerExited`]; a close (at any of its steps) or a kill is
    /// complete.
    Exit(&'a ProcessExit),
    /// The instant [`Output::Wait`] (or [`Output::AwaitSession`]) named has come: every timer
    /// due expires (a leg whose grant ended times out; a pause is over).
    Timeout,
    /// The session, for an operation that [awaits it](Output::AwaitSession): the live
    /// session another operation established (the work goes out on it), or the claim to
    /// establish it; for a refused operation, a newer token another operation obtained, or
    /// the claim to authorize. Otherwise it waits on. Give it the session every update of
    /// this operation has been applied to (under the same lock, when operations run in
    /// parallel). Ignored by an operation that does not await its session.
    Session(&'a mut Session),
    /// The URL the authorization server sent the person's browser to, after
    /// [`Output::Authorize`].
    Redirect(&'a str),
    /// The caller's authorizer did not get the redirect after [`Output::Authorize`] (its
    /// words: quoted, clipped, in the error): the operation ends with
    /// [`Error::AuthorizationRequired`]. At or after the step's end, that is the budget
    /// running out, and the error says so.
    AuthorizerFailed(&'a str),
    /// There is no authorizer for [`Output::Authorize`]: the operation ends at once with
    /// [`Error::AuthorizationRequired`], having waited for no one.
    NoAuthorizer,
    /// The caller's answer to the server's request [`Output::Request`] asked under `to`: a
    /// result, or a JSON-RPC error for the server. Ignored when the operation no longer holds
    /// that request (it started over, or it finished).
    Reply {
        /// The request it answers.
        to: ReplyId,
        /// The answer.
        answer: Result<Value, RpcError>,
    },
    /// The caller cancelled: polling now yields [`Error::Cancelled`] (after the
    /// `notifications/cancelled` leg, where one is due: see
    /// [`SessionConfig::with_cancel_notice`](crate::SessionConfig::with_cancel_notice)). Drop
    /// every leg in flight. Ignored once the operation has finished.
    Cancel,
}

impl<'a> Input<'a> {
    /// [`Input::Head`] from a response's head, as an HTTP client hands it over.
    pub fn head(leg: LegId, head: &'a http::response::Parts) -> Self {
        Self::Head {
            leg,
            status: head.status,
            headers: &head.headers,
        }
    }
}

/// Whether the driver should keep reading the body of a leg: the answer to a head or a chunk
/// ([`Input::Head`], [`Input::Chunk`]). A driver that keeps reading after `Complete` waits for
/// a stream that may never end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegStatus {
    /// Feed more of the body (or its end).
    ReadMore,
    /// Stop reading: the leg is over (its answer is in, it failed, or it is no longer wanted).
    /// Drop the response, after at most [`DRAIN_WAIT`] and [`DRAIN_BYTES`] more of its body.
    Complete,
}

/// How a stdio server process ended, as the driver saw it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProcessExit {
    /// The exit status, if it exited normally (`None` when a signal ended it, or unknown).
    pub status: Option<i32>,
    /// The last lines it wrote on stderr (the driver keeps a bounded tail); quoted, clipped,
    /// in the error.
    pub stderr: String,
}

/// How a leg's transport failed, as the driver saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransportError {
    /// The kind of failure.
    pub kind: TransportErrorKind,
    /// The transport's own description (clipped before it is quoted).
    pub detail: String,
}

/// The kinds of transport failure a driver reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// The leg's grant ran out in the transport (a driver whose own timer fired calls
    /// [`Input::Timeout`] instead).
    TimedOut,
    /// No connection could be made (refused, DNS).
    Connect,
    /// The TLS handshake failed, or did not finish within the grant: the server's certificate
    /// is not trusted, or the handshake itself broke ([`Error::Tls`](crate::Error::Tls)).
    /// A [`TlsProblem::TimedOut`] is honoured even when reported at the leg's end.
    Tls(TlsProblem),
    /// The proxy could not be reached, or refused or broke the tunnel
    /// ([`Error::Proxy`](crate::Error::Proxy)); the detail is the sentence of
    /// `mcp_driver_common::network::ProxyUrl::failure` (no credentials).
    Proxy,
    /// The leg's grant ran out in the proxy's part of the connection: the proxy could not be
    /// reached, or took the `CONNECT` and did not answer it ([`Error::Proxy`](crate::Error::Proxy),
    /// the detail `mcp_driver_common::network::ProxyUrl::failure`'s sentence, to which the
    /// error adds the grant). Like a [`TlsProblem::TimedOut`], honoured even when reported at
    /// the leg's end: the proxy, not the server, did not answer.
    ProxyTimedOut,
    /// The connection broke while sending or reading.
    Io,
    /// The server answered with something that is not HTTP (a head that does not parse, e.g.
    /// a header value with CR or LF in it). It is the server's fault, reported as a
    /// malformed answer, not as a server that could not be reached.
    Protocol,
    /// The driver does not send this kind of leg (the blocking driver and the standalone
    /// stream, which must be read beside other legs). The operation goes on without it when
    /// it can.
    Declined,
}

impl TransportError {
    /// A transport error of `kind` with `detail`.
    pub fn new(kind: TransportErrorKind, detail: impl Into<String>) -> Self {
        Self {
            kind,
            detail: detail.into(),
        }
    }
}

/// What the browser step of an authorization needs: the URL a person must open, and how long
/// the operation can wait for the redirect (what was left of its budget).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorize {
    /// The authorization URL: open it in a browser (it holds no secret).
    pub url: String,
    /// How long the person has: the rest of the budget. Never zero.
    pub timeout: Duration,
    /// The instant that time ends.
    pub ends_at: Instant,
}

/// How one leg ended: its grant, how long it took by the clock the driver fed the operation
/// with (from the poll that handed it out to the input that ended it), and how it ended. The
/// operation hands one out for every leg it handed out ([`Output::LegEnded`]); drivers pass it
/// on to the caller's [`Observer`](crate::Observer) and build nothing of it themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegReport {
    /// The leg's number within the operation (1-based).
    pub number: u32,
    /// Which request it carried.
    pub kind: LegKind,
    /// Its grant.
    pub grant: Duration,
    /// From the poll that handed the leg out to the input that ended it.
    pub elapsed: Duration,
    /// How it ended.
    pub end: LegEnd,
}

/// One line for traces, the same in every tool that prints legs:
/// `leg=2 method=tools/call granted_ms=19000 elapsed_ms=12 status=200`.
///
/// ```
/// use mcp_proto::{LegEnd, LegReport};
/// use mcp_proto::driver::{LegKind};
/// use std::time::Duration;
/// let report = LegReport {
///     number: 3,
///     kind: LegKind::Resume,
///     grant: Duration::from_secs(14),
///     elapsed: Duration::from_millis(250),
///     end: LegEnd::Status(200),
/// };
/// assert_eq!(report.to_string(), "leg=3 method=resume granted_ms=14000 elapsed_ms=250 status=200");
/// ```
impl fmt::Display for LegReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "leg={} method={} granted_ms={} elapsed_ms={} status={}",
            self.number,
            self.kind.label(),
            self.grant.as_millis(),
            self.elapsed.as_millis(),
            self.end.word()
        )
    }
}

/// How a leg ended, as the operation saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LegEnd {
    /// A response head arrived with this status (the body may still have been refused).
    Status(u16),
    /// The transport failed.
    Transport(TransportErrorKind),
    /// The caller cancelled the operation while the leg was in flight.
    Cancelled,
    /// Over stdio: the leg is over as it should be (its line was written, and a request's
    /// answer came; a process started or ended).
    Done,
    /// Over stdio: the server process exited while the leg was in flight.
    Exited,
}

impl LegEnd {
    /// `self` for a leg whose last input came at `now`, unless that was at or after the
    /// leg's end: the operation took the input as the leg's timeout, and the report says so.
    pub(crate) fn as_of(self, now: Instant, ends_at: Instant) -> Self {
        if now >= ends_at {
            Self::Transport(TransportErrorKind::TimedOut)
        } else {
            self
        }
    }

    /// One word for traces: the status code, or `timeout`, `connect`, `protocol`, `io`,
    /// `declined`, `tls`, `proxy`, `cancelled`; over stdio `ok` or `exited`.
    pub fn word(&self) -> String {
        match self {
            Self::Status(code) => code.to_string(),
            Self::Transport(TransportErrorKind::TimedOut) => "timeout".to_owned(),
            Self::Transport(TransportErrorKind::Connect) => "connect".to_owned(),
            Self::Transport(TransportErrorKind::Protocol) => "protocol".to_owned(),
            Self::Transport(TransportErrorKind::Declined) => "declined".to_owned(),
            Self::Transport(TransportErrorKind::Tls(_)) => "tls".to_owned(),
            Self::Transport(TransportErrorKind::Proxy | TransportErrorKind::ProxyTimedOut) => {
                "proxy".to_owned()
            }
            Self::Transport(_) => "io".to_owned(),
            Self::Cancelled => "cancelled".to_owned(),
            Self::Done => "ok".to_owned(),
            Self::Exited => "exited".to_owned(),
        }
    }
}
