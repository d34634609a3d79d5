//! The requests that are one request and one answer, as a table: each is a file here with its
//! row ([`Method`]: the JSON-RPC method, the param an `Mcp-Name` header mirrors, whether the
//! server may answer it with a round of input requests), its params and how its result is
//! read ([`Request`]). The operation carries every one of them the same way
//! ([`Action::Request`](crate::Action::Request) holding a [`OneRequest`]) and ends with the
//! result as the server sent it ([`Outcome::Answer`](crate::Outcome::Answer) holding an
//! [`Answer`]); [`Answer::read`] reads it into the request's own type.
//!
//! A new one-request method is one file here (its request type, its result type, its row),
//! declared in this module and listed in [`METHODS`]; no other part of the operation and no
//! driver changes. The flows with logic of their own (the handshake and era detection, a
//! listing's pages, a tool call and its tasks, subscriptions, the task polls, the close) are
//! the operation's, not rows here.
//!
//! The typed readings of results ([`Unreadable`] says why one failed) live here too.
//!
//! Plain data and pure functions: nothing here sends, waits or decides how an operation runs.
//!
//! ```
//! use mcp_proto::request::{Answer, ReadResource, Request};
//! use serde_json::json;
//!
//! let read = ReadResource::new("file:///notes.txt");
//! assert_eq!(ReadResource::METHOD.name, "resources/read");
//! assert_eq!(read.params()["uri"], "file:///notes.txt");
//!
//! // What an operation for it ends with, and its typed reading.
//! let result = json!({"contents": [{"uri": "file:///notes.txt", "text": "hello"}]});
//! let answer = Answer::new(ReadResource::METHOD, result.as_object().unwrap().clone());
//! let contents = answer.read::<ReadResource>("notes").unwrap();
//! assert_eq!(contents.text(), "hello");
//! ```

mod complete;
mod get_prompt;
mod read_resource;
mod subscribe;

use serde_json::{Map, Value};

use crate::catalog::CacheHint;
use crate::error::Error;

pub use complete::{Complete, Completion, CompletionRef};
pub use get_prompt::{GetPrompt, GetPromptResult};
pub use read_resource::{ReadResource, ReadResourceResult};
pub use subscribe::{SubscribeResource, UnsubscribeResource};

/// Why a result could not be read as the caller's type: a tool's `structuredContent`
/// ([`CallToolResult::structured`](crate::CallToolResult::structured)) or a resource's JSON
/// ([`ReadResourceResult::json`]).
pub use crate::model::Unreadable;

/// Every one-request method, one row each. A relay finds here how to carry a method its host
/// asked for ([`OneRequest::relay`]).
pub const METHODS: &[Method] = &[
    *ReadResource::METHOD,
    *GetPrompt::METHOD,
    *Complete::METHOD,
    *SubscribeResource::METHOD,
    *UnsubscribeResource::METHOD,
];

/// A one-request method's row: what the operation must know to carry it, whatever it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Method {
    /// The JSON-RPC method (`resources/read`); traces and errors name the request by it.
    pub name: &'static str,
    /// The param whose string value names what the request is about (a prompt's `name`, a
    /// resource's `uri`), mirrored in the `Mcp-Name` header of a modern request over HTTP so
    /// that an intermediary can route it without reading the body.
    pub named_by: Option<&'static str>,
    /// Whether the server may answer it with a round of input requests (2026-07-28: only
    /// `prompts/get`, `resources/read` and `tools/call` may). An `input_required` result to
    /// any other is malformed. None of these requests may be answered with a task: only a
    /// tool call becomes one, in its own flow.
    pub input_rounds: bool,
    /// Whether its result carries caching hints (2026-07-28: a server must put `ttlMs` and
    /// `cacheScope` on a `resources/read` result, as on a listing's pages).
    pub cached: bool,
}

/// A request that is one request and one answer: its row, its params and how its result is
/// read. Implement it in a file of this module for a new method (see the module docs).
pub trait Request {
    /// Its row in the table.
    const METHOD: &'static Method;
    /// What its result is read into.
    type Output;

    /// Its params, without `_meta` (the operation adds what the era and the configuration
    /// put there).
    fn params(&self) -> Map<String, Value>;

    /// Reads its result (the `result` object, verbatim), or says in one sentence what the
    /// result lacks (quoting no server text unclipped).
    ///
    /// # Errors
    /// The sentence, when the result is not this request's.
    fn read(result: Map<String, Value>) -> Result<Self::Output, String>;
}

/// A one-request method with its params, as an operation carries it
/// ([`Action::Request`](crate::Action::Request)): made from a typed [`Request`]
/// ([`OneRequest::new`], or `.into()`), or relayed as a host sent it ([`OneRequest::relay`]).
#[derive(Debug, Clone, PartialEq)]
pub struct OneRequest {
    method: &'static Method,
    params: Map<String, Value>,
}

impl OneRequest {
    /// The request `request` is, with its params.
    pub fn new<R: Request>(request: &R) -> Self {
        Self {
            method: R::METHOD,
            params: request.params(),
        }
    }

    /// The request of the table's method `method` with `params` as given (a relay's: the
    /// host's `_meta` is its own and is left out), or `None` when `method` is not one of
    /// [`METHODS`].
    pub fn relay(method: &str, mut params: Map<String, Value>) -> Option<Self> {
        let method = METHODS.iter().find(|row| row.name == method)?;
        params.remove("_meta");
        Some(Self { method, params })
    }

    /// Its row.
    pub const fn method(&self) -> &'static Method {
        self.method
    }

    /// Its params, as they are sent (without `_meta`).
    pub const fn params(&self) -> &Map<String, Value> {
        &self.params
    }

    /// What names the request (its row's `named_by` param), for the `Mcp-Name` header.
    pub(crate) fn name(&self) -> Option<&str> {
        self.params.get(self.method.named_by?)?.as_str()
    }
}

impl<R: Request> From<R> for OneRequest {
    fn from(request: R) -> Self {
        Self::new(&request)
    }
}

/// How a one-request operation ended: its method's row and the server's `result` object,
/// verbatim. Read it with [`Answer::read`].
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    method: &'static Method,
    /// The `result` object as the server sent it.
    pub result: Map<String, Value>,
}

impl Answer {
    /// The answer to a request of `method`: `result`.
    pub const fn new(method: &'static Method, result: Map<String, Value>) -> Self {
        Self { method, result }
    }

    /// The row of the request it answers.
    pub const fn method(&self) -> &'static Method {
        self.method
    }

    /// The caching hints the result carries (2026-07-28: `ttlMs`, `cacheScope`).
    pub fn cache(&self) -> Option<CacheHint> {
        CacheHint::of(&self.result)
    }

    /// The result read as `R`'s, the server named `server` in the error.
    ///
    /// # Errors
    /// [`Error::Malformed`] when the result is not what `R` answers, or when the answer is
    /// another method's.
    pub fn read<R: Request>(self, server: &str) -> Result<R::Output, Error> {
        let malformed = |detail: String| Error::Malformed {
            server: server.to_owned(),
            method: R::METHOD.name,
            detail,
        };
        if self.method != R::METHOD {
            let other = self.method.name;
            return Err(malformed(format!("the answer is to {other}")));
        }
        R::read(self.result).map_err(malformed)
    }
}

/// The text values joined with newlines (values that are not strings are left out).
fn joined<'a>(texts: impl Iterator<Item = &'a Value>) -> String {
    texts
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_relayed_request_is_found_by_its_method_and_keeps_its_params_but_meta() {
        let params = object(json!({"name": "greet", "arguments": {"who": "x"}, "_meta": {"k": 1}}));
        let relayed = OneRequest::relay("prompts/get", params).unwrap();
        assert_eq!(relayed.method(), GetPrompt::METHOD);
        assert_eq!(
            relayed.params(),
            &object(json!({"name": "greet", "arguments": {"who": "x"}}))
        );
        assert_eq!(relayed.name(), Some("greet"));
        assert!(OneRequest::relay("tools/call", Map::new()).is_none());
        // A completion names nothing; a name that is not a string is not mirrored.
        let completion = OneRequest::relay("completion/complete", Map::new()).unwrap();
        assert_eq!(completion.name(), None);
        let odd = OneRequest::relay("resources/read", object(json!({"uri": 5}))).unwrap();
        assert_eq!(odd.name(), None);
    }

    #[test]
    fn an_answer_read_as_another_methods_is_malformed_not_a_panic() {
        let answer = Answer::new(GetPrompt::METHOD, object(json!({"messages": []})));
        let err = answer.read::<ReadResource>("srv").unwrap_err();
        assert!(
            matches!(&err, Error::Malformed { server, method: "resources/read", detail }
                if server == "srv" && detail.contains("prompts/get")),
            "{err:?}"
        );
        let answer = Answer::new(ReadResource::METHOD, object(json!({})));
        let err = answer.read::<ReadResource>("srv").unwrap_err();
        assert!(err.to_string().contains("\"contents\""), "{err}");
    }

    #[test]
    fn every_row_of_the_table_is_a_distinct_method() {
        let mut names: Vec<_> = METHODS.iter().map(|m| m.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), METHODS.len());
    }
}
