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

/// A chain of `$defs`, each `allOf` two references to the one before: 2^links subschemas
/// applied to any value by a checker that remembers nothing.
fn doubling_chain(links: usize) -> Value {
    let mut defs = serde_json::Map::new();
    defs.insert("d0".into(), json!({ "type": "integer" }));
    for link in 1..=links {
        let before = format!("#/$defs/d{}", link - 1);
        defs.insert(
            format!("d{link}"),
            json!({ "allOf": [{ "$ref": before }, { "$ref": before }] }),
        );
    }
    json!({ "$defs": defs, "$ref": format!("#/$defs/d{links}") })
}

#[test]
fn a_check_whose_work_doubles_with_each_reference_is_refused_unrun() {
    // 2^40 applications: the count stops at the limit, long before the crate would.
    let schema = compile(&doubling_chain(40));
    let mismatch = first_mismatch(&schema, &json!(1));
    assert_eq!(mismatch.rule, "work");
    assert_eq!(mismatch.instance_path, "");
    assert!(mismatch.message.contains("4000000"), "{}", mismatch.message);
    // A short chain is counted, within the limit, and checked by the crate.
    let schema = compile(&doubling_chain(10));
    assert_eq!(schema.validate(&json!(1)), Ok(()));
    assert_eq!(first_mismatch(&schema, &json!("one")).rule, "type");
}

#[test]
fn a_recursion_that_branches_on_every_level_of_the_value_is_refused_unrun() {
    // Both branches recurse into the items: 2^depth on arrays nested `depth` deep.
    let schema = compile(&json!({
        "$defs": { "node": { "anyOf": [
            { "type": "array", "items": { "$ref": "#/$defs/node" } },
            { "type": "array", "items": { "$ref": "#/$defs/node" }, "minItems": 0 }
        ] } },
        "$ref": "#/$defs/node"
    }));
    let deep = (0..60).fold(json!([]), |inner, _| json!([inner]));
    assert_eq!(first_mismatch(&schema, &deep).rule, "work");
    // The same schema on a shallow value is checked.
    let shallow = (0..5).fold(json!([]), |inner, _| json!([inner]));
    assert_eq!(schema.validate(&shallow), Ok(()));
}

#[test]
fn references_that_loop_without_reaching_into_the_value_are_refused_unrun() {
    let schema = compile(&json!({
        "$defs": { "a": { "$ref": "#/$defs/b" }, "b": { "allOf": [{ "$ref": "#/$defs/a" }] } },
        "$ref": "#/$defs/a"
    }));
    assert_eq!(first_mismatch(&schema, &json!(1)).rule, "work");
}

#[test]
fn a_large_result_of_small_records_is_checked_within_the_limit() {
    // About 2 MiB of JSON, the default body cap: 60,000 days of a forecast.
    let day = json!({ "date": "2026-12-05", "high": 3.5, "low": null });
    let days = vec![day; 60_000];
    let instance = json!({ "city": "Oslo", "days": days });
    assert!(instance.to_string().len() > 2_000_000);
    assert_eq!(compile(&forecast()).validate(&instance), Ok(()));
}

#[test]
fn work_that_grows_with_the_value_is_counted_with_it() {
    // Many `pattern`s on one long string: each scans it.
    let patterns: Vec<Value> = (0..100).map(|_| json!({ "pattern": "a" })).collect();
    let schema = compile(&json!({ "allOf": patterns }));
    let long = "a".repeat(3_000_000);
    assert_eq!(first_mismatch(&schema, &json!(long)).rule, "work");
    assert_eq!(schema.validate(&json!("a".repeat(1_000))), Ok(()));
    // `uniqueItems` hashes every value, each time it is applied.
    let unique: Vec<Value> = (0..100).map(|_| json!({ "uniqueItems": true })).collect();
    let schema = compile(&json!({ "allOf": unique }));
    let items: Vec<Value> = (0..100_000).map(|n| json!(n)).collect();
    assert_eq!(first_mismatch(&schema, &json!(items)).rule, "work");
}

#[test]
fn a_dynamic_reference_is_counted_at_every_anchor_it_may_land_on() {
    // The static target is harmless; the anchor the dynamic scope reaches doubles the work.
    let mut schema = doubling_chain(40);
    schema["$id"] = json!("https://example.test/outer");
    schema["$ref"] = json!("inner");
    schema["$defs"]["heavy"] = json!({ "$dynamicAnchor": "node", "$ref": "#/$defs/d40" });
    schema["$defs"]["inner"] =
        json!({ "$id": "inner", "$dynamicAnchor": "node", "$dynamicRef": "#node" });
    let schema = compile(&schema);
    assert_eq!(first_mismatch(&schema, &json!(1)).rule, "work");
}

#[test]
fn the_deepest_check_allowed_fits_a_tokio_worker_s_stack() {
    // References in a row, each to the next: as many nested applications as the count allows,
    // then one more, on a thread with a tokio worker's 2 MiB stack (debug build: big frames).
    let chain = |links: usize| {
        let mut defs = serde_json::Map::new();
        defs.insert("d0".into(), json!({ "type": "integer" }));
        for link in 1..=links {
            defs.insert(
                format!("d{link}"),
                json!({ "$ref": format!("#/$defs/d{}", link - 1) }),
            );
        }
        json!({ "$defs": defs, "$ref": format!("#/$defs/d{links}") })
    };
    let deepest = usize::try_from(Work::MAX_DEPTH).unwrap() - 1;
    let answers = std::thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(move || {
            let within = compile(&chain(deepest));
            let past = compile(&chain(deepest + 2));
            // Four nested applications per level of a value nested as deep as it may be.
            let levels = compile(&json!({
                "$defs": {
                    "n": { "allOf": [{ "$ref": "#/$defs/m" }] },
                    "m": { "type": "array", "items": { "$ref": "#/$defs/n" } }
                },
                "$ref": "#/$defs/m"
            }));
            let deep = (0..126).fold(json!(["leaf"]), |inner, _| json!([inner]));
            (
                within.validate(&json!("x")),
                past.validate(&json!(1)),
                levels.validate(&deep),
            )
        })
        .unwrap()
        .join()
        .unwrap();
    assert_eq!(answers.0.unwrap_err().rule, "type");
    assert_eq!(answers.1.unwrap_err().rule, "work");
    assert_eq!(answers.2.unwrap_err().rule, "type");
}
