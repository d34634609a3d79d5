//! Tool parameters mirrored into HTTP headers (`x-mcp-header`, protocol 2026-07-28).
//!
//! A tool's `inputSchema` may mark parameters with `x-mcp-header: <Name>`; a modern client
//! sends each such argument's value as `Mcp-Param-<Name>` on `tools/call`, so gateways can route
//! without reading the body. This module reads the annotations (and refuses a tool whose
//! annotations break the spec's rules: a client must drop such a tool from its listing) and
//! turns arguments into header values. It never looks at anything but the schema and the
//! arguments it is given.

use http::header::{HeaderName, HeaderValue};
use serde_json::{Map, Value};

use crate::wire::header_value;

/// One annotated parameter: the header's name part and the chain of `properties` keys that
/// leads to the parameter from the schema root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ParamHeader {
    name: String,
    path: Vec<String>,
}

/// Schema keywords whose values are instance data, not schemas: an `x-mcp-header` key in them
/// is data.
const DATA_KEYWORDS: [&str; 4] = ["const", "default", "enum", "examples"];

/// The annotations of `schema`, or why they make the tool invalid.
pub(crate) fn param_headers(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut found = Vec::new();
    walk(schema, &mut Vec::new(), true, &mut found)?;
    for (i, header) in found.iter().enumerate() {
        let duplicate = found[..i]
            .iter()
            .any(|other| other.name.eq_ignore_ascii_case(&header.name));
        if duplicate {
            return Err(format!(
                "x-mcp-header \"{}\" is used twice (case-insensitively)",
                header.name
            ));
        }
    }
    Ok(found)
}

/// Walks a schema; `reachable` is whether the path so far is a chain of `properties` keys.
fn walk(
    schema: &Value,
    path: &mut Vec<String>,
    reachable: bool,
    found: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    match schema {
        Value::Object(object) => {
            if let Some(annotation) = object.get("x-mcp-header") {
                found.push(annotated(object, annotation, path, reachable)?);
            }
            for (keyword, value) in object {
                if keyword == "properties" {
                    if let Value::Object(properties) = value {
                        for (property, subschema) in properties {
                            path.push(property.clone());
                            walk(subschema, path, reachable, found)?;
                            path.pop();
                        }
                    }
                } else if !DATA_KEYWORDS.contains(&keyword.as_str()) && keyword != "x-mcp-header" {
                    walk(value, path, false, found)?;
                }
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter()
            .try_for_each(|item| walk(item, path, false, found)),
        _ => Ok(()),
    }
}

fn annotated(
    object: &Map<String, Value>,
    annotation: &Value,
    path: &[String],
    reachable: bool,
) -> Result<ParamHeader, String> {
    let Some(name) = annotation.as_str() else {
        return Err("an x-mcp-header value is not a string".to_owned());
    };
    if name.is_empty() {
        return Err("an x-mcp-header value is empty".to_owned());
    }
    if !name.bytes().all(is_tchar) {
        return Err(format!(
            "x-mcp-header \"{}\" is not an HTTP header-name token",
            name.escape_debug()
        ));
    }
    if !reachable || path.is_empty() {
        return Err(format!(
            "x-mcp-header \"{name}\" is not on a property reached through \"properties\" alone"
        ));
    }
    let primitive = matches!(
        object.get("type").and_then(Value::as_str),
        Some("string" | "integer" | "boolean")
    );
    if !primitive {
        return Err(format!(
            "x-mcp-header \"{name}\" is on a parameter that is not a string, integer or boolean"
        ));
    }
    Ok(ParamHeader {
        name: name.to_owned(),
        path: path.to_vec(),
    })
}

/// RFC 9110 `tchar`.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The `Mcp-Param-*` headers for a call with `arguments`: one per annotated parameter that has
/// a value (strings by the value-encoding rule, integers in decimal, booleans as `true` or
/// `false`; null, absent or any other value: no header).
pub(crate) fn param_values(
    headers: &[ParamHeader],
    arguments: &Map<String, Value>,
) -> Vec<(HeaderName, HeaderValue)> {
    let mut out = Vec::new();
    'headers: for header in headers {
        let Some((last, parents)) = header.path.split_last() else {
            continue;
        };
        let mut object = arguments;
        for key in parents {
            match object.get(key).and_then(Value::as_object) {
                Some(inner) => object = inner,
                None => continue 'headers,
            }
        }
        let value = object.get(last);
        let text = match value {
            Some(Value::String(text)) => header_value(text),
            Some(Value::Bool(flag)) => {
                HeaderValue::from_static(if *flag { "true" } else { "false" })
            }
            Some(Value::Number(number)) if number.is_i64() || number.is_u64() => {
                match HeaderValue::from_str(&number.to_string()) {
                    Ok(value) => value,
                    Err(_) => continue,
                }
            }
            _ => continue,
        };
        let Ok(name) = HeaderName::from_bytes(format!("mcp-param-{}", header.name).as_bytes())
        else {
            continue;
        };
        out.push((name, text));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotations_on_properties_are_read_and_invalid_ones_refused() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "nested": {"type": "object", "properties": {"flag": {"type": "boolean", "x-mcp-header": "Flag"}}},
            "plain": {"type": "number", "default": {"x-mcp-header": "data, not an annotation"}}
        }});
        let headers = param_headers(&schema).unwrap();
        let mut names: Vec<&str> = headers.iter().map(|h| h.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["Flag", "N", "Region"]);
        for (bad, why) in [
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
                "empty",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "a b"}}}),
                "token",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "a:b"}}}),
                "token",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "ä"}}}),
                "token",
            ),
            (
                json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
                "not a string",
            ),
            (
                json!({"properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
                "not a string",
            ),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "A"},
                                   "b": {"type": "string", "x-mcp-header": "a"}}}),
                "twice",
            ),
            (
                json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
                "reached",
            ),
            (
                json!({"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
                "reached",
            ),
        ] {
            let err = param_headers(&bad).unwrap_err();
            assert!(err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn argument_values_become_header_values() {
        let schema = json!({"properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "greeting": {"type": "string", "x-mcp-header": "Greeting"},
            "missing": {"type": "string", "x-mcp-header": "Missing"},
            "nested": {"type": "object", "properties": {"id": {"type": "string", "x-mcp-header": "Id"}}}
        }});
        let headers = param_headers(&schema).unwrap();
        let arguments = json!({"region": "us-west1", "priority": 42, "verbose": false,
            "greeting": "Hello, 世界", "missing": null, "nested": {"id": "x7"}});
        let values = param_values(&headers, arguments.as_object().unwrap());
        let mut shown: Vec<(String, String)> = values
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
            .collect();
        shown.sort();
        let expected = [
            ("mcp-param-greeting", "=?base64?SGVsbG8sIOS4lueVjA==?="),
            ("mcp-param-id", "x7"),
            ("mcp-param-priority", "42"),
            ("mcp-param-region", "us-west1"),
            ("mcp-param-verbose", "false"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
            .collect();
        assert_eq!(shown, expected);
    }
}
