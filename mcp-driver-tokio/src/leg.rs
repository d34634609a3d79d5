//! Legs on the wire: each leg in flight is a request and then a body, read beside the others;
//! what they deliver goes to the operation under the leg's id.
//!
//! Nothing here decides anything: every head, frame and failure goes to the operation, which
//! says whether to read on. The only waits are the operation's (its next timer, in the
//! client's loop) and the drain after an answer, bounded by the proto's [`DRAIN_WAIT`] and
//! [`DRAIN_BYTES`].

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::{Body as _, Frame, Incoming};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::{Client as HyperClient, ResponseFuture};
use hyper_util::rt::{TokioExecutor, TokioTimer};
use mcp_proto::{
    Clock, DRAIN_BYTES, DRAIN_WAIT, Leg, LegEnd, LegId, LegKind, LegReport, LegStatus, Observer,
    Operation, TransportError, TransportErrorKind,
};

use crate::clock::TokioClock;
use crate::trace;

/// The HTTP client every leg goes through.
pub(crate) type Http = HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>;

type HeadResult = Result<http::Response<Incoming>, hyper_util::client::legacy::Error>;

/// An HTTP/1.1 client: plain HTTP, or HTTPS through rustls with the ring provider and
/// Mozilla's roots. Redirects are not followed (hyper never does).
pub(crate) fn http_client() -> Http {
    let mut tcp = HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_nodelay(true);
    let provider = rustls::crypto::ring::default_provider();
    let connector = HttpsConnectorBuilder::new()
        .with_provider_and_webpki_roots(provider)
        // The ring provider supports TLS 1.2 and 1.3, the safe defaults: this cannot fail.
        .expect("the ring provider supports rustls' default protocol versions")
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp);
    HyperClient::builder(TokioExecutor::new())
        .pool_timer(TokioTimer::new())
        .build(connector)
}

/// One leg in flight.
pub(crate) struct InFlight {
    id: LegId,
    kind: LegKind,
    grant: Duration,
    started: Instant,
    ends_at: Instant,
    /// The response's status, once its head is in.
    status: Option<u16>,
    state: State,
    /// The leg's span (feature `tracing`), open until the leg is reported.
    span: trace::Span,
}

enum State {
    /// The request is being sent; its head is awaited. (hyper-util boxes the future already:
    /// it is kept as it comes, not boxed again.)
    Head(ResponseFuture),
    /// The head was fed; the body is read frame by frame.
    Body(Incoming),
}

/// What a leg delivered.
pub(crate) enum Delivery {
    /// The response head (or why there is none).
    Head(HeadResult),
    /// A body frame, its end (`None`) or a broken body.
    Frame(Option<Result<Frame<Bytes>, hyper::Error>>),
}

impl InFlight {
    /// Starts the leg's request; it makes progress when [`next`] polls it.
    pub(crate) fn start(http: &Http, leg: Leg, now: Instant, operation: &trace::Span) -> Self {
        let request = leg.request.map(|body| Full::new(Bytes::from(body)));
        let span = trace::leg(operation, leg.id.number(), leg.kind, leg.timeout);
        Self {
            span,
            id: leg.id,
            kind: leg.kind,
            grant: leg.timeout,
            started: now,
            ends_at: leg.ends_at,
            status: None,
            state: State::Head(http.request(request)),
        }
    }

    fn report(&self, end: LegEnd, now: Instant, observer: &mut (dyn Observer + Send)) {
        let report = LegReport {
            number: self.id.number(),
            kind: self.kind,
            grant: self.grant,
            elapsed: now.saturating_duration_since(self.started),
            end,
        };
        trace::leg_ended(&self.span, &report);
        observer.leg_finished(&report);
    }
}

/// The next delivery of any leg in flight, with its index; never resolves when none is in
/// flight, so it can sit in a `select!` beside the operation's timer. Cancel-safe: dropping it
/// loses nothing.
pub(crate) async fn next(legs: &mut [InFlight]) -> (usize, Delivery) {
    std::future::poll_fn(|cx| {
        for (index, leg) in legs.iter_mut().enumerate() {
            let delivery = match &mut leg.state {
                State::Head(head) => Pin::new(head).poll(cx).map(Delivery::Head),
                State::Body(body) => Pin::new(body).poll_frame(cx).map(Delivery::Frame),
            };
            if let Poll::Ready(delivery) = delivery {
                return Poll::Ready((index, delivery));
            }
        }
        Poll::Pending
    })
    .await
}

/// Feeds what leg `index` delivered to the operation; a leg that is over is reported and
/// dropped. Returns the instant the delivery was fed at (after a drain, the drain's end).
pub(crate) async fn feed(
    op: &mut Operation<'_>,
    legs: &mut Vec<InFlight>,
    index: usize,
    delivery: Delivery,
    observer: &mut (dyn Observer + Send),
) -> Instant {
    let fed_at = TokioClock.now();
    let mut now = fed_at;
    let leg = &mut legs[index];
    let id = leg.id;
    let end = match delivery {
        Delivery::Head(Ok(response)) => {
            let (head, body) = response.into_parts();
            leg.status = Some(head.status.as_u16());
            if op.handle_response(id, head.status, &head.headers, now) == LegStatus::ReadMore {
                leg.state = State::Body(body);
                return now;
            }
            // Unread, the body closes its connection; an empty one is already pooled.
            LegEnd::Status(head.status.as_u16())
        }
        Delivery::Head(Err(err)) => {
            let kind = kind_of(&err);
            op.handle_transport_error(id, TransportError::new(kind, chain(&err)), now);
            LegEnd::Transport(kind)
        }
        Delivery::Frame(None) => {
            op.handle_body_end(id, now);
            LegEnd::Status(leg.status.unwrap_or_default())
        }
        Delivery::Frame(Some(Err(err))) => {
            let error = TransportError::new(TransportErrorKind::Io, chain(&err));
            op.handle_transport_error(id, error, now);
            LegEnd::Transport(TransportErrorKind::Io)
        }
        Delivery::Frame(Some(Ok(frame))) => {
            // Trailers and empty frames carry nothing an MCP answer needs.
            let Some(data) = frame.data_ref().filter(|data| !data.is_empty()) else {
                return now;
            };
            if op.handle_body_chunk(id, data, now) == LegStatus::ReadMore {
                return now;
            }
            if let (State::Body(body), true) = (&mut leg.state, now < leg.ends_at) {
                if drain_rest(body).await {
                    now = TokioClock.now();
                }
            }
            LegEnd::Status(leg.status.unwrap_or_default())
        }
    };
    let end = end.as_of(fed_at, leg.ends_at);
    let leg = legs.swap_remove(index);
    leg.report(end, now, observer);
    now
}

/// Drops the legs the operation no longer has in flight (their grant expired, or the
/// operation let them go), reporting each.
pub(crate) fn prune(
    op: &Operation<'_>,
    legs: &mut Vec<InFlight>,
    observer: &mut (dyn Observer + Send),
    now: Instant,
) {
    let mut index = 0;
    while index < legs.len() {
        if op.is_in_flight(legs[index].id) {
            index += 1;
            continue;
        }
        let leg = legs.swap_remove(index);
        let end = dropped_end(&leg, now);
        leg.report(end, now, observer);
    }
}

/// Drops every leg at the end of the operation, reporting each.
pub(crate) fn drop_all(
    legs: &mut Vec<InFlight>,
    observer: &mut (dyn Observer + Send),
    now: Instant,
) {
    for leg in legs.drain(..) {
        let end = dropped_end(&leg, now);
        leg.report(end, now, observer);
    }
}

/// Drops every leg after a cancel, reporting each as cancelled.
pub(crate) fn cancel_all(
    legs: &mut Vec<InFlight>,
    observer: &mut (dyn Observer + Send),
    now: Instant,
) {
    for leg in legs.drain(..) {
        leg.report(LegEnd::Cancelled, now, observer);
    }
}

/// How a leg the driver drops without a delivery of its own ended: its grant ran out, its
/// stream was open (the status it had), or the operation let it go before its head.
fn dropped_end(leg: &InFlight, now: Instant) -> LegEnd {
    leg.status
        .map_or(LegEnd::Cancelled, LegEnd::Status)
        .as_of(now, leg.ends_at)
}

/// The kind of a failed request: no connection, an answer that is not HTTP (a head that
/// does not parse), or a broken connection.
pub(crate) fn kind_of(err: &hyper_util::client::legacy::Error) -> TransportErrorKind {
    if err.is_connect() {
        return TransportErrorKind::Connect;
    }
    let mut source = err.source();
    while let Some(cause) = source {
        if cause
            .downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_parse)
        {
            return TransportErrorKind::Protocol;
        }
        source = cause.source();
    }
    TransportErrorKind::Io
}

/// After the answer is in: reads what is left of `body` if it ends within the proto's drain
/// bounds, so that hyper puts the connection back in its pool instead of closing it. What is
/// already in (usually the chunked body's end) is read without arming a timer. Returns whether
/// it had to wait.
async fn drain_rest(body: &mut Incoming) -> bool {
    let mut left = DRAIN_BYTES;
    loop {
        if body.is_end_stream() {
            return false;
        }
        let polled =
            std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *body).poll_frame(cx))).await;
        match polled {
            Poll::Pending => break,
            Poll::Ready(Some(Ok(frame))) => {
                left = left.saturating_sub(frame.data_ref().map_or(0, |d| d.len()));
                if left == 0 {
                    return false;
                }
            }
            Poll::Ready(_) => return false,
        }
    }
    let _ = tokio::time::timeout(DRAIN_WAIT, async {
        while let Some(Ok(frame)) = body.frame().await {
            left = left.saturating_sub(frame.data_ref().map_or(0, |d| d.len()));
            if left == 0 {
                break;
            }
        }
    })
    .await;
    true
}

/// An error and its sources, outermost first, joined with `": "`.
pub(crate) fn chain(err: &(dyn StdError + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
