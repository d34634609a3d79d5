//! libFuzzer target `schema`: a tool's `outputSchema` compiled and its `structuredContent`
//! validated. The target and its invariants live in `mcp_fuzzing::schema` (`fuzz/harness/`),
//! shared with the stable corpus replay in `fuzz/harness/tests/corpus_replay.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mcp_fuzzing::schema(data));
