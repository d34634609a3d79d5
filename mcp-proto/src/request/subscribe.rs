//! `resources/subscribe` and `resources/unsubscribe` of the legacy era: the session is told
//! of a resource's updates (`notifications/resources/updated`, on its stream), or no longer.
//!
//! 2026-07-28 replaced both with `subscriptions/listen`'s `resourceSubscriptions`
//! ([`Subscription`](crate::Subscription), [`Action::Subscribe`](crate::Action::Subscribe)):
//! a modern server answers them with its error. A relay sends them for its host, to a
//! legacy server, and hears the updates on the session's stream.

use serde_json::{Map, Value};

use super::{Method, Request};

/// Subscribes the session to a resource's updates (one `resources/subscribe`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscribeResource {
    /// The resource's URI, sent as given.
    pub uri: String,
}

/// Ends the session's subscription to a resource's updates (one `resources/unsubscribe`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsubscribeResource {
    /// The resource's URI, sent as given.
    pub uri: String,
}

fn uri_param(uri: &str) -> Map<String, Value> {
    Map::from_iter([("uri".to_owned(), Value::from(uri))])
}

impl Request for SubscribeResource {
    const METHOD: &'static Method = &Method {
        name: "resources/subscribe",
        named_by: Some("uri"),
        input_rounds: false,
        cached: false,
    };
    /// The result is empty.
    type Output = ();

    fn params(&self) -> Map<String, Value> {
        uri_param(&self.uri)
    }

    fn read(_: Map<String, Value>) -> Result<(), String> {
        Ok(())
    }
}

impl Request for UnsubscribeResource {
    const METHOD: &'static Method = &Method {
        name: "resources/unsubscribe",
        named_by: Some("uri"),
        input_rounds: false,
        cached: false,
    };
    /// The result is empty.
    type Output = ();

    fn params(&self) -> Map<String, Value> {
        uri_param(&self.uri)
    }

    fn read(_: Map<String, Value>) -> Result<(), String> {
        Ok(())
    }
}
