//! `resources/read`: the contents of one resource, by its URI.

use serde_json::{Map, Value};

use super::{Method, Request, joined};
use crate::catalog::CacheHint;
use crate::model::Unreadable;
use mcp_auth::{QUOTE_LIMIT, clip};

/// Reads the resource at a URI (one `resources/read`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadResource {
    /// The resource's URI, sent as given.
    pub uri: String,
}

impl ReadResource {
    /// A read of the resource at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self { uri: uri.into() }
    }
}

impl Request for ReadResource {
    const METHOD: &'static Method = &Method {
        name: "resources/read",
        named_by: Some("uri"),
        input_rounds: true,
        cached: true,
    };
    type Output = ReadResourceResult;

    fn params(&self) -> Map<String, Value> {
        Map::from_iter([("uri".to_owned(), Value::from(self.uri.as_str()))])
    }

    fn read(result: Map<String, Value>) -> Result<ReadResourceResult, String> {
        let contents = match result.get("contents") {
            Some(Value::Array(contents)) => contents.clone(),
            _ => return Err("the result has no \"contents\" array".to_owned()),
        };
        Ok(ReadResourceResult {
            contents,
            cache: CacheHint::of(&result),
            raw: result,
        })
    }
}

/// The result of `resources/read`.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadResourceResult {
    /// The contents, verbatim: objects with `uri`, `mimeType` and `text` or `blob`.
    pub contents: Vec<Value>,
    /// The caching hints (modern era).
    pub cache: Option<CacheHint>,
    /// The whole `result` object as the server sent it.
    pub raw: Map<String, Value>,
}

impl ReadResourceResult {
    /// The bytes of the content for `uri` (else of the first content): its `text` as UTF-8, or
    /// its `blob` decoded from Base64; `None` when there is neither.
    pub fn bytes_of(&self, uri: &str) -> Option<Vec<u8>> {
        use base64::Engine as _;
        let content = self
            .contents
            .iter()
            .find(|c| c.get("uri").and_then(Value::as_str) == Some(uri))
            .or_else(|| self.contents.first())?;
        if let Some(text) = content.get("text").and_then(Value::as_str) {
            return Some(text.as_bytes().to_vec());
        }
        let blob = content.get("blob").and_then(Value::as_str)?;
        base64::engine::general_purpose::STANDARD.decode(blob).ok()
    }

    /// The text contents joined with newlines (binary `blob` contents are left out).
    pub fn text(&self) -> String {
        joined(self.contents.iter().filter_map(|c| c.get("text")))
    }

    /// The content for `uri` (else the first content) read as JSON into `T`: for a resource
    /// whose `application/json` text (or blob) the caller knows the shape of.
    ///
    /// ```
    /// use mcp_proto::request::{ReadResource, Request};
    /// #[derive(serde::Deserialize)]
    /// struct Config { retries: u32 }
    ///
    /// let result = serde_json::json!({"contents": [
    ///     {"uri": "config://app", "mimeType": "application/json", "text": "{\"retries\": 3}"}
    /// ]});
    /// let read = ReadResource::read(result.as_object().cloned().unwrap()).unwrap();
    /// let config: Config = read.json("config://app")?;
    /// assert_eq!(config.retries, 3);
    /// # Ok::<(), mcp_proto::request::Unreadable>(())
    /// ```
    ///
    /// # Errors
    /// [`Unreadable::NoContent`] when no content has text or a blob;
    /// [`Unreadable::Type`] when it is not JSON of that type (serde's reason, clipped).
    pub fn json<T: serde::de::DeserializeOwned>(&self, uri: &str) -> Result<T, Unreadable> {
        let bytes = self.bytes_of(uri).ok_or(Unreadable::NoContent)?;
        serde_json::from_slice(&bytes)
            .map_err(|error| Unreadable::Type(clip(&error.to_string(), QUOTE_LIMIT)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_read_gives_its_text_and_its_bytes() {
        let result = json!({"contents": [
            {"uri": "a", "text": "one"}, {"uri": "b", "blob": "AAAA"}, {"uri": "c", "text": "two"}
        ], "ttlMs": 1000});
        let read = ReadResource::read(result.as_object().cloned().unwrap_or_default()).unwrap();
        assert_eq!(read.text(), "one\ntwo");
        assert_eq!(read.bytes_of("b"), Some(vec![0, 0, 0]));
        assert_eq!(read.bytes_of("nowhere"), Some(b"one".to_vec()));
        assert!(read.cache.is_some());
        assert!(ReadResource::read(Map::new()).is_err());
    }
}
