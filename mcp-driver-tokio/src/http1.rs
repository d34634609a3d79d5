//! The tokio driver's HTTP/1.1 client ([`Http`]): hyper's own connection (`client::conn`) over
//! the driver's connector ([`Connector`]: TCP, the proxy's tunnel, TLS), and the connections a
//! client keeps between requests.
//!
//! What hyper-util's pooled client did for the driver, and only that: a kept connection taken
//! when it is ready for a request (one its server closed is dropped), a new one made and its
//! connection task spawned otherwise; the request sent with a `Host` header and an
//! origin-form target; its answer's body read through [`Body`], which gives the connection
//! back when the body has ended. A request a kept connection could not send (its server had
//! closed it) is sent once more on a new connection: it never left, so it cannot arrive twice.
//! No redirect is followed, and every status is an answer.
//!
//! This module never decides an MCP matter, and never waits on its own: every wait is inside
//! a leg's future, which the operation drops at the leg's end.

use std::error::Error as StdError;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderValue, Request, Response, Uri, header};
use http_body_util::Full;
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::client::conn::http1::SendRequest;
use tower_service::Service as _;

use mcp_driver_common::network::Network;

use mcp_driver_common::network::Origin;

use crate::connector::{ConnectFailure, Connecting, Connector};

/// How long an idle connection is kept (hyper-util's default).
const MAX_IDLE_AGE: Duration = Duration::from_secs(90);
/// Idle connections kept per server.
const MAX_IDLE_PER_SERVER: usize = 8;

type Sender = SendRequest<Full<Bytes>>;

/// What a request's future resolves to: the answer (its body still to read) or why there is
/// none.
pub(crate) type HeadResult = Result<Response<Body>, RequestError>;

/// A request on its way: boxed once, kept as it is by the leg.
pub(crate) type ResponseFuture = Pin<Box<dyn Future<Output = HeadResult> + Send>>;

/// An HTTP/1.1 client for the default [`Network`] (the system's trust store, proxies from the
/// environment). Redirects are not followed (hyper never does).
pub(crate) fn http_client() -> Http {
    // The default network adds no CA of the caller's, so it cannot fail.
    http_client_for(&Network::default())
        .map(|(http, _)| http)
        .unwrap_or_else(|_| unreachable!("the default network adds no CA of the caller's"))
}

/// An HTTP/1.1 client whose connections trust and tunnel as `network` says: plain HTTP, or
/// HTTPS through rustls with the ring provider ([`crate::tls`]), each through the target's
/// proxy when it has one (an HTTP `CONNECT` tunnel); names looked up by
/// [`Resolver`](crate::connector::Resolver) (or fixed by the caller). Also returns what its connections are doing ([`Connecting`]), which
/// tells a leg that ran out of time in a TLS handshake or in a proxy's tunnel
/// ([`connect_timeouts`](crate::leg::connect_timeouts)).
pub(crate) fn http_client_for(network: &Network) -> Result<(Http, Connecting), mcp_proto::Error> {
    let connecting = Connecting::default();
    let connector = Connector::new(network, connecting.clone())?;
    Ok((Http::new(connector), connecting))
}

/// A client's HTTP/1.1 client: its connector and the connections it keeps. Clones share both.
#[derive(Clone)]
pub(crate) struct Http {
    connector: Connector,
    pool: Arc<Pool>,
}

/// The connections kept idle, the most recently used last.
#[derive(Default)]
struct Pool(Mutex<Vec<Idle>>);

struct Idle {
    server: Origin,
    sender: Sender,
    since: Instant,
}

impl Pool {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Idle>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The most recently kept connection to `server` that is still open, if any.
    fn take(&self, server: &Origin) -> Option<Sender> {
        let now = Instant::now();
        let mut idle = self.lock();
        idle.retain(|kept| {
            now.saturating_duration_since(kept.since) < MAX_IDLE_AGE && !kept.sender.is_closed()
        });
        let at = idle.iter().rposition(|kept| kept.server == *server)?;
        Some(idle.remove(at).sender)
    }

    /// Keeps `sender` for the next request to `server`.
    fn give(&self, server: Origin, sender: Sender) {
        if sender.is_closed() {
            return;
        }
        let mut idle = self.lock();
        if idle.iter().filter(|kept| kept.server == server).count() >= MAX_IDLE_PER_SERVER {
            if let Some(oldest) = idle.iter().position(|kept| kept.server == server) {
                idle.remove(oldest);
            }
        }
        idle.push(Idle {
            server,
            sender,
            since: Instant::now(),
        });
    }
}

/// Why a request has no answer: no connection, or hyper's error on the one it went out on.
#[derive(Debug)]
pub(crate) enum RequestError {
    /// The connection could not be made (the connector's own words and kind).
    Connect(ConnectFailure),
    /// hyper's error on the connection: its handshake, the request or the answer's head.
    Http(hyper::Error),
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Connect(failure) => write!(f, "client error (Connect): {failure}"),
            Self::Http(err) => write!(f, "client error: {err}"),
        }
    }
}

impl StdError for RequestError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            Self::Connect(failure) => Some(failure),
            Self::Http(err) => Some(err),
        }
    }
}

impl Http {
    pub(crate) fn new(connector: Connector) -> Self {
        Self {
            connector,
            pool: Arc::default(),
        }
    }

    /// Sends `request` (a `Host` header added when it has none, its target in origin form)
    /// and resolves to the answer's head; its body is read through the answer's [`Body`].
    pub(crate) fn request(&self, mut request: Request<Full<Bytes>>) -> ResponseFuture {
        let server = Origin::of(request.uri());
        let uri = request.uri().clone();
        if let (false, Some(host)) = (request.headers().contains_key(header::HOST), host(&uri)) {
            request.headers_mut().insert(header::HOST, host);
        }
        *request.uri_mut() = origin_form(&uri);
        let http = self.clone();
        Box::pin(async move {
            let kept = http.pool.take(&server);
            let reused = kept.is_some();
            let mut sender = match kept {
                Some(sender) => sender,
                None => http.connect(&uri).await?,
            };
            let response = match send(&mut sender, request).await {
                Ok(response) => response,
                // A kept connection its server had closed: the request never left, so it goes
                // once more, on a new connection (it cannot arrive twice).
                Err((Some(request), _)) if reused => {
                    sender = http.connect(&uri).await?;
                    sender
                        .send_request(request)
                        .await
                        .map_err(RequestError::Http)?
                }
                Err((_, err)) => return Err(RequestError::Http(err)),
            };
            let (parts, body) = response.into_parts();
            let mut body = Body {
                inner: body,
                keep: Some((sender, server, http.pool)),
            };
            if hyper::body::Body::is_end_stream(&body.inner) {
                body.ended();
            }
            Ok(Response::from_parts(parts, body))
        })
    }

    /// A new connection to `uri`'s server, its connection task spawned.
    async fn connect(&self, uri: &Uri) -> Result<Sender, RequestError> {
        let mut connector = self.connector.clone();
        let stream = connector
            .call(uri.clone())
            .await
            .map_err(RequestError::Connect)?;
        let (sender, connection) = hyper::client::conn::http1::Builder::new()
            .handshake::<_, Full<Bytes>>(stream)
            .await
            .map_err(RequestError::Http)?;
        tokio::spawn(async move {
            // Its errors are the requests' own: each leg hears of them through its answer.
            let _ = connection.await;
        });
        Ok(sender)
    }
}

/// Sends `request` on `sender` once its connection takes one (at once, unless its last
/// answer's end is still being read). A failure comes with the request when it never left
/// (the connection had closed).
async fn send(
    sender: &mut Sender,
    request: Request<Full<Bytes>>,
) -> Result<Response<Incoming>, (Option<Request<Full<Bytes>>>, hyper::Error)> {
    if let Err(closed) = std::future::poll_fn(|cx| sender.poll_ready(cx)).await {
        return Err((Some(request), closed));
    }
    sender
        .try_send_request(request)
        .await
        .map_err(|mut unsent| (unsent.take_message(), unsent.into_error()))
}

/// The `Host` header for `uri`: its host, and its port unless it is the scheme's own.
fn host(uri: &Uri) -> Option<HeaderValue> {
    let host = uri.host()?;
    let https = uri.scheme() == Some(&http::uri::Scheme::HTTPS);
    match uri.port_u16() {
        Some(443) if https => HeaderValue::from_str(host).ok(),
        Some(80) if !https => HeaderValue::from_str(host).ok(),
        Some(port) => HeaderValue::from_str(&format!("{host}:{port}")).ok(),
        None => HeaderValue::from_str(host).ok(),
    }
}

/// `uri`'s path and query alone (`/` when it has neither): the target of a request sent
/// straight to its server (a proxy's tunnel carries it as such too).
fn origin_form(uri: &Uri) -> Uri {
    match uri.path_and_query() {
        Some(path) if path.as_str() != "/" => {
            let mut parts = http::uri::Parts::default();
            parts.path_and_query = Some(path.clone());
            Uri::from_parts(parts).unwrap_or_default()
        }
        _ => Uri::default(),
    }
}

/// An answer's body: its frames as hyper reads them. At its end its connection goes back to
/// the client's pool; dropped before, the connection closes (hyper closes a connection whose
/// answer was not read to its end).
pub(crate) struct Body {
    inner: Incoming,
    keep: Option<(Sender, Origin, Arc<Pool>)>,
}

impl Body {
    fn ended(&mut self) {
        if let Some((sender, server, pool)) = self.keep.take() {
            pool.give(server, sender);
        }
    }
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, hyper::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            // A body whose length was given ends with its last bytes: no end is polled for.
            Poll::Ready(Some(Ok(_))) if self.inner.is_end_stream() => self.ended(),
            Poll::Ready(None) => self.ended(),
            Poll::Ready(Some(Err(_))) => self.keep = None,
            _ => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_carries_its_host_and_its_path() {
        let uri: Uri = "http://127.0.0.1:8080/mcp?x=1".parse().unwrap();
        assert_eq!(host(&uri).unwrap(), "127.0.0.1:8080");
        assert_eq!(origin_form(&uri), "/mcp?x=1");
        let uri: Uri = "https://tools.example.org:443/".parse().unwrap();
        assert_eq!(host(&uri).unwrap(), "tools.example.org");
        assert_eq!(origin_form(&uri), "/");
        let uri: Uri = "http://[::1]/mcp".parse().unwrap();
        assert_eq!(host(&uri).unwrap(), "[::1]");
    }
}
