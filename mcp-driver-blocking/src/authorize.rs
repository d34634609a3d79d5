//! The person's step of an authorization.
//!
//! [`Authorizer`] is the caller's: given the URL of [`Output::Authorize`](mcp_proto::driver::Output),
//! it gets a person to approve there and returns the redirect the browser was sent to.
//! [`HeadlessAuthorizer`] is the one for servers that approve at once (test servers, the
//! conformance suite). The driver decides nothing here: it hands the step over and feeds back
//! what comes back.

use std::time::Duration;

use mcp_proto::driver::Authorize;

/// Gets a person to approve an authorization: opens (or prints) `step.url`, waits at most
/// `step.timeout` for the redirect, and returns the redirect URL the browser was sent to.
///
/// It runs on the operation's thread and blocks it; a [`CancelHandle`](crate::CancelHandle)
/// takes effect once it returns. An `Err` (no browser, the listener failed, the person gave
/// up) ends the operation with
/// [`Error::AuthorizationRequired`](mcp_proto::Error::AuthorizationRequired); its text is for
/// the caller's own log, not the operation's error.
pub trait Authorizer: Send {
    /// See the trait docs.
    fn authorize(&mut self, step: &Authorize) -> Result<String, String>;
}

impl<F> Authorizer for F
where
    F: FnMut(&Authorize) -> Result<String, String> + Send,
{
    fn authorize(&mut self, step: &Authorize) -> Result<String, String> {
        self(step)
    }
}

/// An authorizer for authorization servers that approve without a person: it GETs the URL,
/// follows no redirect, and returns the `Location` of the 3xx the server answered with. For
/// test servers and the MCP conformance suite; a real authorization server wants a person.
#[derive(Debug, Clone)]
pub struct HeadlessAuthorizer {
    agent: ureq::Agent,
}

impl Default for HeadlessAuthorizer {
    fn default() -> Self {
        Self::new()
    }
}

impl HeadlessAuthorizer {
    /// A headless authorizer with its own HTTP agent (no redirects followed).
    pub fn new() -> Self {
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(0)
            .build();
        Self {
            agent: ureq::Agent::new_with_config(config),
        }
    }
}

impl Authorizer for HeadlessAuthorizer {
    fn authorize(&mut self, step: &Authorize) -> Result<String, String> {
        let response = self
            .agent
            .get(&step.url)
            .config()
            .timeout_global(Some(step.timeout.max(Duration::from_millis(1))))
            .build()
            .call()
            .map_err(|e| format!("the authorization endpoint could not be reached: {e}"))?;
        mcp_driver_common::redirect_location(response.status(), response.headers())
    }
}
