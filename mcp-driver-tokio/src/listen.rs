//! The session's standalone stream (`LegKind::Listen`), read beside the operation's own legs.
//!
//! mcp-proto hands out one `Listen` leg per operation when the configuration asks for it. The
//! driver starts its request and then, at every point where it waits for the operation's own
//! leg, also waits for the next thing this stream delivers, so a request the server sends
//! there (an elicitation its tool raised) is answered while the call is still open. Nothing
//! here decides anything: every head, frame and failure goes to the operation.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper::body::{Frame, Incoming};
use tokio::time::Instant as TokioInstant;

use crate::leg::Http;

type Head = Pin<
    Box<
        dyn Future<Output = Result<http::Response<Incoming>, hyper_util::client::legacy::Error>>
            + Send,
    >,
>;

/// A standalone stream in progress.
pub(crate) struct Listening {
    pub(crate) number: u32,
    pub(crate) grant: std::time::Duration,
    pub(crate) started: std::time::Instant,
    until: TokioInstant,
    state: State,
}

enum State {
    Head(Head),
    Body(Incoming),
}

/// What the stream delivered.
pub(crate) enum Delivery {
    /// The response head (or why there is none).
    Head(Result<http::Response<Incoming>, hyper_util::client::legacy::Error>),
    /// A body frame, its end (`None`) or a broken body.
    Frame(Option<Result<Frame<Bytes>, hyper::Error>>),
    /// The stream's grant ran out.
    TimedOut,
}

impl Listening {
    /// Starts the stream's request; nothing is awaited yet.
    pub(crate) fn start(http: &Http, leg: mcp_proto::Leg, started: std::time::Instant) -> Self {
        let request: Request<Full<Bytes>> = leg.request.map(|body| Full::new(Bytes::from(body)));
        let head = http.request(request);
        Self {
            number: leg.number,
            grant: leg.timeout,
            started,
            until: TokioInstant::from_std(leg.ends_at),
            state: State::Head(Box::pin(head)),
        }
    }

    /// Keeps reading the body after the head was accepted.
    pub(crate) fn read_body(&mut self, body: Incoming) {
        self.state = State::Body(body);
    }
}

/// The next delivery of the stream; never resolves when there is none, so it can sit in a
/// `select!` beside the operation's own leg. Cancel-safe: dropping it loses nothing.
pub(crate) async fn next(listening: &mut Option<Listening>) -> Delivery {
    let Some(stream) = listening else {
        return std::future::pending().await;
    };
    let until = stream.until;
    let delivery = async {
        match &mut stream.state {
            State::Head(head) => Delivery::Head(head.as_mut().await),
            State::Body(body) => Delivery::Frame(body.frame().await),
        }
    };
    tokio::time::timeout_at(until, delivery)
        .await
        .unwrap_or(Delivery::TimedOut)
}
