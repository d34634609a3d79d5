//! libFuzzer target `http_sse`. The target and its invariants live in `mcp_fuzzing::http_sse`
//! (`fuzz/harness/`), shared with the stable corpus replay in
//! `fuzz/harness/tests/corpus_replay.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mcp_fuzzing::http_sse(data));
