//! libFuzzer target `operation`: a whole operation under arbitrary driver inputs and clock steps.
//! The target and its invariants live in `mcp_fuzzing::operation` (`fuzz/harness/`), shared
//! with the stable corpus replay in `fuzz/harness/tests/corpus_replay.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mcp_fuzzing::operation(data));
