//! The work of checking a value against a schema, counted before the check is done.
//!
//! What this part is: at compile time, [`Work::plan`] reads the schema into a graph of its
//! subschemas (each `$ref` followed once, as the `jsonschema` crate resolves it, with the
//! `referencing` crate it uses), noting for each subschema which others apply to the same
//! value (`allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else`, `dependentSchemas`,
//! `$ref`, ...) and which apply to the value's members and items. At validation time,
//! [`Work::check`] walks that graph over the instance and counts what the crate would do: one
//! unit per subschema applied to a value, more where a keyword's work grows with the value (a
//! `pattern` or a length on a long string, `uniqueItems` on a large array, `patternProperties`
//! on many members). The count is an upper bound: every branch is counted, as if none
//! short-circuited. A check whose count passes [`Work::LIMIT`] is not run.
//!
//! Why: the crate remembers no result, so a schema within every size limit can still make one
//! check exponential (a chain of `$defs` that each `allOf` two `$ref`s to the one before costs
//! 2^n). Counting first bounds the check whatever the schema: the count itself stops at the
//! limit, and needs no memory beyond its recursion, which is bounded by [`Work::MAX_DEPTH`].
//!
//! It must never compile, fetch or allocate per unit counted, and never recurse deeper than
//! [`Work::MAX_DEPTH`] (the crate's own recursion on the same value is no deeper).

use std::collections::HashMap;

use referencing::{Draft, Registry, Resolver, Retrieve, Uri};
use serde_json::Value;

/// The graph of a schema's subschemas, as the walk over an instance needs it.
#[derive(Debug)]
pub(super) struct Work {
    /// Node 0 is the schema's root.
    nodes: Vec<Node>,
}

/// One subschema: what applies where when it is applied to a value.
#[derive(Debug, Default)]
struct Node {
    /// Subschemas applied to the same value.
    in_place: Vec<u32>,
    /// `properties`, by key (sorted): applied to the member of that key.
    properties: Vec<(String, u32)>,
    /// Applied to every member (`patternProperties`' values, `additionalProperties`,
    /// `unevaluatedProperties`): every one counted for every member.
    members: Vec<u32>,
    /// `propertyNames`: applied to every key.
    names: Vec<u32>,
    /// Applied to the item at its index (`prefixItems`, an array `items`).
    prefix: Vec<u32>,
    /// Applied to every item (`items`, `additionalItems`, `unevaluatedItems`, `contains`).
    items: Vec<u32>,
    /// `pattern`, `minLength` or `maxLength`: work that grows with a string's length.
    strings: bool,
    /// `uniqueItems`: work that grows with an array's values (each hashed).
    unique: bool,
    /// How many `patternProperties` patterns each member's key is matched against.
    key_patterns: u32,
    /// The units one application costs before what it applies: one, plus one per entry of
    /// each keyword (a `required` name, an `enum` or `const` value, a `properties` entry, a
    /// branch of `anyOf`...), which the crate goes through on every application.
    weight: u32,
}

/// Why a check was not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Exceeded {
    /// Its count passed the limit it was given ([`Work::LIMIT`] at most).
    Units,
    /// Subschemas applied inside each other deeper than [`Work::MAX_DEPTH`].
    Depth,
}

/// A string's length (in bytes) that counts as one unit of a `pattern`'s or a length's work.
const BYTES_PER_UNIT: u64 = 64;

impl Work {
    /// The most units one check may take. One unit is about one subschema applied to one value
    /// (tens of nanoseconds in a release build): the limit keeps a check well under a second,
    /// while a 2 MiB result (the default body cap) of small records checked against their
    /// schema stays under it.
    pub(super) const LIMIT: u64 = 4_000_000;
    /// How deep applications may nest (subschemas in place, plus one per level of the value).
    pub(super) const MAX_DEPTH: u32 = 512;

    /// Reads `schema` (which the crate compiled, so every reference in it resolves inside it)
    /// into its graph, `draft` being the dialect it was compiled in. `Err` says which
    /// reference could not be followed.
    pub(super) fn plan(schema: &Value, draft: Draft) -> Result<Self, String> {
        let base = schema
            .as_object()
            .and_then(|root| root.get(draft.id_keyword()))
            .and_then(Value::as_str)
            .unwrap_or("json-schema:///");
        let base_uri = referencing::uri::from_str(base).map_err(|error| error.to_string())?;
        let registry = Registry::new()
            .retriever(Nothing)
            .draft(draft)
            .retrieve_known_draft_meta_schemas(false)
            .add(base_uri.as_str(), draft.create_resource_ref(schema))
            .and_then(referencing::RegistryBuilder::prepare)
            .map_err(|error| error.to_string())?;
        let mut planner = Planner {
            draft,
            nodes: Vec::new(),
            seen: HashMap::new(),
            pending: Vec::new(),
            dynamic: Vec::new(),
        };
        let root = registry.resolver(base_uri);
        planner.intern(schema, root.clone());
        loop {
            while let Some((index, value, resolver)) = planner.pending.pop() {
                planner.read(index, value, &resolver)?;
            }
            // A dynamic reference may land on any subschema that carries its anchor (which
            // one depends on the path taken): each is counted as a target.
            let Some((index, anchor)) = planner.dynamic.pop() else {
                break;
            };
            let mut targets = Vec::new();
            anchored(schema, &anchor, &mut targets);
            for target in targets {
                let target = planner.intern(target, root.clone());
                if let Some(node) = planner.nodes.get_mut(index as usize) {
                    if target != index {
                        node.in_place.push(target);
                    }
                }
            }
        }
        let mut nodes = planner.nodes;
        for node in &mut nodes {
            node.properties.sort_by(|a, b| a.0.cmp(&b.0));
        }
        Ok(Self { nodes })
    }

    /// Counts the work of checking `instance`, stopping at `limit` units (never more than
    /// [`Work::LIMIT`]).
    pub(super) fn check(&self, instance: &Value, limit: u64) -> Result<(), Exceeded> {
        let mut walk = Walk {
            work: self,
            spent: 0,
            limit: limit.min(Self::LIMIT),
        };
        walk.apply(0, Instance::Value(instance), 0)
    }
}

/// The retriever of the plan's registry: the schema was compiled already, so nothing outside
/// it is needed, and nothing is ever fetched.
struct Nothing;

impl Retrieve for Nothing {
    fn retrieve(
        &self,
        _uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err("references outside the output schema are never fetched".into())
    }
}

/// The graph being read: a node per subschema (by address), those still to read.
struct Planner<'a> {
    draft: Draft,
    nodes: Vec<Node>,
    seen: HashMap<*const Value, u32>,
    pending: Vec<(u32, &'a Value, Resolver<'a>)>,
    /// Nodes with a dynamic reference, and the anchor it names.
    dynamic: Vec<(u32, Anchor)>,
}

/// What a dynamic reference may land on besides its static target.
enum Anchor {
    /// `$dynamicRef`: every subschema whose `$dynamicAnchor` is this name.
    Dynamic(String),
    /// `$recursiveRef`: every subschema with `$recursiveAnchor: true`.
    Recursive,
}

impl<'a> Planner<'a> {
    /// The node of the subschema `value`, made (and queued to be read) the first time.
    fn intern(&mut self, value: &'a Value, resolver: Resolver<'a>) -> u32 {
        let address: *const Value = value;
        if let Some(&index) = self.seen.get(&address) {
            return index;
        }
        let index = u32::try_from(self.nodes.len()).unwrap_or(u32::MAX);
        self.nodes.push(Node::default());
        self.seen.insert(address, index);
        self.pending.push((index, value, resolver));
        index
    }

    /// Reads the keywords of the subschema `value` into its node.
    fn read(
        &mut self,
        index: u32,
        value: &'a Value,
        resolver: &Resolver<'a>,
    ) -> Result<(), String> {
        let Value::Object(keywords) = value else {
            return Ok(());
        };
        // A subschema with an id is a resource of its own: its references resolve against it.
        let resolver = if keywords.contains_key(self.draft.id_keyword()) {
            resolver
                .in_subresource(self.draft.create_resource_ref(value))
                .map_err(|error| error.to_string())?
        } else {
            resolver.clone()
        };
        let mut node = Node::default();
        let mut weight = 1usize;
        for (keyword, member) in keywords {
            match (keyword.as_str(), member) {
                ("allOf" | "anyOf" | "oneOf", Value::Array(branches)) => {
                    for branch in branches {
                        node.in_place.push(self.intern(branch, resolver.clone()));
                    }
                }
                ("not" | "if" | "then" | "else", _) => {
                    node.in_place.push(self.intern(member, resolver.clone()));
                }
                ("dependentSchemas" | "dependencies", Value::Object(schemas)) => {
                    for schema in schemas.values().filter(|s| is_schema(s)) {
                        node.in_place.push(self.intern(schema, resolver.clone()));
                    }
                }
                ("$ref" | "$dynamicRef", Value::String(reference)) => {
                    let target = self.follow(reference, &resolver)?;
                    // A reference to itself applies nothing (the crate compiles it to `true`).
                    if target != index {
                        node.in_place.push(target);
                    }
                    if keyword == "$dynamicRef" {
                        let name = reference.rsplit_once('#').map_or("", |(_, name)| name);
                        self.dynamic.push((index, Anchor::Dynamic(name.to_owned())));
                    }
                }
                ("$recursiveRef", Value::String(_)) => {
                    let target = self.follow("#", &resolver)?;
                    if target != index {
                        node.in_place.push(target);
                    }
                    self.dynamic.push((index, Anchor::Recursive));
                }
                ("properties", Value::Object(properties)) => {
                    for (name, schema) in properties {
                        let child = self.intern(schema, resolver.clone());
                        node.properties.push((name.clone(), child));
                    }
                }
                ("patternProperties", Value::Object(patterns)) => {
                    node.key_patterns = u32::try_from(patterns.len()).unwrap_or(u32::MAX);
                    for schema in patterns.values() {
                        node.members.push(self.intern(schema, resolver.clone()));
                    }
                }
                ("additionalProperties" | "unevaluatedProperties", _) => {
                    node.members.push(self.intern(member, resolver.clone()));
                }
                ("propertyNames", _) => node.names.push(self.intern(member, resolver.clone())),
                ("prefixItems" | "items", Value::Array(positional)) => {
                    for schema in positional {
                        node.prefix.push(self.intern(schema, resolver.clone()));
                    }
                }
                ("items" | "additionalItems" | "unevaluatedItems" | "contains", _) => {
                    node.items.push(self.intern(member, resolver.clone()));
                }
                ("pattern" | "minLength" | "maxLength", _) => node.strings = true,
                ("uniqueItems", Value::Bool(true)) => node.unique = true,
                _ => {}
            }
            // Every keyword is gone through on every application, entry by entry.
            let entries = match (keyword.as_str(), member) {
                ("$defs" | "definitions", _) => 0,
                (
                    "required" | "enum" | "const" | "type" | "dependentRequired" | "dependencies",
                    _,
                ) => size(member),
                (keyword, Value::Object(entries)) if holds_schemas(keyword) => entries.len(),
                (keyword, Value::Array(entries)) if holds_schemas(keyword) => entries.len(),
                _ => 1,
            };
            weight = weight.saturating_add(entries);
        }
        node.weight = u32::try_from(weight).unwrap_or(u32::MAX);
        if let Some(slot) = self.nodes.get_mut(index as usize) {
            *slot = node;
        }
        Ok(())
    }

    /// The node a reference leads to, as the crate's resolver finds it.
    fn follow(&mut self, reference: &str, resolver: &Resolver<'a>) -> Result<u32, String> {
        let resolved = resolver
            .lookup(reference)
            .map_err(|error| format!("the reference {reference:?} cannot be followed: {error}"))?;
        let (contents, resolver, _) = resolved.into_inner();
        Ok(self.intern(contents, resolver))
    }
}

/// Whether `keyword` holds subschemas: one unit per entry (what each applies is counted where
/// it is applied).
fn holds_schemas(keyword: &str) -> bool {
    matches!(
        keyword,
        "allOf"
            | "anyOf"
            | "oneOf"
            | "properties"
            | "patternProperties"
            | "dependentSchemas"
            | "prefixItems"
            | "items"
    )
}

/// Every object in `value` that carries `anchor`, wherever it sits (the schema's depth is
/// bounded before it is planned).
fn anchored<'a>(value: &'a Value, anchor: &Anchor, found: &mut Vec<&'a Value>) {
    match value {
        Value::Object(members) => {
            let carries = match anchor {
                Anchor::Dynamic(name) => {
                    members.get("$dynamicAnchor").and_then(Value::as_str) == Some(name.as_str())
                }
                Anchor::Recursive => members.get("$recursiveAnchor") == Some(&Value::Bool(true)),
            };
            if carries {
                found.push(value);
            }
            members
                .values()
                .for_each(|member| anchored(member, anchor, found));
        }
        Value::Array(items) => items.iter().for_each(|item| anchored(item, anchor, found)),
        _ => {}
    }
}

/// Whether a member of `dependencies` is a schema (not a list of property names).
fn is_schema(value: &Value) -> bool {
    matches!(value, Value::Object(_) | Value::Bool(_))
}

/// How many JSON values `value` holds, itself included.
fn size(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(size).sum::<usize>(),
        Value::Object(members) => 1 + members.values().map(size).sum::<usize>(),
        _ => 1,
    }
}

/// What a subschema is applied to: a value of the instance, or a member's key
/// (`propertyNames`), of which only its length matters here.
#[derive(Clone, Copy)]
enum Instance<'i> {
    Value(&'i Value),
    Key(usize),
}

/// One count in progress.
struct Walk<'w> {
    work: &'w Work,
    spent: u64,
    /// Where the count stops.
    limit: u64,
}

impl Walk<'_> {
    fn charge(&mut self, units: u64) -> Result<(), Exceeded> {
        self.spent = self.spent.saturating_add(units);
        if self.spent > self.limit {
            return Err(Exceeded::Units);
        }
        Ok(())
    }

    /// Counts node `index` applied to `instance`, and everything it applies.
    fn apply(&mut self, index: u32, instance: Instance<'_>, depth: u32) -> Result<(), Exceeded> {
        if depth > Work::MAX_DEPTH {
            return Err(Exceeded::Depth);
        }
        let Some(node) = self.work.nodes.get(index as usize) else {
            return Ok(());
        };
        self.charge(u64::from(node.weight))?;
        let string_len = match instance {
            Instance::Key(len) => Some(len),
            Instance::Value(Value::String(text)) => Some(text.len()),
            Instance::Value(_) => None,
        };
        if let (true, Some(len)) = (node.strings, string_len) {
            self.charge(len as u64 / BYTES_PER_UNIT)?;
        }
        for &other in &node.in_place {
            self.apply(other, instance, depth + 1)?;
        }
        match instance {
            Instance::Value(Value::Object(members)) => {
                for (key, member) in members {
                    let keyed = node
                        .properties
                        .binary_search_by(|(name, _)| name.as_str().cmp(key))
                        .ok()
                        .and_then(|at| node.properties.get(at))
                        .map(|&(_, child)| child);
                    if node.key_patterns > 0 {
                        let bytes = key.len() as u64 / BYTES_PER_UNIT + 1;
                        self.charge(u64::from(node.key_patterns).saturating_mul(bytes))?;
                    }
                    for child in keyed.into_iter().chain(node.members.iter().copied()) {
                        self.apply(child, Instance::Value(member), depth + 1)?;
                    }
                    for &child in &node.names {
                        self.apply(child, Instance::Key(key.len()), depth + 1)?;
                    }
                }
            }
            Instance::Value(Value::Array(items)) => {
                if node.unique {
                    self.charge(size_within(items, self.limit.saturating_sub(self.spent)))?;
                }
                for (at, item) in items.iter().enumerate() {
                    let positional = node.prefix.get(at).copied();
                    for child in positional.into_iter().chain(node.items.iter().copied()) {
                        self.apply(child, Instance::Value(item), depth + 1)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// The values in `items`, counted only as far as `cap` (past it, `cap + 1`). Recurses as deep
/// as the instance nests, which [`OutputSchema::validate`](super::OutputSchema::validate)
/// bounds before any count.
fn size_within(items: &[Value], cap: u64) -> u64 {
    fn count(value: &Value, total: &mut u64, cap: u64) {
        *total += 1;
        if *total > cap {
            return;
        }
        match value {
            Value::Array(inner) => inner.iter().for_each(|v| count(v, total, cap)),
            Value::Object(members) => members.values().for_each(|v| count(v, total, cap)),
            _ => {}
        }
    }
    let mut total = 0;
    for item in items {
        count(item, &mut total, cap);
        if total > cap {
            break;
        }
    }
    total
}
