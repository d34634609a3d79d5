//! The HTTP transport of the tokio driver ([`HttpWire`]): each leg in flight is a request and
//! then a body, read beside the others; what they deliver goes to the operation under the
//! leg's id.
//!
//! Nothing here decides anything: every head, frame and failure goes to the operation, which
//! says whether to read on. The only waits are the operation's (its next timer, in the one
//! loop of `drive.rs`) and the drain after an answer, bounded by the proto's
//! [`drain_until`](mcp_proto::driver::drain_until) and [`DRAIN_BYTES`]. Requests go through the
//! client's [`Http`] ([`crate::http1`]).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::Poll;
use std::time::Instant;

use http::Uri;
use mcp_proto::driver::{
    DRAIN_BYTES, Input, Leg, LegId, LegKind, LegStatus, Operation, TransportError,
};
use mcp_proto::{Clock, TlsProblem, TransportErrorKind};

use crate::clock::TokioClock;
use crate::connector::{Connecting, chain, target_of};
use crate::http1::{Body, HeadResult, Http, RequestError, ResponseFuture};
use crate::wire::Wire;

/// What a failed request tells the operation: a TLS or proxy failure in the connector's own
/// words (the same as the blocking driver's), any other failure with its whole chain.
pub(crate) fn transport_error(err: &RequestError) -> TransportError {
    if let RequestError::Connect(failure) = err {
        if matches!(
            failure.kind,
            TransportErrorKind::Tls(_)
                | TransportErrorKind::Proxy
                | TransportErrorKind::ProxyTimedOut
        ) {
            return TransportError::new(failure.kind, failure.detail.clone());
        }
    }
    TransportError::new(kind_of(err), chain(err))
}

/// At a timer: the legs whose grant ended before their head came, while a tunnel to their
/// target was in progress, fail as that tunnel's proxy (not reached, or not answering); else,
/// while a TLS handshake was in progress, as a handshake that timed out. Each is reported at
/// once; the operation's own timers then expire as usual (the others time out).
pub(crate) fn connect_timeouts(
    op: &mut Operation,
    legs: &mut Vec<InFlight>,
    connecting: &Connecting,
    now: Instant,
) {
    let handshaking = connecting.handshaking();
    if !handshaking && !connecting.tunneling() {
        return;
    }
    let mut index = 0;
    while index < legs.len() {
        let leg = &legs[index];
        if now < leg.ends_at || !matches!(leg.state, State::Head(_)) {
            index += 1;
            continue;
        }
        let error = connecting.tunnel_to(&target_of(&leg.uri)).or_else(|| {
            handshaking.then(|| {
                TransportError::new(
                    TransportErrorKind::Tls(TlsProblem::TimedOut),
                    "the TLS handshake did not finish within the grant",
                )
            })
        });
        let Some(error) = error else {
            index += 1;
            continue;
        };
        op.handle_input(Input::Failed { leg: leg.id, error }, now);
        legs.swap_remove(index);
    }
}

/// One leg in flight.
pub(crate) struct InFlight {
    id: LegId,
    /// Over HTTP+SSE, the leg whose body becomes the session's event stream.
    opens_stream: bool,
    /// Its grant's end, which bounds the drain after its answer.
    ends_at: Instant,
    /// Its request's URI: the target of a tunnel it may be waiting for.
    uri: Uri,
    state: State,
}

enum State {
    /// The request is being sent; its head is awaited. (The client boxes the future already:
    /// it is kept as it comes, not boxed again.)
    Head(ResponseFuture),
    /// The head was fed; the body is read frame by frame.
    Body(Body),
}

/// What a leg delivered.
pub(crate) enum Delivery {
    /// The response head (or why there is none).
    Head(HeadResult),
    /// The body's next bytes (in the leg's [`Body::chunk`]), its end (`None`) or a broken
    /// body.
    Body(Option<io::Result<()>>),
}

impl InFlight {
    /// Starts the leg's request; it makes progress when [`next`] polls it.
    pub(crate) fn start(http: &Http, leg: Leg) -> Self {
        Self {
            id: leg.id,
            opens_stream: leg.kind == LegKind::Events,
            ends_at: leg.ends_at,
            uri: leg.request.uri().clone(),
            state: State::Head(http.request(leg.request)),
        }
    }
}

/// The HTTP transport of the tokio driver: every leg in flight is a request and then a body,
/// read beside the others; over HTTP+SSE the session's event stream too, kept between
/// operations.
pub(crate) struct HttpWire<'a> {
    pub(crate) http: &'a Http,
    pub(crate) connecting: &'a Connecting,
    pub(crate) legs: Vec<InFlight>,
    /// Over HTTP+SSE: the session's event stream (the client's, while this operation has the
    /// turn; else one this operation opened, offered to the client at its end).
    pub(crate) events: &'a mut Option<Body>,
}

/// What came on the wire: a leg's delivery, or the next frame of the session's event stream.
pub(crate) enum Came {
    Leg(usize, Delivery),
    /// The stream's next bytes (in its [`Body::chunk`]), its end, or its break.
    Events(Option<io::Result<()>>),
}

impl Wire for HttpWire<'_> {
    type Came = Came;

    async fn transmit(&mut self, op: &mut Operation, leg: Leg, now: Instant) -> Instant {
        if leg.kind == LegKind::Hangup {
            // Dropped, its connection closes: the server's session ends with it.
            *self.events = None;
            op.handle_input(Input::EventsEnded { error: None }, now);
            return now;
        }
        self.legs.push(InFlight::start(self.http, leg));
        now
    }

    async fn next(&mut self) -> Came {
        let (legs, events) = (&mut self.legs, &mut *self.events);
        std::future::poll_fn(|cx| {
            if let Poll::Ready((index, delivery)) = poll_legs(legs, cx) {
                return Poll::Ready(Came::Leg(index, delivery));
            }
            match events {
                Some(body) => body.poll_chunk(cx).map(Came::Events),
                None => Poll::Pending,
            }
        })
        .await
    }

    async fn feed(&mut self, op: &mut Operation, came: Came) -> Instant {
        match came {
            Came::Leg(index, delivery) => {
                feed(op, &mut self.legs, self.events, index, delivery).await
            }
            Came::Events(frame) => {
                let now = TokioClock.now();
                match frame {
                    Some(Ok(())) => {
                        if let Some(body) = self.events.as_ref() {
                            op.handle_input(Input::Events(body.chunk()), now);
                        }
                    }
                    None => {
                        *self.events = None;
                        op.handle_input(Input::EventsEnded { error: None }, now);
                    }
                    Some(Err(err)) => {
                        *self.events = None;
                        let error = TransportError::new(TransportErrorKind::Io, chain(&err));
                        op.handle_input(Input::EventsEnded { error: Some(error) }, now);
                    }
                }
                now
            }
        }
    }

    fn at_timer(&mut self, op: &mut Operation, now: Instant) {
        connect_timeouts(op, &mut self.legs, self.connecting, now);
    }

    fn prune(&mut self, op: &Operation) {
        self.legs.retain(|leg| op.is_in_flight(leg.id));
    }
}

/// The next delivery of any leg in flight, with its index; never resolves when none is in
/// flight, so it can sit in a `select!` beside the operation's timer. Cancel-safe: dropping it
/// loses nothing.
fn poll_legs(legs: &mut [InFlight], cx: &mut std::task::Context<'_>) -> Poll<(usize, Delivery)> {
    for (index, leg) in legs.iter_mut().enumerate() {
        let delivery = match &mut leg.state {
            State::Head(head) => Pin::new(head).poll(cx).map(Delivery::Head),
            State::Body(body) => body.poll_chunk(cx).map(Delivery::Body),
        };
        if let Poll::Ready(delivery) = delivery {
            return Poll::Ready((index, delivery));
        }
    }
    Poll::Pending
}

/// Feeds what leg `index` delivered to the operation; a leg that is over is dropped (the
/// operation reports it). Returns the instant the delivery was fed at (after a drain, the
/// drain's end).
async fn feed(
    op: &mut Operation,
    legs: &mut Vec<InFlight>,
    events: &mut Option<Body>,
    index: usize,
    delivery: Delivery,
) -> Instant {
    let mut now = TokioClock.now();
    let leg = &mut legs[index];
    let id = leg.id;
    match delivery {
        Delivery::Head(Ok(response)) => {
            let (head, body) = response.into_parts();
            let read_on = op.handle_input(Input::head(id, &head), now) == LegStatus::ReadMore;
            if read_on && leg.opens_stream {
                // The session's event stream from now on (another one it replaces is dropped);
                // the leg is over for this wire: its bytes come as `Input::Events`.
                *events = Some(body);
            } else if read_on {
                leg.state = State::Body(body);
                return now;
            }
            // Unread, the body closes its connection; an empty one is already pooled.
        }
        Delivery::Head(Err(err)) => {
            let error = transport_error(&err);
            op.handle_input(Input::Failed { leg: id, error }, now);
        }
        Delivery::Body(None) => {
            op.handle_input(Input::End { leg: id }, now);
        }
        Delivery::Body(Some(Err(err))) => {
            let error = TransportError::new(TransportErrorKind::Io, chain(&err));
            op.handle_input(Input::Failed { leg: id, error }, now);
        }
        Delivery::Body(Some(Ok(()))) => {
            let State::Body(body) = &mut leg.state else {
                return now;
            };
            let input = Input::Chunk {
                leg: id,
                bytes: body.chunk(),
            };
            if op.handle_input(input, now) == LegStatus::ReadMore {
                return now;
            }
            if now < leg.ends_at {
                let until = mcp_proto::driver::drain_until(now, leg.ends_at);
                if drain_rest(body, until).await {
                    now = TokioClock.now();
                }
            }
        }
    }
    legs.swap_remove(index);
    now
}

/// The kind of a failed request: no connection, an answer that is not HTTP (a head that
/// does not parse), or a broken connection.
pub(crate) fn kind_of(err: &RequestError) -> TransportErrorKind {
    match err {
        RequestError::Connect(failure) => failure.kind,
        RequestError::Protocol(_) => TransportErrorKind::Protocol,
        RequestError::Io(_) => TransportErrorKind::Io,
    }
}

/// After the answer is in: reads what is left of `body` if it ends within the proto's drain
/// bounds, so that its connection goes back to the client's pool instead of closing. What the
/// connection holds already (usually a chunked body's end) is read without arming a timer: a
/// read that does not wait comes first, and a timer (one system call to re-park the runtime's
/// driver on it) only when that read found nothing. Returns whether it had to wait.
async fn drain_rest(body: &mut Body, until: Instant) -> bool {
    let mut left = DRAIN_BYTES;
    loop {
        if body.is_end_stream() {
            return false;
        }
        match std::future::poll_fn(|cx| Poll::Ready(body.poll_chunk(cx))).await {
            Poll::Pending => break,
            Poll::Ready(Some(Ok(()))) => {
                left = left.saturating_sub(body.chunk().len());
                if left == 0 {
                    return false;
                }
            }
            Poll::Ready(_) => return false,
        }
    }
    let _ = tokio::time::timeout_at(tokio::time::Instant::from_std(until), async {
        while let Some(Ok(())) = std::future::poll_fn(|cx| body.poll_chunk(cx)).await {
            left = left.saturating_sub(body.chunk().len());
            if left == 0 {
                break;
            }
        }
    })
    .await;
    true
}
