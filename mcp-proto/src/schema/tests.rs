//! The schema module's tests: real servers' schemas, mismatches, hostile schemas.
use super::*;
use serde_json::json;

/// server-everything's `get-structured-content` tool, as it declares its output.
fn weather() -> Value {
    json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "temperature": { "type": "number" },
            "conditions": { "type": "string" },
            "humidity": { "type": "number" }
        },
        "required": ["temperature", "conditions", "humidity"],
        "additionalProperties": false
    })
}

/// What pydantic (FastMCP, the Python SDK) derives from a return annotation: 2020-12,
/// no `$schema`, nested models in `$defs` behind local `$ref`s.
fn forecast() -> Value {
    json!({
        "$defs": {
            "Day": {
                "properties": {
                    "date": { "title": "Date", "type": "string" },
                    "high": { "title": "High", "type": "number" },
                    "low": { "anyOf": [{ "type": "number" }, { "type": "null" }], "default": null, "title": "Low" }
                },
                "required": ["date", "high"],
                "title": "Day",
                "type": "object"
            }
        },
        "properties": {
            "city": { "title": "City", "type": "string" },
            "days": { "items": { "$ref": "#/$defs/Day" }, "title": "Days", "type": "array" }
        },
        "required": ["city", "days"],
        "title": "Forecast",
        "type": "object"
    })
}

fn compile(schema: &Value) -> OutputSchema {
    match OutputSchema::compile(schema) {
        Ok(compiled) => compiled,
        Err(error) => panic!("{schema} does not compile: {error}"),
    }
}

fn first_mismatch(schema: &OutputSchema, instance: &Value) -> Mismatch {
    match schema.validate(instance) {
        Err(mismatch) => mismatch,
        Ok(()) => panic!("{instance} matched"),
    }
}

/// `levels` objects nested in each other under `key`, the innermost `{}`.
fn nested(key: &str, levels: usize) -> Value {
    (0..levels).fold(json!({}), |inner, _| json!({ key: inner }))
}

#[test]
fn a_draft_07_schema_naming_its_dialect_validates_what_server_everything_returns() {
    let schema = compile(&weather());
    let result = json!({ "temperature": 22.5, "conditions": "Partly cloudy", "humidity": 65 });
    assert_eq!(schema.validate(&result), Ok(()));
}

#[test]
fn a_2020_12_schema_with_defs_follows_its_local_refs() {
    let schema = compile(&forecast());
    let good =
        json!({ "city": "Oslo", "days": [{ "date": "2026-01-01", "high": 3, "low": null }] });
    assert_eq!(schema.validate(&good), Ok(()));

    let bad = json!({ "city": "Oslo", "days": [{ "date": "2026-01-01", "high": "warm" }] });
    let mismatch = first_mismatch(&schema, &bad);
    assert_eq!(mismatch.instance_path, "/days/0/high");
    assert_eq!(mismatch.rule, "type");
}

#[test]
fn a_mismatch_names_the_pointer_and_the_rule_it_broke() {
    let schema = compile(&weather());
    let result = json!({ "temperature": "hot", "conditions": "Sunny", "humidity": 65 });
    let mismatch = first_mismatch(&schema, &result);
    assert_eq!(mismatch.instance_path, "/temperature");
    assert_eq!(mismatch.rule, "type");
    assert!(mismatch.message.contains("number"), "{mismatch}");
    assert!(
        mismatch.to_string().contains("/temperature (type)"),
        "{mismatch}"
    );
}

#[test]
fn a_missing_required_member_is_a_mismatch_at_its_object() {
    let schema = compile(&weather());
    let mismatch = first_mismatch(
        &schema,
        &json!({ "temperature": 22.5, "conditions": "Sunny" }),
    );
    assert_eq!(mismatch.instance_path, "");
    assert_eq!(mismatch.rule, "required");
    assert!(mismatch.message.contains("humidity"), "{mismatch}");
    assert!(mismatch.to_string().contains("at the root"), "{mismatch}");
}

#[test]
fn a_member_the_schema_forbids_is_a_mismatch_of_additional_properties() {
    let schema = compile(&weather());
    let result = json!({ "temperature": 1, "conditions": "x", "humidity": 2, "wind": 3 });
    assert_eq!(
        first_mismatch(&schema, &result).rule,
        "additionalProperties"
    );
}

#[test]
fn every_dialect_the_crate_has_is_honoured_and_an_unknown_one_refused() {
    for dialect in [
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
    ] {
        compile(&json!({ "$schema": dialect, "type": "string" }));
    }
    // Draft-04's boolean `exclusiveMaximum` (a number in later dialects) is honoured.
    let draft_04 = json!({ "$schema": "http://json-schema.org/draft-04/schema#", "maximum": 5, "exclusiveMaximum": true });
    assert_eq!(
        first_mismatch(&compile(&draft_04), &json!(5)).rule,
        "exclusiveMaximum"
    );
    let unknown = OutputSchema::compile(&json!({ "$schema": "https://example.com/my-dialect" }));
    assert_eq!(
        unknown.map(|_| ()),
        Err(SchemaError::UnknownDialect {
            dialect: "https://example.com/my-dialect".to_owned()
        })
    );
    let not_a_string = OutputSchema::compile(&json!({ "$schema": 7 }));
    assert!(matches!(
        not_a_string,
        Err(SchemaError::UnknownDialect { .. })
    ));
}

#[test]
fn a_reference_outside_the_schema_is_refused_at_compile_time_never_fetched() {
    for (reference, resolved) in [
        (
            "https://example.com/weather.json",
            "https://example.com/weather.json",
        ),
        ("http://127.0.0.1:9/schema", "http://127.0.0.1:9/schema"),
        ("file:///etc/passwd", "file:///etc/passwd"),
        ("urn:example:weather", "urn:example:weather"),
        ("weather.json", "json-schema:///weather.json"),
    ] {
        let schema = json!({ "properties": { "a": { "$ref": reference } } });
        assert_eq!(
            OutputSchema::compile(&schema).map(|_| ()),
            Err(SchemaError::ExternalRef {
                reference: resolved.to_owned()
            }),
            "{reference}"
        );
    }
}

#[test]
fn the_retriever_refuses_every_uri_and_keeps_the_first() {
    let refused = Arc::new(Mutex::new(None));
    let retriever = Refuse {
        refused: Arc::clone(&refused),
    };
    for uri in ["https://example.com/a", "file:///b"] {
        let uri = jsonschema::uri::from_str(uri).expect("a URI");
        assert!(retriever.retrieve(&uri).is_err());
    }
    let first = refused
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    assert_eq!(first.as_deref(), Some("https://example.com/a"));
}

#[test]
fn a_reference_inside_the_schema_to_nothing_is_invalid_not_external() {
    let error = OutputSchema::compile(&json!({ "$ref": "#/$defs/missing" })).map(|_| ());
    assert!(
        matches!(error, Err(SchemaError::Invalid { ref rule, .. }) if rule == "$ref"),
        "{error:?}"
    );
}

#[test]
fn a_schema_that_refers_to_itself_compiles_and_validates() {
    let tree = json!({ "type": "object", "properties": { "children": { "type": "array", "items": { "$ref": "#" } } } });
    let schema = compile(&tree);
    let instance = json!({ "children": [{ "children": [] }, { "children": [{ "children": 3 }] }] });
    assert_eq!(
        first_mismatch(&schema, &instance).instance_path,
        "/children/1/children/0/children"
    );
    assert_eq!(compile(&json!({ "$ref": "#" })).validate(&json!(1)), Ok(()));
}

#[test]
fn a_schema_nested_past_the_depth_limit_is_refused_before_the_crate_sees_it() {
    // `nested(key, n)` is n + 1 levels deep: n objects around an empty one.
    compile(&nested("not", OutputSchema::MAX_DEPTH - 1));
    let error = OutputSchema::compile(&nested("not", OutputSchema::MAX_DEPTH));
    assert_eq!(
        error.map(|_| ()),
        Err(SchemaError::TooDeep {
            limit: OutputSchema::MAX_DEPTH
        })
    );
    // Far deeper: refused all the same, without recursing that far.
    let error = OutputSchema::compile(&nested("items", 500));
    assert_eq!(
        error.map(|_| ()),
        Err(SchemaError::TooDeep {
            limit: OutputSchema::MAX_DEPTH
        })
    );
}

#[test]
fn a_schema_with_too_many_values_is_refused() {
    let members: serde_json::Map<String, Value> = (0..OutputSchema::MAX_NODES)
        .map(|i| (format!("p{i}"), json!({})))
        .collect();
    let error = OutputSchema::compile(&json!({ "properties": members }));
    assert_eq!(
        error.map(|_| ()),
        Err(SchemaError::TooLarge {
            limit: OutputSchema::MAX_NODES
        })
    );
}

#[test]
fn a_huge_enum_is_refused_and_one_at_the_limit_compiles() {
    let at_limit: Vec<usize> = (0..OutputSchema::MAX_ENUM).collect();
    let schema = compile(&json!({ "enum": at_limit }));
    assert_eq!(first_mismatch(&schema, &json!("x")).rule, "enum");
    let over: Vec<usize> = (0..=OutputSchema::MAX_ENUM).collect();
    let error = OutputSchema::compile(&json!({ "properties": { "a": { "enum": over } } }));
    assert_eq!(
        error.map(|_| ()),
        Err(SchemaError::EnumTooLarge {
            len: OutputSchema::MAX_ENUM + 1,
            limit: OutputSchema::MAX_ENUM
        })
    );
}

#[test]
fn a_catastrophic_pattern_runs_on_the_linear_engine() {
    // Exponential on a backtracking engine; linear here.
    let schema = compile(&json!({ "type": "string", "pattern": "^(a+)+$" }));
    let hostile = format!("{}b", "a".repeat(30));
    assert_eq!(first_mismatch(&schema, &json!(hostile)).rule, "pattern");
    assert_eq!(schema.validate(&json!("a".repeat(30))), Ok(()));
    // The proof that it is the linear engine: what only backtracking can do is refused.
    for pattern in ["(a)\\1", "(?=a)a", "(?<!b)a"] {
        let error = OutputSchema::compile(&json!({ "pattern": pattern }));
        assert!(
            matches!(error, Err(SchemaError::Pattern { .. })),
            "{pattern}: {error:?}"
        );
        let error = OutputSchema::compile(&json!({ "patternProperties": { pattern: {} } }));
        assert!(
            matches!(error, Err(SchemaError::Pattern { .. })),
            "{pattern}: {error:?}"
        );
    }
}

#[test]
fn a_pattern_whose_program_is_over_the_size_limit_is_refused() {
    let error = OutputSchema::compile(&json!({ "pattern": "\\w{100}{100}" }));
    assert!(
        matches!(error, Err(SchemaError::Pattern { .. })),
        "{error:?}"
    );
    compile(&json!({ "pattern": "^\\w{1,64}$" }));
}

#[test]
fn too_many_or_too_long_patterns_are_refused() {
    let long = "a".repeat(OutputSchema::MAX_PATTERN_LEN + 1);
    let error = OutputSchema::compile(&json!({ "pattern": long }));
    assert_eq!(
        error.map(|_| ()),
        Err(SchemaError::PatternTooLong {
            len: OutputSchema::MAX_PATTERN_LEN + 1,
            limit: OutputSchema::MAX_PATTERN_LEN
        })
    );
    let many: serde_json::Map<String, Value> = (0..=OutputSchema::MAX_PATTERNS)
        .map(|i| (format!("^p{i}$"), json!({})))
        .collect();
    let error = OutputSchema::compile(&json!({ "patternProperties": many }));
    assert_eq!(
        error.map(|_| ()),
        Err(SchemaError::TooManyPatterns {
            limit: OutputSchema::MAX_PATTERNS
        })
    );
}

#[test]
fn an_invalid_schema_names_where_and_which_rule() {
    let error = OutputSchema::compile(&json!({ "properties": { "a": { "minimum": "x" } } }));
    assert_eq!(
        error.map(|_| ()),
        Err(SchemaError::Invalid {
            schema_path: "/properties/a/minimum".to_owned(),
            rule: "type".to_owned(),
            message: "\"x\" is not of type \"number\"".to_owned(),
        })
    );
}

#[test]
fn an_instance_nested_past_its_limit_is_refused_unchecked() {
    let schema = compile(&json!({}));
    assert_eq!(
        schema.validate(&nested("a", OutputSchema::MAX_INSTANCE_DEPTH - 1)),
        Ok(())
    );
    let mismatch = first_mismatch(&schema, &nested("a/b", OutputSchema::MAX_INSTANCE_DEPTH));
    assert_eq!(mismatch.rule, "depth");
    assert!(
        mismatch.instance_path.starts_with("/a~1b/a~1b/"),
        "{mismatch:?}"
    );
}

#[test]
fn server_text_in_a_mismatch_is_clipped_to_one_line() {
    let schema = compile(&json!({ "type": "number" }));
    let mismatch = first_mismatch(&schema, &json!(format!("line\n{}", "x".repeat(10_000))));
    assert!(
        mismatch.message.chars().count() <= QUOTE_LIMIT + 1,
        "{}",
        mismatch.message.len()
    );
    assert!(!mismatch.message.contains('\n'));
    let key = "k".repeat(10_000);
    let schema = compile(&json!({ "properties": { key.clone(): { "type": "number" } } }));
    let mismatch = first_mismatch(&schema, &json!({ key: "x" }));
    assert!(mismatch.instance_path.chars().count() <= QUOTE_LIMIT + 1);
}

#[test]
fn format_is_an_annotation_in_every_dialect() {
    for dialect in [
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2020-12/schema",
    ] {
        let schema = compile(&json!({ "$schema": dialect, "format": "email" }));
        assert_eq!(schema.validate(&json!("not an address")), Ok(()));
    }
}
