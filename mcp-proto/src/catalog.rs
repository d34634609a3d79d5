//! What a server offers: tools, resources, resource templates and prompts, and the listings of
//! all four with the caching hints the modern era attaches to them.
//!
//! Every entry keeps the server's object whole and verbatim in `raw` (schemas,
//! annotations, `_meta`, fields of later revisions); the accessors only read from it. Nothing
//! here follows a URI or dereferences a schema.

use std::ops::Deref;
use std::time::Duration;

use serde_json::{Map, Value};

/// Which listing a walk reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    ResourceTemplates,
    /// `prompts/list`.
    Prompts,
    /// `skills/list` (the skills extension).
    Skills,
}

impl ListKind {
    /// The JSON-RPC method.
    pub const fn method(self) -> &'static str {
        match self {
            Self::Tools => "tools/list",
            Self::Resources => "resources/list",
            Self::ResourceTemplates => "resources/templates/list",
            Self::Prompts => "prompts/list",
            Self::Skills => "skills/list",
        }
    }

    /// The result's array member.
    pub const fn member(self) -> &'static str {
        match self {
            Self::Tools => "tools",
            Self::Resources => "resources",
            Self::ResourceTemplates => "resourceTemplates",
            Self::Prompts => "prompts",
            Self::Skills => "skills",
        }
    }
}

/// Who may keep a cached result (`cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CacheScope {
    /// Any cache, shared by any user.
    Public,
    /// Only for the same authorization context.
    Private,
}

/// The caching hints of a modern result (`ttlMs`, `cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheHint {
    /// How long the result may be considered fresh after it was received (a negative or
    /// missing `ttlMs` is zero: immediately stale).
    pub ttl: Duration,
    /// Who may keep it, when the server said.
    pub scope: Option<CacheScope>,
}

impl CacheHint {
    /// The hints of a result; `None` when it carries neither.
    pub(crate) fn of(result: &Map<String, Value>) -> Option<Self> {
        let ttl = result.get("ttlMs");
        let scope = match result.get("cacheScope").and_then(Value::as_str) {
            Some("public") => Some(CacheScope::Public),
            Some("private") => Some(CacheScope::Private),
            _ => None,
        };
        if ttl.is_none() && scope.is_none() {
            return None;
        }
        let millis = ttl.and_then(Value::as_u64).unwrap_or(0);
        Some(Self {
            ttl: Duration::from_millis(millis),
            scope,
        })
    }

    /// The hints of a walk of several pages: the shortest freshness, and private if any page
    /// was.
    pub(crate) fn merge(self, other: Self) -> Self {
        let scope = match (self.scope, other.scope) {
            (Some(CacheScope::Private), _) | (_, Some(CacheScope::Private)) => {
                Some(CacheScope::Private)
            }
            (Some(scope), _) | (_, Some(scope)) => Some(scope),
            (None, None) => None,
        };
        Self {
            ttl: self.ttl.min(other.ttl),
            scope,
        }
    }
}

/// Every entry of every page of a listing, in order, with the walk's caching hints.
///
/// It dereferences to a slice of its entries, so `listing.len()`, `listing[0]` and
/// `for entry in &listing` work as on a `Vec`.
#[derive(Debug, Clone, PartialEq)]
pub struct Listing<T> {
    /// The entries.
    pub items: Vec<T>,
    /// The hints (modern era; `None` when no page carried any). For a walk of several
    /// pages: the shortest `ttlMs` and the narrowest `cacheScope` of them.
    pub cache: Option<CacheHint>,
}

impl<T> Listing<T> {
    /// The entries, without the hints.
    pub fn into_items(self) -> Vec<T> {
        self.items
    }
}

impl<T> Deref for Listing<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.items
    }
}

impl<T> IntoIterator for Listing<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a, T> IntoIterator for &'a Listing<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

/// An entry of a listing, read from the server's object.
pub(crate) trait Entry: Sized {
    /// `None` for an entry that is not an object with its identifying string member (such
    /// entries are dropped).
    fn from_entry(entry: Value) -> Option<Self>;
}

/// One tool from `tools/list`.
///
/// The entry is kept whole and verbatim in `raw` (schemas included, never copied, never
/// dereferenced); the accessors read from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// The name to call it by.
    pub name: String,
    /// The whole entry as the server sent it.
    pub raw: Map<String, Value>,
}

impl Tool {
    /// The human-readable title, when given.
    pub fn title(&self) -> Option<&str> {
        text(&self.raw, "title")
    }

    /// The description, when given.
    pub fn description(&self) -> Option<&str> {
        text(&self.raw, "description")
    }

    /// `inputSchema`, verbatim (`Null` when missing).
    pub fn input_schema(&self) -> &Value {
        self.raw.get("inputSchema").unwrap_or(&Value::Null)
    }

    /// `outputSchema`, verbatim, when given.
    pub fn output_schema(&self) -> Option<&Value> {
        self.raw.get("outputSchema")
    }

    /// Whether the tool runs as a task (`execution.taskSupport`, 2025-11-25; forbidden when
    /// the listing says nothing).
    pub fn task_support(&self) -> crate::task::TaskSupport {
        crate::task::TaskSupport::of_tool(&self.raw)
    }
}

impl Entry for Tool {
    fn from_entry(entry: Value) -> Option<Self> {
        keyed(entry, "name").map(|(name, raw)| Self { name, raw })
    }
}

/// Reads `member` of an object entry as a string.
pub(crate) fn keyed(entry: Value, member: &str) -> Option<(String, Map<String, Value>)> {
    let Value::Object(raw) = entry else {
        return None;
    };
    let key = raw.get(member).and_then(Value::as_str)?.to_owned();
    Some((key, raw))
}

fn text<'a>(raw: &'a Map<String, Value>, member: &str) -> Option<&'a str> {
    raw.get(member).and_then(Value::as_str)
}

/// One resource from `resources/list`.
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    /// Its URI, as the server wrote it (what a read of it names).
    pub uri: String,
    /// The whole entry as the server sent it.
    pub raw: Map<String, Value>,
}

impl Resource {
    /// `name`, when given.
    pub fn name(&self) -> Option<&str> {
        text(&self.raw, "name")
    }

    /// `mimeType`, when given.
    pub fn mime_type(&self) -> Option<&str> {
        text(&self.raw, "mimeType")
    }

    /// `description`, when given.
    pub fn description(&self) -> Option<&str> {
        text(&self.raw, "description")
    }
}

impl Entry for Resource {
    fn from_entry(entry: Value) -> Option<Self> {
        keyed(entry, "uri").map(|(uri, raw)| Self { uri, raw })
    }
}

/// One template from `resources/templates/list`.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceTemplate {
    /// The RFC 6570 URI template, verbatim.
    pub uri_template: String,
    /// The whole entry as the server sent it.
    pub raw: Map<String, Value>,
}

impl ResourceTemplate {
    /// `name`, when given.
    pub fn name(&self) -> Option<&str> {
        text(&self.raw, "name")
    }
}

impl Entry for ResourceTemplate {
    fn from_entry(entry: Value) -> Option<Self> {
        keyed(entry, "uriTemplate").map(|(uri_template, raw)| Self { uri_template, raw })
    }
}

/// One prompt from `prompts/list`.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    /// The name to get it by.
    pub name: String,
    /// The whole entry as the server sent it.
    pub raw: Map<String, Value>,
}

impl Prompt {
    /// `description`, when given.
    pub fn description(&self) -> Option<&str> {
        text(&self.raw, "description")
    }

    /// `arguments`, verbatim (`Null` when missing).
    pub fn arguments(&self) -> &Value {
        self.raw.get("arguments").unwrap_or(&Value::Null)
    }
}

impl Entry for Prompt {
    fn from_entry(entry: Value) -> Option<Self> {
        keyed(entry, "name").map(|(name, raw)| Self { name, raw })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    #[test]
    fn hints_are_read_leniently_and_merged_to_the_narrowest() {
        assert_eq!(CacheHint::of(&obj(json!({"tools": []}))), None);
        let public = CacheHint::of(&obj(json!({"ttlMs": 60000, "cacheScope": "public"}))).unwrap();
        assert_eq!(public.ttl, Duration::from_secs(60));
        assert_eq!(public.scope, Some(CacheScope::Public));
        let negative = CacheHint::of(&obj(json!({"ttlMs": -5}))).unwrap();
        assert_eq!(negative.ttl, Duration::ZERO);
        let private = CacheHint::of(&obj(json!({"ttlMs": 1000, "cacheScope": "private"}))).unwrap();
        assert_eq!(
            public.merge(private),
            CacheHint {
                ttl: Duration::from_secs(1),
                scope: Some(CacheScope::Private)
            }
        );
    }

    #[test]
    fn entries_without_their_key_are_dropped() {
        // As the reference client drops entries that are not objects.
        assert!(Tool::from_entry(json!("echo")).is_none());
        assert!(Tool::from_entry(json!({"description": "x"})).is_none());
        assert_eq!(
            Tool::from_entry(json!({"name": "echo"})).unwrap().name,
            "echo"
        );
        assert!(Resource::from_entry(json!({"name": "x"})).is_none());
        assert!(ResourceTemplate::from_entry(json!({"uriTemplate": 5})).is_none());
        assert_eq!(Prompt::from_entry(json!({"name": "p"})).unwrap().name, "p");
    }
}
