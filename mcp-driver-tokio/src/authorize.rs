//! The person's step of an authorization.
//!
//! [`Authorizer`] is the caller's: given the URL of [`Output::Authorize`](mcp_proto::driver::Output),
//! it gets a person to approve there and resolves to the redirect the browser was sent to.
//! [`HeadlessAuthorizer`] is the one for servers that approve at once (test servers, the
//! conformance suite). The driver decides nothing here: it hands the step over, bounds it by
//! the step's end, and feeds back what comes back.

use std::future::Future;
use std::pin::Pin;

use mcp_proto::driver::Authorize;

use crate::http1::{Http, http_client};

/// What an [`Authorizer`] resolves to: the redirect URL, or why there is none.
pub type AuthorizeFuture = Pin<Box<dyn Future<Output = Result<String, String>> + Send>>;

/// Gets a person to approve an authorization: opens (or prints) `step.url`, waits for the
/// redirect, and resolves to the redirect URL the browser was sent to.
///
/// The driver drops the future at `step.ends_at` (the operation's budget is spent) and when
/// the operation is cancelled. An `Err` (no browser, the listener failed, the person gave up)
/// ends the operation with
/// [`Error::AuthorizationRequired`](mcp_proto::Error::AuthorizationRequired); its text is for
/// the caller's own log, not the operation's error.
pub trait Authorizer: Send + Sync {
    /// See the trait docs.
    fn authorize(&self, step: &Authorize) -> AuthorizeFuture;
}

/// An authorizer for authorization servers that approve without a person: it GETs the URL,
/// follows no redirect, and returns the `Location` of the 3xx the server answered with. For
/// test servers and the MCP conformance suite; a real authorization server wants a person.
#[derive(Clone)]
pub struct HeadlessAuthorizer {
    http: Http,
}

impl std::fmt::Debug for HeadlessAuthorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeadlessAuthorizer").finish_non_exhaustive()
    }
}

impl Default for HeadlessAuthorizer {
    fn default() -> Self {
        Self::new()
    }
}

impl HeadlessAuthorizer {
    /// A headless authorizer with its own HTTP client (which follows no redirect).
    pub fn new() -> Self {
        Self {
            http: http_client(),
        }
    }
}

impl Authorizer for HeadlessAuthorizer {
    fn authorize(&self, step: &Authorize) -> AuthorizeFuture {
        let http = self.http.clone();
        let url = step.url.clone();
        Box::pin(async move {
            let request = http::Request::get(url.as_str())
                .body(Vec::new())
                .map_err(|e| format!("the authorization URL cannot be requested: {e}"))?;
            let response = http
                .request(request)
                .await
                .map_err(|e| format!("the authorization endpoint could not be reached: {e}"))?;
            mcp_driver_common::redirect_location(response.status(), response.headers())
        })
    }
}
