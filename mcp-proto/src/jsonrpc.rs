//! JSON-RPC 2.0 envelopes as MCP uses them over Streamable HTTP.
//!
//! Outgoing messages are built here; incoming ones are classified here. This module decides
//! what a message *is* (a response, a server request, a notification); what an operation does
//! with it lives in the `operation` module.

use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

/// A request id as it appears on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// A numeric id (the only kind this client sends).
    Number(i64),
    /// A string id (servers may use them for their own requests).
    String(String),
}

impl RequestId {
    fn from_value(value: &Value) -> Option<Self> {
        match value {
            Value::Number(n) => n.as_i64().map(Self::Number),
            Value::String(s) => Some(Self::String(s.clone())),
            _ => None,
        }
    }

    /// The id as a JSON value.
    pub fn to_value(&self) -> Value {
        match self {
            Self::Number(n) => Value::from(*n),
            Self::String(s) => Value::from(s.as_str()),
        }
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "\"{}\"", mcp_auth::clip(s, 40)),
        }
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The code; 0 when the server sent none or a non-integer.
    pub code: i64,
    /// The message; `"no message"` when the server sent none.
    pub message: String,
    /// The optional `data`, verbatim.
    pub data: Option<Value>,
}

impl RpcError {
    /// Reads a JSON-RPC error object as leniently as the envelope it came in: a missing or
    /// non-integer code is 0, a missing message `"no message"`.
    pub(crate) fn read(error: &Value) -> Self {
        Self {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: (error.get("message").and_then(Value::as_str))
                .unwrap_or("no message")
                .to_owned(),
            data: error.get("data").cloned(),
        }
    }
}

/// A message that arrived from the server, classified.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Incoming {
    /// A response carrying `result` (with the id it answers).
    Result {
        /// The id as sent (`None` when missing or not a number or string).
        id: Option<RequestId>,
        /// The `result` as the server sent it (the caller checks it is an object).
        result: RawResult,
    },
    /// A response carrying `error`; checked before `result`, as the reference client does.
    Error {
        /// The id as sent; error envelopes may carry `null`, none or a foreign string.
        id: Option<RequestId>,
        /// The error object.
        error: RpcError,
    },
    /// A request from the server (it carries a method and an id) that expects an answer.
    Request {
        /// The server's id for it.
        id: RequestId,
        /// The method.
        method: String,
        /// The params (`Null` when absent).
        params: Value,
    },
    /// A notification from the server (a method without an id).
    Notification {
        /// The method.
        method: String,
        /// The params (`Null` when absent).
        params: Value,
    },
    /// An object that is none of the above.
    Neither,
}

/// How a message's `result` is kept when it is read ([`read_message`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum ResultAs {
    /// As a value: any result but a tool's (it is read as an object, once).
    #[default]
    Value,
    /// As its text: a tool's result, read from it straight into its type (building a `Value`
    /// tree and taking it apart cost a warm call about a tenth of its instructions), and kept
    /// as the server sent it.
    Text,
}

/// A response's `result`, kept as [`ResultAs`] asked.
#[derive(Debug, Clone)]
pub(crate) enum RawResult {
    /// Its JSON text as the server sent it, checked to be JSON but not read.
    Text(Box<RawValue>),
    /// Read as a value.
    Value(Value),
}

/// Why a `result` is not an object a client can read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NotAnObject {
    /// A JSON value, but not an object.
    Other,
    /// An object, but not one `serde_json` reads (a number out of range): its reason.
    Unreadable(String),
}

impl RawResult {
    /// The result as a JSON object (a member seen twice counts as its last).
    pub(crate) fn object(self) -> Result<Map<String, Value>, NotAnObject> {
        match self {
            Self::Value(Value::Object(result)) => Ok(result),
            Self::Value(_) => Err(NotAnObject::Other),
            Self::Text(text) if !text.get().starts_with('{') => Err(NotAnObject::Other),
            Self::Text(text) => {
                serde_json::from_str(text.get()).map_err(|e| NotAnObject::Unreadable(e.to_string()))
            }
        }
    }
}

/// Two results are equal when they read as the same JSON value (a text may differ from
/// another in spacing, order and members given twice).
impl PartialEq for RawResult {
    fn eq(&self, other: &Self) -> bool {
        let read = |raw: &Self| match raw {
            Self::Text(text) => serde_json::from_str::<Value>(text.get()).ok(),
            Self::Value(value) => Some(value.clone()),
        };
        read(self) == read(other)
    }
}

impl Incoming {
    /// The error code, when this is an error response.
    pub(crate) fn error_code(&self) -> Option<i64> {
        match self {
            Self::Error { error, .. } => Some(error.code),
            _ => None,
        }
    }
}

/// Classifies one decoded JSON-RPC object. It takes the object by value so a large `result`
/// is moved to the caller, never copied.
pub(crate) fn classify(mut message: Map<String, Value>) -> Incoming {
    let id = message.get("id").and_then(RequestId::from_value);
    if let Some(Value::String(method)) = message.remove("method") {
        let params = message.remove("params").unwrap_or(Value::Null);
        return match id {
            Some(id) => Incoming::Request { id, method, params },
            None => Incoming::Notification { method, params },
        };
    }
    if let Some(error) = message.get("error") {
        let error = RpcError::read(error);
        return Incoming::Error { id, error };
    }
    match message.remove("result") {
        Some(result) => Incoming::Result {
            id,
            result: RawResult::Value(result),
        },
        None => Incoming::Neither,
    }
}

/// Reads one JSON-RPC object straight into its class, as [`classify`] would read it decoded
/// (a member seen twice counts as its last), without building the envelope as a map: a
/// member this client does not read (`jsonrpc`, anything unknown) is read and dropped, not
/// kept.
///
/// # Errors
/// serde_json's, for anything that is not one JSON object; a caller that must say which
/// (not JSON, or JSON but not an object) decodes the bytes again the plain way.
pub(crate) fn read_message(bytes: &[u8], keep: ResultAs) -> Result<Incoming, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let message = serde::Deserializer::deserialize_map(&mut deserializer, Envelope(keep))?;
    deserializer.end()?;
    Ok(message)
}

/// The visitor of one JSON-RPC object's members, keeping its `result` as it says.
struct Envelope(ResultAs);

/// The members [`classify`] reads.
enum Member {
    Id,
    Method,
    Params,
    Error,
    Result,
    Other,
}

impl<'de> serde::Deserialize<'de> for Member {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;
        impl serde::de::Visitor<'_> for Name {
            type Value = Member;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a member name")
            }
            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Member, E> {
                Ok(match name {
                    "id" => Member::Id,
                    "method" => Member::Method,
                    "params" => Member::Params,
                    "error" => Member::Error,
                    "result" => Member::Result,
                    _ => Member::Other,
                })
            }
        }
        deserializer.deserialize_identifier(Name)
    }
}

impl<'de> serde::de::Visitor<'de> for Envelope {
    type Value = Incoming;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON-RPC object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Incoming, A::Error> {
        let (mut id, mut method, mut params, mut error) = (None, None, None, None);
        let mut result = None;
        while let Some(member) = map.next_key::<Member>()? {
            let slot = match member {
                Member::Id => &mut id,
                Member::Method => &mut method,
                Member::Params => &mut params,
                Member::Error => &mut error,
                Member::Result => {
                    result = Some(match self.0 {
                        // Checked to be JSON here, read by whoever awaits it.
                        ResultAs::Text => RawResult::Text(map.next_value()?),
                        ResultAs::Value => RawResult::Value(map.next_value()?),
                    });
                    continue;
                }
                // Read (and dropped) as a value would be, so what a decoded message refuses
                // (a number out of range) is refused here too, but without a copy of it.
                Member::Other => {
                    map.next_value::<Unread>()?;
                    continue;
                }
            };
            *slot = Some(map.next_value::<Value>()?);
        }
        let id = id.as_ref().and_then(RequestId::from_value);
        if let Some(Value::String(method)) = method {
            let params = params.unwrap_or(Value::Null);
            return Ok(match id {
                Some(id) => Incoming::Request { id, method, params },
                None => Incoming::Notification { method, params },
            });
        }
        if let Some(error) = error {
            let error = RpcError::read(&error);
            return Ok(Incoming::Error { id, error });
        }
        Ok(match result {
            Some(result) => Incoming::Result { id, result },
            None => Incoming::Neither,
        })
    }
}

/// A member this client does not read (`jsonrpc`, anything unknown): read through as
/// [`Value`] would read it (numbers converted, so one out of range is refused; strings checked
/// as text), nothing of it kept or copied.
struct Unread;

impl<'de> serde::Deserialize<'de> for Unread {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Self)
    }
}

impl<'de> serde::de::Visitor<'de> for Unread {
    type Value = Self;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self, E> {
        Ok(Self)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self, E> {
        Ok(Self)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self, E> {
        Ok(Self)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self, E> {
        Ok(Self)
    }

    fn visit_str<E>(self, _: &str) -> Result<Self, E> {
        Ok(Self)
    }

    fn visit_unit<E>(self) -> Result<Self, E> {
        Ok(Self)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<Self>()?.is_some() {}
        Ok(Self)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<Self, Self>()?.is_some() {}
        Ok(Self)
    }
}

/// What a request's body is written into: room for most requests, so that writing one does
/// not grow it (nor the line's end over stdio).
const BODY_CAPACITY: usize = 512;

/// `message` as JSON text. Serialising maps, strings and numbers cannot fail; were it to, the
/// body is empty, as before.
fn body_of(message: &impl serde::Serialize) -> Vec<u8> {
    let mut body = Vec::with_capacity(BODY_CAPACITY);
    if serde_json::to_writer(&mut body, message).is_err() {
        body.clear();
    }
    body
}

/// Serialises a request. `params` is always an object (`{}` when empty, never `[]`).
pub(crate) fn request(id: i64, method: &str, params: Map<String, Value>) -> Vec<u8> {
    body_of(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
}

/// Serialises a request whose `params` is any serialisable object, without building a
/// `Value` tree first.
pub(crate) fn request_with(id: i64, method: &str, params: &impl serde::Serialize) -> Vec<u8> {
    #[derive(serde::Serialize)]
    struct Envelope<'a, P> {
        jsonrpc: &'static str,
        id: i64,
        method: &'a str,
        params: &'a P,
    }
    body_of(&Envelope {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
}

/// Serialises a notification. `params` is always an object.
pub(crate) fn notification(method: &str, params: Map<String, Value>) -> Vec<u8> {
    body_of(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
}

/// What the property tests of messages and results are made of: any JSON a member may hold,
/// and an object written member by member (a name may come twice, as a server may send it).
#[cfg(test)]
pub(crate) mod arbitrary {
    use proptest::prelude::*;
    use serde_json::Value;

    /// A JSON value of a few levels: objects with member names matching `names`, strings
    /// matching `strings` (a pattern that names the words a reader looks for makes them come).
    pub(crate) fn any_json(
        names: &'static str,
        strings: &'static str,
    ) -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            strings.prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 16, 4, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
                proptest::collection::btree_map(names, inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    /// The text of an object of `members`, written in their order, names repeated as given.
    pub(crate) fn object(members: &[(String, Value)]) -> String {
        let members: Vec<String> = members
            .iter()
            .map(|(name, value)| format!("{}:{value}", Value::from(name.as_str())))
            .collect();
        format!("{{{}}}", members.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("test input is an object"),
        }
    }

    #[test]
    fn error_is_checked_before_result() {
        let m = obj(
            json!({"jsonrpc":"2.0","id":1,"result":{},"error":{"code":-32601,"message":"nope"}}),
        );
        assert!(matches!(
            classify(m),
            Incoming::Error {
                error: RpcError { code: -32601, .. },
                ..
            }
        ));
    }

    #[test]
    fn odd_error_envelopes_still_classify() {
        let m = obj(json!({"jsonrpc":"2.0","id":null,"error":{"code":"x"}}));
        let Incoming::Error { id, error } = classify(m) else {
            panic!("not an error")
        };
        assert_eq!(id, None);
        assert_eq!(error.code, 0);
        assert_eq!(error.message, "no message");
    }

    #[test]
    fn methods_with_and_without_ids() {
        let req = obj(json!({"jsonrpc":"2.0","id":"s1","method":"ping"}));
        assert!(matches!(classify(req), Incoming::Request { .. }));
        let note = obj(json!({"jsonrpc":"2.0","method":"notifications/progress","params":{}}));
        assert!(matches!(classify(note), Incoming::Notification { .. }));
        assert_eq!(classify(obj(json!({"jsonrpc":"2.0"}))), Incoming::Neither);
    }

    #[test]
    fn a_message_read_straight_is_classified_as_when_decoded_first() {
        let cases = [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
            r#"{"jsonrpc":"2.0","id":"s1","method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":-32601,"message":"nope"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":null}"#,
            r#"{"id":1,"method":7,"result":[1]}"#,
            r#"{"id":1,"result":{"a":1},"result":{"b":2}}"#,
            r#"{"\u0069d":3,"r\u0065sult":true,"x":{"deep":[null,1e400]}}"#,
            r#"{"id":[1],"result":null}"#,
            r#"{"jsonrpc":"2.0"}"#,
            r#"{}"#,
        ];
        for keep in [ResultAs::Value, ResultAs::Text] {
            for case in cases {
                let decoded: Value = serde_json::from_str(case).unwrap_or(Value::Null);
                let Value::Object(decoded) = decoded else {
                    assert!(read_message(case.as_bytes(), keep).is_err(), "{case}");
                    continue;
                };
                assert_eq!(
                    read_message(case.as_bytes(), keep).unwrap(),
                    classify(decoded),
                    "{case} {keep:?}"
                );
            }
            for bad in ["[1]", "1", "\"x\"", "{\"id\":1", "{\"id\":1} x", ""] {
                assert!(read_message(bad.as_bytes(), keep).is_err(), "{bad}");
            }
        }
    }

    proptest::proptest! {
        /// Read straight or decoded first, a message is the same message: whatever members it
        /// has (those read, others, some twice), whatever they hold.
        #[test]
        fn reading_straight_agrees_with_decoding_first(
            members in proptest::collection::vec(
                ("(id|method|params|error|result|jsonrpc|x)",
                    arbitrary::any_json("[a-z]{1,6}", "[a-z/ ]{0,8}")), 0..7),
        ) {
            let text = arbitrary::object(&members);
            let decoded: Map<String, Value> = serde_json::from_str(&text).unwrap();
            for keep in [ResultAs::Value, ResultAs::Text] {
                let read = read_message(text.as_bytes(), keep).unwrap();
                proptest::prop_assert_eq!(read, classify(decoded.clone()));
            }
        }
    }

    #[test]
    fn a_result_is_kept_as_its_text_only_when_asked() {
        let text = br#"{"id":1,"result": {"b":1, "a":[true]} }"#;
        let Ok(Incoming::Result { result, .. }) = read_message(text, ResultAs::Text) else {
            panic!("not a result")
        };
        let RawResult::Text(raw) = &result else {
            panic!("not kept as text: {result:?}")
        };
        assert_eq!(raw.get(), r#"{"b":1, "a":[true]}"#);
        let Ok(Incoming::Result { result, .. }) = read_message(text, ResultAs::Value) else {
            panic!("not a result")
        };
        assert!(matches!(result, RawResult::Value(_)), "{result:?}");
        assert_eq!(result.object().unwrap()["a"], json!([true]));
    }

    #[test]
    fn empty_params_are_an_object() {
        let body = request(1, "tools/list", Map::new());
        assert_eq!(
            String::from_utf8(body).unwrap(),
            r#"{"id":1,"jsonrpc":"2.0","method":"tools/list","params":{}}"#
        );
    }
}
