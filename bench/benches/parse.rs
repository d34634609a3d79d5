//! Parsing a large `tools/list` answer: through `mcp-proto` (a `Session::list_tools` operation
//! on a `ManualClock`, the body fed in 16 KiB chunks as JSON or as one event-stream event, the
//! tools extracted) against `serde_json::from_slice::<serde_json::Value>` on the same JSON.
//!
//! Groups are named `parse-<size>-<json|sse>`; `bench/run.sh` reads criterion's estimates
//! back into `BENCHMARKS.md`. Sample counts are small to keep the whole run short.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use mcp_bench::wire::{CallDriver, ListAnswer, ListDriver};
use serde_json::Value;

fn parse(c: &mut Criterion) {
    for (label, size) in [("1MiB", 1usize << 20), ("2MiB", 2 << 20)] {
        let answer = ListAnswer::new(size);
        for sse in [false, true] {
            let mut driver = ListDriver::new(answer.clone(), sse);
            let form = if sse { "sse" } else { "json" };
            let mut group = c.benchmark_group(format!("parse-{label}-{form}"));
            group
                .sample_size(20)
                .warm_up_time(Duration::from_millis(500))
                .measurement_time(Duration::from_secs(2));
            group.throughput(Throughput::Bytes(driver.body_len() as u64));
            group.bench_function("mcp-proto", |b| b.iter(|| black_box(driver.list())));
            let json = driver.json().to_vec();
            group.throughput(Throughput::Bytes(json.len() as u64));
            group.bench_function("serde_json-value", |b| {
                b.iter(|| {
                    let value: Value =
                        serde_json::from_slice(black_box(&json)).expect("the answer is JSON");
                    black_box(value)
                })
            });
            group.finish();
        }
    }
}

/// One `tools/call` on a live session through the state machine, answer canned: what
/// `mcp-proto` itself costs per call, to set against the drivers' measured CPU per call.
fn sansio_call(c: &mut Criterion) {
    let mut group = c.benchmark_group("sansio-call");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for sse in [false, true] {
        let mut driver = CallDriver::new(sse);
        let name = if sse { "sse" } else { "json" };
        group.bench_function(name, |b| b.iter(|| black_box(driver.call())));
    }
    group.finish();
}

criterion_group!(benches, parse, sansio_call);
criterion_main!(benches);
