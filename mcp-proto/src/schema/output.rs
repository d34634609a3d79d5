//! A tool's result held to the promise of its `outputSchema`: what a session keeps of each
//! tool's declaration, when the caller wants results checked, and what breaks the promise.
//!
//! What this part is: [`Declared`] (a tool's schema as a listing gave it, compiled on the
//! first result that needs it and kept for the session's later calls), [`OutputValidation`]
//! (the caller's choice, in [`SessionConfig`](crate::SessionConfig)) and [`OutputProblem`]
//! (why a result is refused). It must never decide when a listing is walked (the operation
//! does, inside its budget) nor drop a result: a refused result travels in the error.

use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use super::{Mismatch, OutputSchema, Refusal, SchemaError};
use crate::deadline::format_seconds;
use crate::model::CallToolResult;

/// When a tool's result is checked against its `outputSchema`
/// ([`SessionConfig::with_output_validation`](crate::SessionConfig::with_output_validation)).
///
/// A checked result that breaks its tool's promise ends the call with
/// [`Error::OutputInvalid`](crate::Error::OutputInvalid), which still holds the result. A
/// result the tool marked `isError` is never checked: it is a failure report, not output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputValidation {
    /// Never: `structuredContent` is handed over as the server sent it.
    Off,
    /// When the session knows the tool's schema from a tools listing it already read (the
    /// default): a call costs no leg more than it would unchecked.
    #[default]
    WhenListed,
    /// Always: a call on a session that has read no tools listing walks it first, inside the
    /// same budget (its legs are the operation's, and the trace shows them).
    Always,
}

impl OutputValidation {
    /// Whether results are checked at all.
    pub fn is_on(self) -> bool {
        self != Self::Off
    }
}

/// Why a tool's result was refused: what the tool declared and what it returned disagree.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OutputProblem {
    /// The tool declares an `outputSchema` and the result (not `isError`) carries no
    /// `structuredContent`.
    #[error("carries no structuredContent, though the tool declares an outputSchema")]
    Missing,
    /// `structuredContent` does not match the schema: the first place where it does not.
    #[error(
        "has structuredContent that does not match the output schema at {} ({}): {}",
        super::pointer_or_root(&.0.instance_path),
        .0.rule,
        .0.message
    )]
    Mismatch(Mismatch),
    /// The tool's `outputSchema` itself cannot be used: over a bound, in an unknown dialect,
    /// invalid, or referring outside itself (never fetched).
    #[error("cannot be checked: {0}")]
    Schema(SchemaError),
    /// Checking `structuredContent` would take longer than what was left of the operation's
    /// budget (with the one unit it may overrun by), so it was neither checked nor blamed:
    /// the budget's end, not the server's fault. A longer budget checks it.
    #[error(
        "has structuredContent that could not be checked in the {} s left of the budget",
        format_seconds(*.left)
    )]
    Unchecked {
        /// What was left of the budget (with its one unit of overrun) when the result came.
        left: Duration,
    },
}

/// A tool's `outputSchema` as a listing declared it, compiled once, on the first result
/// that is checked against it.
#[derive(Debug)]
pub(crate) struct Declared {
    raw: Value,
    compiled: OnceLock<Result<OutputSchema, SchemaError>>,
}

impl Declared {
    /// The schema a listing gave for one tool.
    pub(crate) fn new(raw: Value) -> Self {
        Self {
            raw,
            compiled: OnceLock::new(),
        }
    }

    /// Checks `result` against the declaration: `Ok` for an `isError` result, a result whose
    /// `structuredContent` matches, and nothing else. The check lasts no longer than `left`
    /// (what the budget has left), counted in [`OutputSchema::WORK_PER_MILLISECOND`].
    pub(crate) fn check(
        &self,
        result: &CallToolResult,
        left: Duration,
    ) -> Result<(), OutputProblem> {
        if result.is_error {
            return Ok(());
        }
        let schema = self
            .compiled
            .get_or_init(|| OutputSchema::compile(&self.raw))
            .as_ref()
            .map_err(|error| OutputProblem::Schema(error.clone()))?;
        let Some(structured) = &result.structured_content else {
            return Err(OutputProblem::Missing);
        };
        let work = OutputSchema::work_within(left);
        schema
            .validate_within(structured, work)
            .map_err(|refusal| match refusal {
                Refusal::Mismatch(mismatch) => OutputProblem::Mismatch(mismatch),
                Refusal::Longer => OutputProblem::Unchecked { left },
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const SECOND: Duration = Duration::from_secs(1);

    fn result(raw: Value) -> CallToolResult {
        let Value::Object(raw) = raw else {
            panic!("not an object")
        };
        CallToolResult::from_result(raw).expect("a result")
    }

    fn weather() -> Declared {
        Declared::new(json!({
            "type": "object",
            "properties": { "temperature": { "type": "number" } },
            "required": ["temperature"],
        }))
    }

    #[test]
    fn a_matching_result_passes_and_a_mismatch_names_where() {
        let declared = weather();
        let good = result(json!({ "content": [], "structuredContent": { "temperature": 3 } }));
        assert_eq!(declared.check(&good, SECOND), Ok(()));
        let bad = result(json!({ "content": [], "structuredContent": { "temperature": "x" } }));
        let Err(OutputProblem::Mismatch(mismatch)) = declared.check(&bad, SECOND) else {
            panic!("not a mismatch")
        };
        assert_eq!(mismatch.instance_path, "/temperature");
        assert_eq!(mismatch.rule, "type");
        let problem = declared.check(&bad, SECOND).unwrap_err().to_string();
        assert!(
            problem.starts_with(
                "has structuredContent that does not match the output schema at /temperature (type): "
            ),
            "{problem}"
        );
    }

    #[test]
    fn a_missing_structured_content_is_refused_unless_the_tool_failed() {
        let declared = weather();
        let plain = result(json!({ "content": [{ "type": "text", "text": "3" }] }));
        assert_eq!(declared.check(&plain, SECOND), Err(OutputProblem::Missing));
        let failed = result(json!({ "content": [], "isError": true }));
        assert_eq!(declared.check(&failed, SECOND), Ok(()));
    }

    #[test]
    fn a_schema_that_cannot_compile_refuses_every_result_the_same_way() {
        let declared = Declared::new(json!({ "$ref": "https://example.com/schema.json" }));
        let any = result(json!({ "content": [], "structuredContent": {} }));
        let first = declared.check(&any, SECOND);
        assert!(
            matches!(
                &first,
                Err(OutputProblem::Schema(SchemaError::ExternalRef { .. }))
            ),
            "{first:?}"
        );
        assert_eq!(declared.check(&any, SECOND), first);
    }

    #[test]
    fn a_check_longer_than_what_is_left_is_neither_run_nor_blamed() {
        // 100,000 numbers, each held to `type`: about 200,000 steps, well inside the schema's
        // own limit, and more than the 20,000 two milliseconds allow.
        let declared = Declared::new(json!({
            "type": "object",
            "properties": { "readings": { "type": "array", "items": { "type": "number" } } },
        }));
        let readings: Vec<u32> = (0..100_000).collect();
        let big = result(json!({ "content": [], "structuredContent": { "readings": readings } }));
        let left = Duration::from_millis(2);
        assert_eq!(
            declared.check(&big, left),
            Err(OutputProblem::Unchecked { left })
        );
        assert_eq!(
            declared.check(&big, left).unwrap_err().to_string(),
            "has structuredContent that could not be checked in the 0.002 s left of the budget"
        );
        assert_eq!(declared.check(&big, SECOND), Ok(()));
        // A small result is checked in any time at all.
        let small = result(json!({ "content": [], "structuredContent": { "readings": [1, 2] } }));
        assert_eq!(declared.check(&small, Duration::ZERO), Ok(()));
    }

    #[test]
    fn the_work_a_check_may_take_follows_the_time_it_may_last() {
        assert_eq!(OutputSchema::work_within(Duration::ZERO), 10_000);
        assert_eq!(OutputSchema::work_within(Duration::from_millis(3)), 30_000);
        assert_eq!(OutputSchema::work_within(SECOND), OutputSchema::MAX_WORK);
        assert_eq!(
            OutputSchema::work_within(Duration::MAX),
            OutputSchema::MAX_WORK
        );
    }
}
