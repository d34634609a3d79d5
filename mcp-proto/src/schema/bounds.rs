//! The limits a schema is held to before the crate compiles it (its depth, its size, its
//! `enum`s and `pattern`s) and the depth an instance is held to before it is validated.
//!
//! It only walks JSON values: it never compiles a schema or a pattern and never fetches.

use serde_json::Value;

use super::{OutputSchema, SchemaError};

/// The limits of [`OutputSchema`], checked in one walk that stops at the first one broken
/// (and never recurses deeper than [`OutputSchema::MAX_DEPTH`] + 1).
pub(super) fn check_bounds(schema: &Value) -> Result<(), SchemaError> {
    let mut tally = Tally::default();
    tally.visit(schema, 1)
}

/// What the walk of [`check_bounds`] has counted so far.
#[derive(Default)]
struct Tally {
    nodes: usize,
    patterns: usize,
}

impl Tally {
    fn visit(&mut self, value: &Value, depth: usize) -> Result<(), SchemaError> {
        if depth > OutputSchema::MAX_DEPTH {
            return Err(SchemaError::TooDeep {
                limit: OutputSchema::MAX_DEPTH,
            });
        }
        self.nodes += 1;
        if self.nodes > OutputSchema::MAX_NODES {
            return Err(SchemaError::TooLarge {
                limit: OutputSchema::MAX_NODES,
            });
        }
        match value {
            Value::Array(items) => {
                for item in items {
                    self.visit(item, depth + 1)?;
                }
            }
            Value::Object(members) => {
                for (key, member) in members {
                    self.keyword(key, member)?;
                    self.visit(member, depth + 1)?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The limits on one member, by its key: checked wherever the key appears (inside
    /// `properties`, `const` or `default` too), which errs on the safe side.
    fn keyword(&mut self, key: &str, member: &Value) -> Result<(), SchemaError> {
        match (key, member) {
            ("enum", Value::Array(members)) if members.len() > OutputSchema::MAX_ENUM => {
                Err(SchemaError::EnumTooLarge {
                    len: members.len(),
                    limit: OutputSchema::MAX_ENUM,
                })
            }
            ("pattern", Value::String(pattern)) => self.pattern(pattern),
            ("patternProperties", Value::Object(patterns)) => patterns
                .keys()
                .try_for_each(|pattern| self.pattern(pattern)),
            _ => Ok(()),
        }
    }

    fn pattern(&mut self, pattern: &str) -> Result<(), SchemaError> {
        self.patterns += 1;
        if self.patterns > OutputSchema::MAX_PATTERNS {
            return Err(SchemaError::TooManyPatterns {
                limit: OutputSchema::MAX_PATTERNS,
            });
        }
        if pattern.len() > OutputSchema::MAX_PATTERN_LEN {
            return Err(SchemaError::PatternTooLong {
                len: pattern.len(),
                limit: OutputSchema::MAX_PATTERN_LEN,
            });
        }
        Ok(())
    }
}

/// The JSON pointer of the first value of `instance` nested deeper than `limit` levels (the
/// root is level 1), if any. The recursion stops one level past `limit`, and only the path to
/// the value found is written.
pub(super) fn too_deep(instance: &Value, limit: usize) -> Option<String> {
    deeper(instance, 1, limit)
}

fn deeper(value: &Value, depth: usize, limit: usize) -> Option<String> {
    if depth > limit {
        return Some(String::new());
    }
    match value {
        Value::Array(items) => items.iter().enumerate().find_map(|(index, item)| {
            deeper(item, depth + 1, limit).map(|rest| format!("/{index}{rest}"))
        }),
        Value::Object(members) => members.iter().find_map(|(key, member)| {
            deeper(member, depth + 1, limit).map(|rest| {
                let key = key.replace('~', "~0").replace('/', "~1");
                format!("/{key}{rest}")
            })
        }),
        _ => None,
    }
}
