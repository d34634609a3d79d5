//! A tool's `outputSchema`, compiled, and its `structuredContent` checked against it.
//!
//! What this module is: [`OutputSchema::compile`] takes the schema a server declared for a
//! tool, checks it against this client's bounds, and compiles it with the `jsonschema` crate;
//! [`OutputSchema::validate`] then checks a result's `structuredContent` and names the first
//! [`Mismatch`]: where in the instance (a JSON pointer), the schema keyword it broke, and the
//! crate's sentence for it, clipped. Nothing here knows about operations, sessions or eras:
//! wiring a check into a call is the caller's business.
//!
//! What it must never do:
//! * **Fetch anything.** JSON Schema 2020-12 is the default dialect, the one `$schema` names
//!   otherwise (draft-04, -06, -07, 2019-09, 2020-12); a `$ref` that leaves the schema's own
//!   document (an `http`, `https`, `file` or any other URI that is not a resource inside the
//!   schema) is [`SchemaError::ExternalRef`] at compile time. The crate is built without its
//!   HTTP and file resolvers, and the retriever given to it refuses every URI it is asked for.
//! * **Hang or panic on a hostile schema.** Before the crate sees a schema, its size is checked
//!   against the limits on [`OutputSchema`] ([`MAX_DEPTH`](OutputSchema::MAX_DEPTH),
//!   [`MAX_NODES`](OutputSchema::MAX_NODES), [`MAX_ENUM`](OutputSchema::MAX_ENUM),
//!   [`MAX_PATTERNS`](OutputSchema::MAX_PATTERNS),
//!   [`MAX_PATTERN_LEN`](OutputSchema::MAX_PATTERN_LEN)); a schema over one is a
//!   [`SchemaError`] naming it. Patterns are compiled by the `regex` crate (finite automata,
//!   linear in the input: no backtracking, so `(a+)+$` cannot be catastrophic; backreferences
//!   and lookaround are refused as a consequence) under
//!   [`REGEX_SIZE_LIMIT`](OutputSchema::REGEX_SIZE_LIMIT) for each compiled program and each
//!   lazy DFA.
//! * **Pass server text on unclipped.** Every string in a [`Mismatch`] or a [`SchemaError`]
//!   that came from the server (pointers, messages, references, dialects) is clipped with
//!   [`clip`] to [`QUOTE_LIMIT`] characters.
//!
//! # The work of a validation
//!
//! The crate offers no step budget for a validation and remembers no result, so a schema
//! within every size limit above can still make one check exponential: a chain of `$defs`
//! each `allOf` two `$ref`s to the one before costs 2^n evaluations on any value (n = 22:
//! 66 ms, doubling with every link); a recursive definition whose two `anyOf` branches both
//! recurse through `items` costs 2^depth on nested arrays (depth 22: 20 s). So the work is
//! counted before the check runs (the `work` part): at compile time the schema is read into a
//! graph of its subschemas, `$ref`s followed once as the crate resolves them; at validation,
//! a walk over the value counts every subschema applied to every value, every branch
//! included, with what grows with the value (a `pattern` on a long string, `uniqueItems` on a
//! large array). The count stops at [`MAX_WORK`](OutputSchema::MAX_WORK), and a value whose
//! check would pass it is a [`Mismatch`] of rule `work`, never checked. A call's check
//! is also held to what is left of its budget
//! ([`WORK_PER_MILLISECOND`](OutputSchema::WORK_PER_MILLISECOND)): a check that would outlast
//! it is not run either ([`OutputProblem::Unchecked`]). Measured (release
//! build, 2 cores): a check at the limit takes the crate 15-20 ms (the doubling chain) and
//! the count about as long; the count of a 2 MiB result of 60,000 small records, checked
//! within the limit, 17 ms beside the crate's 8 ms. The count recurses no deeper than the
//! crate would, and never past 512 nested applications; references that loop without
//! reaching into the value end it there. A `$dynamicRef` (or `$recursiveRef`) is counted as
//! applying its static target and every subschema carrying its anchor, wherever the dynamic
//! scope would take it.
//!
//! `format` is an annotation here in every dialect (the crate would otherwise assert it in
//! draft-04 to draft-07): the same schema gives the same answer whatever `$schema` says, and
//! no format check runs on the server's strings.

use std::sync::{Arc, Mutex, PoisonError};

use jsonschema::{PatternOptions, Retrieve, Uri, ValidationError, Validator};
use serde_json::Value;

use mcp_auth::{QUOTE_LIMIT, clip};

mod bounds;
mod output;
mod work;

use bounds::{check_bounds, too_deep};
pub(crate) use output::Declared;
pub use output::{OutputProblem, OutputValidation};
use work::{Exceeded, Work};

/// A tool's `outputSchema`, checked against this client's bounds and compiled: build it once
/// per tool, then [`validate`](Self::validate) each result's `structuredContent` with it.
///
/// ```
/// use mcp_proto::schema::OutputSchema;
/// use serde_json::json;
///
/// let schema = OutputSchema::compile(&json!({
///     "type": "object",
///     "properties": { "temperature": { "type": "number" } },
///     "required": ["temperature"],
/// }))?;
/// assert!(schema.validate(&json!({ "temperature": 21.5 })).is_ok());
///
/// let mismatch = schema.validate(&json!({ "temperature": "warm" })).unwrap_err();
/// assert_eq!(mismatch.instance_path, "/temperature");
/// assert_eq!(mismatch.rule, "type");
/// # Ok::<(), mcp_proto::schema::SchemaError>(())
/// ```
#[derive(Debug, Clone)]
pub struct OutputSchema {
    validator: Arc<Validator>,
    /// Its subschemas as a graph, to count a check's work before it is run.
    work: Arc<Work>,
}

/// Why a tool's `outputSchema` could not be compiled. Each variant names the limit or the
/// rule the schema broke; text from the schema is clipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    /// The schema nests objects and arrays deeper than [`OutputSchema::MAX_DEPTH`].
    #[error("the output schema nests deeper than {limit} levels")]
    TooDeep {
        /// The limit it went past ([`OutputSchema::MAX_DEPTH`]).
        limit: usize,
    },
    /// The schema holds more JSON values than [`OutputSchema::MAX_NODES`].
    #[error("the output schema holds more than {limit} JSON values")]
    TooLarge {
        /// The limit it went past ([`OutputSchema::MAX_NODES`]).
        limit: usize,
    },
    /// An `enum` of the schema lists more members than [`OutputSchema::MAX_ENUM`].
    #[error("an enum of the output schema lists {len} members, more than {limit}")]
    EnumTooLarge {
        /// How many members it lists.
        len: usize,
        /// The limit ([`OutputSchema::MAX_ENUM`]).
        limit: usize,
    },
    /// The schema has more `pattern`s and `patternProperties` keys than
    /// [`OutputSchema::MAX_PATTERNS`].
    #[error("the output schema has more than {limit} patterns")]
    TooManyPatterns {
        /// The limit it went past ([`OutputSchema::MAX_PATTERNS`]).
        limit: usize,
    },
    /// A `pattern` or `patternProperties` key is longer than
    /// [`OutputSchema::MAX_PATTERN_LEN`] bytes.
    #[error("a pattern of the output schema is {len} bytes long, more than {limit}")]
    PatternTooLong {
        /// Its length, in bytes.
        len: usize,
        /// The limit ([`OutputSchema::MAX_PATTERN_LEN`]).
        limit: usize,
    },
    /// A pattern the linear regex engine cannot compile: a syntax error, a backreference or a
    /// lookaround (which need backtracking), or a compiled program over
    /// [`OutputSchema::REGEX_SIZE_LIMIT`].
    #[error("a pattern of the output schema cannot be compiled within limits: {message}")]
    Pattern {
        /// The crate's sentence, clipped.
        message: String,
    },
    /// `$schema` names a dialect this client does not know (or is not a string).
    #[error("the output schema's $schema names a dialect this client does not know: {dialect}")]
    UnknownDialect {
        /// The value of `$schema`, clipped.
        dialect: String,
    },
    /// A `$ref` (or the `$schema` of an embedded resource) points outside the schema's own
    /// document. It is never fetched.
    #[error(
        "the output schema refers to {reference}, outside itself; references are never fetched"
    )]
    ExternalRef {
        /// The URI it resolved to, clipped.
        reference: String,
    },
    /// The schema is not a valid schema of its dialect (its meta-schema refuses it), or names
    /// something inside itself that is not there.
    #[error("the output schema is invalid at {schema_path} ({rule}): {message}")]
    Invalid {
        /// The JSON pointer, in the schema, of what is wrong (empty: the root), clipped.
        schema_path: String,
        /// The meta-schema keyword it broke (`type`, `minimum`, `$ref`, ...).
        rule: String,
        /// The crate's sentence, clipped.
        message: String,
    },
}

/// The first place where `structuredContent` does not match its tool's `outputSchema`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "structuredContent does not match the output schema at {} ({rule}): {message}",
    pointer_or_root(instance_path)
)]
pub struct Mismatch {
    /// The JSON pointer, in the instance, of the value that broke the rule (`/temperature`;
    /// empty: the whole instance), clipped.
    pub instance_path: String,
    /// The schema keyword it broke (`type`, `required`, `additionalProperties`, `enum`, ...),
    /// or `depth` when the instance nests deeper than [`OutputSchema::MAX_INSTANCE_DEPTH`].
    pub rule: String,
    /// One line that says what is wrong, clipped.
    pub message: String,
}

fn pointer_or_root(pointer: &str) -> &str {
    if pointer.is_empty() {
        "the root"
    } else {
        pointer
    }
}

impl OutputSchema {
    /// How deep a schema may nest objects and arrays (the root is level 1).
    pub const MAX_DEPTH: usize = 64;
    /// How many JSON values a schema may hold, counting every object, array, member value
    /// and array element (keys are not counted).
    pub const MAX_NODES: usize = 10_000;
    /// How many members one `enum` may list (wherever an `enum` member holds an array).
    pub const MAX_ENUM: usize = 1_000;
    /// How many patterns (`pattern` values and `patternProperties` keys) a schema may have.
    pub const MAX_PATTERNS: usize = 100;
    /// How long one pattern may be, in bytes.
    pub const MAX_PATTERN_LEN: usize = 1_000;
    /// The `regex` crate's limit on one pattern's compiled program, and on its lazy DFA's
    /// cache, in bytes: with [`MAX_PATTERNS`](Self::MAX_PATTERNS), at most 100 MiB for all
    /// patterns of one schema (the crate's defaults are 10 MiB and 2 MiB).
    pub const REGEX_SIZE_LIMIT: usize = 512 * 1024;
    /// How deep a `structuredContent` may nest before [`validate`](Self::validate) refuses it
    /// unchecked (`serde_json`'s own parsing limit is 128).
    pub const MAX_INSTANCE_DEPTH: usize = 128;
    /// The most work one [`validate`](Self::validate) may take, counted before the check
    /// runs, in steps: about one subschema applied to one value each (tens of nanoseconds),
    /// more for a `pattern` or a length on a long string, `uniqueItems` on a large array,
    /// `patternProperties` on many members; every branch of `anyOf` and `oneOf` counted. A
    /// value whose check would take more is a mismatch of rule `work`, not checked.
    pub const MAX_WORK: u64 = Work::LIMIT;
    /// The steps of a check (its count included) counted on per millisecond of what is left
    /// of an operation's budget: a tenth of what a release build does here (about 10 ns a
    /// step, measured at the limit), so a slow machine still ends the check in time. A call's
    /// result is checked with at most this many steps per millisecond left, plus the one unit
    /// of resolution the budget may overrun by; at the default resolution (a second) that is
    /// always the whole [`MAX_WORK`](Self::MAX_WORK).
    pub const WORK_PER_MILLISECOND: u64 = 10_000;

    /// The work a check may take when `time` is what it may last: at most
    /// [`MAX_WORK`](Self::MAX_WORK), and at least the steps of one millisecond.
    pub(crate) fn work_within(time: std::time::Duration) -> u64 {
        let millis = u64::try_from(time.as_millis()).unwrap_or(u64::MAX).max(1);
        millis
            .saturating_mul(Self::WORK_PER_MILLISECOND)
            .min(Self::MAX_WORK)
    }

    /// Checks `schema` against this client's bounds, then compiles it in the dialect its
    /// `$schema` names (JSON Schema 2020-12 when it names none).
    ///
    /// # Errors
    /// A [`SchemaError`] naming the limit the schema went past, the dialect that is unknown,
    /// the reference that leaves the schema (never fetched), or what makes it invalid.
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        check_bounds(schema)?;
        check_dialect(schema)?;
        let refused = Arc::new(Mutex::new(None));
        let patterns = PatternOptions::regex()
            .size_limit(Self::REGEX_SIZE_LIMIT)
            .dfa_size_limit(Self::REGEX_SIZE_LIMIT);
        let built = jsonschema::options()
            .with_retriever(Refuse {
                refused: Arc::clone(&refused),
            })
            .with_pattern_options(patterns)
            .should_validate_formats(false)
            .build(schema);
        match built {
            Ok(validator) => {
                let work = Work::plan(schema, dialect(schema)).map_err(|message| {
                    SchemaError::Invalid {
                        schema_path: String::new(),
                        rule: "$ref".to_owned(),
                        message: clip(&message, QUOTE_LIMIT),
                    }
                })?;
                Ok(Self {
                    validator: Arc::new(validator),
                    work: Arc::new(work),
                })
            }
            Err(error) => {
                let refused = refused
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                Err(compile_error(&error, refused))
            }
        }
    }

    /// Checks `instance` (a result's `structuredContent`) against the schema.
    ///
    /// # Errors
    /// The first [`Mismatch`]: where, which rule, and a clipped sentence. An instance nested
    /// deeper than [`MAX_INSTANCE_DEPTH`](Self::MAX_INSTANCE_DEPTH) is a mismatch of rule
    /// `depth`, without running the schema.
    pub fn validate(&self, instance: &Value) -> Result<(), Mismatch> {
        match self.validate_within(instance, Self::MAX_WORK) {
            Ok(()) => Ok(()),
            Err(Refusal::Mismatch(mismatch)) => Err(mismatch),
            // Given the whole limit, a check past it is a mismatch already; this is the same.
            Err(Refusal::Longer) => Err(self.too_much(Exceeded::Units)),
        }
    }

    /// [`validate`](Self::validate) with the check's work held to `work` steps (at most
    /// [`MAX_WORK`](Self::MAX_WORK)): a value whose check would take more than `work` but no
    /// more than the schema's own limit is [`Refusal::Longer`], not a mismatch.
    pub(crate) fn validate_within(&self, instance: &Value, work: u64) -> Result<(), Refusal> {
        if let Some(pointer) = too_deep(instance, Self::MAX_INSTANCE_DEPTH) {
            return Err(Refusal::Mismatch(Mismatch {
                instance_path: clip(&pointer, QUOTE_LIMIT),
                rule: "depth".to_owned(),
                message: format!(
                    "the value nests deeper than {} levels and was not checked",
                    Self::MAX_INSTANCE_DEPTH
                ),
            }));
        }
        match self.work.check(instance, work) {
            Ok(()) => {}
            Err(Exceeded::Units) if work < Self::MAX_WORK => return Err(Refusal::Longer),
            Err(exceeded) => return Err(Refusal::Mismatch(self.too_much(exceeded))),
        }
        self.validator.validate(instance).map_err(|error| {
            Refusal::Mismatch(Mismatch {
                instance_path: clip(error.instance_path().as_str(), QUOTE_LIMIT),
                rule: clip(error.kind().keyword(), QUOTE_LIMIT),
                message: clip(&error.to_string(), QUOTE_LIMIT),
            })
        })
    }

    /// The mismatch of rule `work`: checking the value would pass the schema's own limit.
    fn too_much(&self, exceeded: Exceeded) -> Mismatch {
        let message = match exceeded {
            Exceeded::Units => format!(
                "checking the value would take more than {} steps of the schema; it was not checked",
                Self::MAX_WORK
            ),
            Exceeded::Depth => format!(
                "checking the value would nest the schema's subschemas deeper than {} levels; it was not checked",
                Work::MAX_DEPTH
            ),
        };
        Mismatch {
            instance_path: String::new(),
            rule: "work".to_owned(),
            message,
        }
    }
}

/// Why [`OutputSchema::validate_within`] did not pass a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// It does not match, or its check would pass the schema's own limit.
    Mismatch(Mismatch),
    /// Its check would take more than the work it was given, though not more than the
    /// schema's own limit: the value is neither passed nor blamed.
    Longer,
}

/// The retriever the crate asks for any resource the schema does not hold: it refuses, and
/// keeps the first URI it was asked for so that the error can name it.
struct Refuse {
    refused: Arc<Mutex<Option<String>>>,
}

/// What [`Refuse`] answers the crate.
#[derive(Debug, thiserror::Error)]
#[error("references outside the output schema are never fetched")]
struct Refused;

impl Retrieve for Refuse {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let mut refused = self.refused.lock().unwrap_or_else(PoisonError::into_inner);
        if refused.is_none() {
            *refused = Some(clip(uri.as_str(), QUOTE_LIMIT));
        }
        Err(Box::new(Refused))
    }
}

/// The error for a schema the crate refused: a refused retrieval first (whatever error the
/// crate made of it), then a pattern, then the meta-schema's word.
fn compile_error(error: &ValidationError<'_>, refused: Option<String>) -> SchemaError {
    if let Some(reference) = refused {
        return SchemaError::ExternalRef { reference };
    }
    let message = clip(&error.to_string(), QUOTE_LIMIT);
    let rule = error.kind().keyword();
    // Where in the schema: the crate names the place it refused (its `instance_path`, the
    // schema being the instance of its meta-schema).
    let schema_path = error.instance_path().as_str();
    // A pattern the engine could not compile is a `format: regex` failure of a `pattern`
    // value or a `patternProperties` key.
    let mut segments = schema_path.rsplit('/');
    let (last, parent) = (segments.next(), segments.next());
    if rule == "format" && (last == Some("pattern") || parent == Some("patternProperties")) {
        return SchemaError::Pattern { message };
    }
    SchemaError::Invalid {
        schema_path: clip(schema_path, QUOTE_LIMIT),
        rule: clip(rule, QUOTE_LIMIT),
        message,
    }
}

/// Refuses a `$schema` (at the root) that names no dialect the crate has built in: the
/// crate would otherwise try to retrieve it as a custom meta-schema.
fn check_dialect(schema: &Value) -> Result<(), SchemaError> {
    let Some(dialect) = schema.as_object().and_then(|root| root.get("$schema")) else {
        return Ok(());
    };
    let known = dialect
        .as_str()
        .is_some_and(|uri| jsonschema::Draft::from_schema_uri(uri) != jsonschema::Draft::Unknown);
    if known {
        return Ok(());
    }
    let dialect = match dialect.as_str() {
        Some(uri) => clip(uri, QUOTE_LIMIT),
        None => clip(&dialect.to_string(), QUOTE_LIMIT),
    };
    Err(SchemaError::UnknownDialect { dialect })
}

#[cfg(test)]
mod tests;

/// The dialect `schema` is compiled in: the one its `$schema` names (known, as
/// [`check_dialect`] made sure), else JSON Schema 2020-12.
fn dialect(schema: &Value) -> jsonschema::Draft {
    schema
        .as_object()
        .and_then(|root| root.get("$schema"))
        .and_then(Value::as_str)
        .map_or(
            jsonschema::Draft::Draft202012,
            jsonschema::Draft::from_schema_uri,
        )
}
