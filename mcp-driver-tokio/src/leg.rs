//! Legs on the wire: send a request, feed the head and every body frame to the operation,
//! stop the moment it has the answer.

use std::error::Error as StdError;

use bytes::Bytes;
use http::Request;
use http::response::Parts;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use mcp_proto::{Clock, LegEnd, LegStatus, Operation, TransportError, TransportErrorKind};

use crate::clock::TokioClock;

/// The HTTP client every leg goes through.
pub(crate) type Http = HyperClient<HttpsConnector<HttpConnector>, Full<Bytes>>;

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

/// Reads what sending a request gave: the head and body, or a failure fed to `op` and
/// returned as the leg's end.
pub(crate) fn sent(
    op: &mut Operation<'_>,
    sent: Result<http::Response<Incoming>, hyper_util::client::legacy::Error>,
) -> Result<(Parts, Incoming), LegEnd> {
    match sent {
        Ok(response) => Ok(response.into_parts()),
        Err(err) => {
            let kind = kind_of(&err);
            op.handle_transport_error(TransportError::new(kind, chain(&err)), TokioClock.now());
            Err(LegEnd::Transport(kind))
        }
    }
}

/// Sends `request` and waits for the response head (connecting first if the pool has no
/// idle connection). A failure is fed to `op` and returned as the leg's end.
pub(crate) async fn send(
    http: &Http,
    op: &mut Operation<'_>,
    request: Request<Vec<u8>>,
) -> Result<(Parts, Incoming), LegEnd> {
    let request = request.map(|body| Full::new(Bytes::from(body)));
    sent(op, http.request(request).await)
}

/// What reading one body frame gave.
pub(crate) enum Frame {
    /// The operation wants more of the body.
    ReadMore,
    /// The leg is over (answer in, body ended, refused or broken): drop the body.
    Over(Option<LegEnd>),
}

/// Reads the next frame of `body` and feeds it to `op`.
pub(crate) async fn read_frame(op: &mut Operation<'_>, body: &mut Incoming) -> Frame {
    feed_frame(op, body.frame().await)
}

/// Feeds one frame read from a body (or its end, or its failure) to `op`.
pub(crate) fn feed_frame(
    op: &mut Operation<'_>,
    frame: Option<Result<hyper::body::Frame<Bytes>, hyper::Error>>,
) -> Frame {
    let clock = TokioClock;
    match frame {
        None => {
            op.handle_body_end(clock.now());
            Frame::Over(None)
        }
        Some(Err(err)) => {
            let error = TransportError::new(TransportErrorKind::Io, chain(&err));
            op.handle_transport_error(error, clock.now());
            Frame::Over(Some(LegEnd::Transport(TransportErrorKind::Io)))
        }
        Some(Ok(frame)) => match frame.data_ref().filter(|data| !data.is_empty()) {
            // Trailers and empty frames carry nothing an MCP answer needs.
            None => Frame::ReadMore,
            Some(data) => match op.handle_body_chunk(data, clock.now()) {
                LegStatus::ReadMore => Frame::ReadMore,
                LegStatus::Complete => Frame::Over(None),
            },
        },
    }
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

/// After the answer is in: reads what is left of `body` if it ends within a millisecond (and
/// 64 KiB), so that hyper puts the connection back in its pool instead of closing it.
pub(crate) async fn drain_rest(body: &mut Incoming) {
    use hyper::body::Body as _;
    if body.is_end_stream() {
        return;
    }
    let _ = tokio::time::timeout(std::time::Duration::from_millis(1), async {
        let mut left = 64 * 1024usize;
        while let Some(Ok(frame)) = body.frame().await {
            left = left.saturating_sub(frame.data_ref().map_or(0, |d| d.len()));
            if left == 0 {
                break;
            }
        }
    })
    .await;
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
