//! Checking a tool's result against its `outputSchema` alone (issue 46): compiling the testkit's
//! `forecast` schema ([`mcp_testkit::forecast_schema`]: five typed properties, all required, one
//! an array of objects) with `mcp_proto::schema::OutputSchema::compile`, and validating its
//! seven-day answer ([`mcp_testkit::forecast_result`]'s `structuredContent`) with
//! `OutputSchema::validate`: what a session pays once per tool, and on every checked result.
//! A result that breaks the schema (its fourth day's high a string) is timed too: the refusal
//! builds the mismatch's pointer and message.
//!
//! The group is `output-schema`; `BENCHMARKS.md` ("Output validation") quotes its estimates.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use mcp_proto::schema::OutputSchema;
use serde_json::json;

fn output_schema(c: &mut Criterion) {
    let schema_json = mcp_testkit::forecast_schema();
    let instance = mcp_testkit::forecast_result()["structuredContent"].clone();
    let schema = OutputSchema::compile(&schema_json).expect("the forecast schema compiles");
    assert!(schema.validate(&instance).is_ok(), "the forecast matches");
    let mut broken = instance.clone();
    broken["days"][3]["high"] = json!("warm");
    assert!(
        schema.validate(&broken).is_err(),
        "the broken forecast does not"
    );

    let mut group = c.benchmark_group("output-schema");
    group
        .sample_size(50)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("compile", |b| {
        b.iter(|| black_box(OutputSchema::compile(black_box(&schema_json))))
    });
    group.bench_function("validate", |b| {
        b.iter(|| black_box(schema.validate(black_box(&instance)).is_ok()))
    });
    group.bench_function("validate-mismatch", |b| {
        b.iter(|| black_box(schema.validate(black_box(&broken)).is_err()))
    });
    group.finish();
}

criterion_group!(benches, output_schema);
criterion_main!(benches);
