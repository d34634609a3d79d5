//! A tool's `outputSchema` and its `structuredContent`, both the server's: compiled and
//! checked by `mcp-proto`'s [`OutputSchema`].
//!
//! Both halves are hostile input: a schema may be deep, huge, recursive, full of patterns
//! that backtrack or references that leave it; an instance may be anything. This module must
//! never fetch, spawn or wait: it calls [`OutputSchema::compile`] and
//! [`OutputSchema::validate`] and checks what they answer.

use mcp_auth::QUOTE_LIMIT;
use mcp_proto::schema::{Mismatch, OutputSchema, SchemaError};
use serde_json::Value;

/// Compiles a schema and validates an instance against it.
///
/// Layout: the schema's JSON text, a NUL byte, the instance's JSON text. Without a NUL the
/// whole input is the schema and it is validated against itself. Either half that is not JSON
/// (by `serde_json`, with its default nesting limit of 128) ends the run: only schemas and
/// instances a client could have parsed are of interest.
///
/// Invariants: no panic (and no stack overflow, no hang: libFuzzer's `-timeout`) in compiling
/// or validating; compiling and validating twice give the same answer; every error is one
/// clipped line; a mismatch's `instance_path` is empty or a JSON pointer (`/...`), names a
/// value of the instance when it was not clipped, and its rule is a keyword (or `depth`); the
/// limits the error names are the ones [`OutputSchema`] publishes.
pub fn schema(data: &[u8]) {
    let (schema_text, instance_text) = match data.iter().position(|&b| b == 0) {
        Some(nul) => (&data[..nul], &data[nul + 1..]),
        None => (data, data),
    };
    let Ok(schema) = serde_json::from_slice::<Value>(schema_text) else {
        return;
    };
    let Ok(instance) = serde_json::from_slice::<Value>(instance_text) else {
        return;
    };
    let compiled = OutputSchema::compile(&schema);
    let again = OutputSchema::compile(&schema);
    assert_eq!(
        compiled.as_ref().err(),
        again.as_ref().err(),
        "compiling twice gave two answers"
    );
    let compiled = match compiled {
        Ok(compiled) => compiled,
        Err(error) => return refused(&error),
    };
    let answer = compiled.validate(&instance);
    assert_eq!(
        answer,
        compiled.validate(&instance),
        "validating twice gave two answers"
    );
    if let Err(mismatch) = answer {
        mismatched(&mismatch, &instance);
    }
}

/// One line of at most [`QUOTE_LIMIT`] characters (and the ellipsis of a cut), no control
/// character: what `clip` makes of server text.
fn clipped(what: &str, text: &str) {
    assert!(
        text.chars().count() <= QUOTE_LIMIT + 1,
        "{what} is not clipped ({} characters): {text:?}",
        text.chars().count()
    );
    assert!(
        !text.chars().any(char::is_control),
        "{what} holds a control character: {text:?}"
    );
}

fn refused(error: &SchemaError) {
    let line = error.to_string();
    assert!(
        !line.chars().any(char::is_control),
        "a control character: {line:?}"
    );
    match error {
        SchemaError::TooDeep { limit } => assert_eq!(*limit, OutputSchema::MAX_DEPTH),
        SchemaError::TooLarge { limit } => assert_eq!(*limit, OutputSchema::MAX_NODES),
        SchemaError::EnumTooLarge { len, limit } => {
            assert_eq!(*limit, OutputSchema::MAX_ENUM);
            assert!(len > limit, "an enum of {len} refused");
        }
        SchemaError::TooManyPatterns { limit } => assert_eq!(*limit, OutputSchema::MAX_PATTERNS),
        SchemaError::PatternTooLong { len, limit } => {
            assert_eq!(*limit, OutputSchema::MAX_PATTERN_LEN);
            assert!(len > limit, "a pattern of {len} bytes refused");
        }
        SchemaError::Pattern { message } => clipped("a pattern error", message),
        SchemaError::UnknownDialect { dialect } => clipped("a dialect", dialect),
        SchemaError::ExternalRef { reference } => clipped("a reference", reference),
        SchemaError::Invalid {
            schema_path,
            rule,
            message,
        } => {
            clipped("a schema path", schema_path);
            clipped("a rule", rule);
            clipped("an invalid schema's message", message);
        }
        other => panic!("a SchemaError this target does not know: {other:?}"),
    }
}

fn mismatched(mismatch: &Mismatch, instance: &Value) {
    let Mismatch {
        instance_path,
        rule,
        message,
    } = mismatch;
    clipped("a mismatch's instance path", instance_path);
    clipped("a mismatch's rule", rule);
    clipped("a mismatch's message", message);
    assert!(!rule.is_empty(), "a mismatch without a rule: {mismatch:?}");
    assert!(
        instance_path.is_empty() || instance_path.starts_with('/'),
        "not a JSON pointer: {instance_path:?}"
    );
    // A pointer `clip` left alone names a value of the instance: short, and through keys with
    // nothing `clip` folds or trims (a key `"?12 "` is quoted as `/?12`, which names nothing).
    let intact = instance_path.chars().count() < QUOTE_LIMIT && keys_are_plain(instance);
    if intact {
        assert!(
            instance.pointer(instance_path).is_some(),
            "{instance_path:?} names no value of the instance ({rule})"
        );
    }
    let line = mismatch.to_string();
    assert!(
        !line.chars().any(char::is_control),
        "a control character: {line:?}"
    );
}

/// Whether no key anywhere in `value` holds a character [`mcp_auth::clip`] folds or trims.
fn keys_are_plain(value: &Value) -> bool {
    let plain = |key: &str| !key.chars().any(|c| c.is_whitespace() || c.is_control());
    match value {
        Value::Object(map) => map
            .iter()
            .all(|(key, value)| plain(key) && keys_are_plain(value)),
        Value::Array(items) => items.iter().all(keys_are_plain),
        _ => true,
    }
}
