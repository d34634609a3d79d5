//! libFuzzer target `answer`: decoding the answer to each kind of leg, as JSON and as an event stream.
//! The target and its invariants live in `mcp_fuzzing::answer` (`fuzz/harness/`), shared
//! with the stable corpus replay in `fuzz/harness/tests/corpus_replay.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mcp_fuzzing::answer(data));
