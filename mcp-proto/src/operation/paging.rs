//! A listing's walk: the entries of its pages so far, their caching hints merged, the cursor
//! of the next page, and the rules that keep the walk bounded (no cursor twice, a page
//! ceiling).
//!
//! Plain state: it never builds a request or ends the operation; `answer` reads each page
//! into it and acts on what it says ([`PageEnd`]).

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::catalog::CacheHint;
use mcp_auth::{QUOTE_LIMIT, clip};

/// A listing's walk: the entries so far (verbatim), the pages' caching hints, and where the
/// next page starts.
#[derive(Debug, Default)]
pub(super) struct Paging {
    entries: Vec<Value>,
    cache: Option<CacheHint>,
    cursor: Option<String>,
    cursors_seen: HashSet<String>,
    pages: u32,
}

/// What a page says about the walk.
pub(super) enum PageEnd {
    /// No next cursor: the walk is over.
    Last(Vec<Value>, Option<CacheHint>),
    /// Another page follows.
    More,
    /// The server handed back a cursor it had already given.
    Repeated(String),
    /// The page ceiling was reached with a next page still announced.
    Ceiling,
}

impl Paging {
    /// The number of the page to ask for next (1-based).
    pub(super) fn next_page(&self) -> u32 {
        self.pages + 1
    }

    /// The params of the next `tools/list`.
    pub(super) fn params(&self) -> Map<String, Value> {
        match &self.cursor {
            Some(cursor) => match json!({ "cursor": cursor }) {
                Value::Object(params) => params,
                _ => Map::new(),
            },
            None => Map::new(),
        }
    }

    pub(super) fn take_page(
        &mut self,
        entries: Vec<Value>,
        result: &Map<String, Value>,
        ceiling: u32,
    ) -> PageEnd {
        self.entries.extend(entries);
        if let Some(hint) = CacheHint::of(result) {
            self.cache = Some(self.cache.map_or(hint, |cache| cache.merge(hint)));
        }
        self.pages += 1;
        let next_cursor = result.get("nextCursor").and_then(Value::as_str);
        let Some(cursor) = next_cursor.filter(|c| !c.is_empty()) else {
            return PageEnd::Last(std::mem::take(&mut self.entries), self.cache.take());
        };
        if !self.cursors_seen.insert(cursor.to_owned()) {
            return PageEnd::Repeated(clip(cursor, QUOTE_LIMIT));
        }
        if self.pages >= ceiling {
            return PageEnd::Ceiling;
        }
        self.cursor = Some(cursor.to_owned());
        PageEnd::More
    }
}
