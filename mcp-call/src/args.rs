//! `--arg key=value`: tool arguments typed from the tool's `inputSchema`, so a string property
//! gets a string even when its value looks like a number, and an integer property an integer.

use serde_json::{Map, Value};

/// One `--arg`, split at its first `=`.
pub(crate) fn parse_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.trim().is_empty() => {
            Ok((key.trim().to_owned(), value.to_owned()))
        }
        _ => Err(format!("\"{text}\" is not key=value")),
    }
}

/// Types each pair by the schema's property of that name and merges it into `arguments` (a
/// pair wins over the JSON object's member of the same name). `Err` is a usage error naming
/// the key.
pub(crate) fn merge(
    arguments: &mut Map<String, Value>,
    pairs: &[(String, String)],
    schema: &Value,
) -> Result<(), String> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
    for (key, raw) in pairs {
        let property = properties.and_then(|p| p.get(key));
        if property.is_none() && closed {
            return Err(format!("the tool has no argument \"{key}\""));
        }
        let kind = property
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let value = match kind {
            "string" => Value::from(raw.as_str()),
            "integer" => raw
                .trim()
                .parse::<i64>()
                .map(Value::from)
                .map_err(|_| format!("\"{key}\" must be an integer, not \"{raw}\""))?,
            "number" => raw
                .trim()
                .parse::<f64>()
                .ok()
                .and_then(serde_json::Number::from_f64)
                .map(Value::Number)
                .ok_or_else(|| format!("\"{key}\" must be a number, not \"{raw}\""))?,
            "boolean" => match raw.trim() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => return Err(format!("\"{key}\" must be true or false, not \"{raw}\"")),
            },
            "array" | "object" => serde_json::from_str(raw)
                .map_err(|_| format!("\"{key}\" must be JSON ({kind}), not \"{raw}\""))?,
            // No type to go by: JSON when it reads as JSON, else the text.
            _ => serde_json::from_str(raw).unwrap_or_else(|_| Value::from(raw.as_str())),
        };
        arguments.insert(key.clone(), value);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn typed(schema: Value, pairs: &[(&str, &str)]) -> Result<Value, String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let mut arguments = Map::new();
        merge(&mut arguments, &pairs, &schema).map(|()| Value::Object(arguments))
    }

    #[test]
    fn values_follow_the_schema_not_their_looks() {
        let schema = json!({"type": "object", "properties": {
            "zip": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": "number"},
            "on": {"type": "boolean"}, "tags": {"type": "array"}}});
        assert_eq!(
            typed(
                schema.clone(),
                &[
                    ("zip", "01234"),
                    ("n", "7"),
                    ("x", "2.5"),
                    ("on", "true"),
                    ("tags", "[1,2]"),
                    ("free", "3")
                ]
            ),
            Ok(json!({"zip": "01234", "n": 7, "x": 2.5, "on": true, "tags": [1, 2], "free": 3}))
        );
        assert!(
            typed(schema.clone(), &[("n", "seven")])
                .unwrap_err()
                .contains("integer")
        );
        assert!(typed(schema, &[("on", "yes")]).is_err());
        let closed =
            json!({"properties": {"a": {"type": "string"}}, "additionalProperties": false});
        assert!(typed(closed, &[("b", "1")]).unwrap_err().contains("\"b\""));
        assert!(parse_pair("novalue").is_err());
        assert_eq!(parse_pair("k=a=b"), Ok(("k".to_owned(), "a=b".to_owned())));
    }
}
