//! Replays the fuzz corpus on stable, in `cargo test`.
//!
//! Every file in `fuzz/corpus/<target>/` (the committed seeds) and `fuzz/regressions/<target>/`
//! (one input per fixed bug) goes through the same target function libFuzzer runs
//! ([`mcp_fuzzing::TARGETS`]), so the invariants are checked on every test run without a
//! nightly toolchain. A regression file whose name starts with `open-` is a bug that is not
//! fixed yet: it is skipped here and replayed by an ignored test below until the fix lands
//! (then drop the prefix and the ignored test).
//!
//! Nothing here passes on a missing directory: `fuzz/regressions/` must exist, every target
//! must have seeds, and every directory under `fuzz/corpus/` and `fuzz/regressions/` must name
//! a target (a renamed target would otherwise stop being replayed without a word).

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};

use mcp_fuzzing::TARGETS;

fn fuzz_dir() -> PathBuf {
    let harness = Path::new(env!("CARGO_MANIFEST_DIR"));
    harness.parent().unwrap_or(harness).to_owned()
}

/// The target directories under `fuzz/<kind>/`; panics when `fuzz/<kind>/` is missing or holds
/// a directory that names no target.
fn target_dirs(kind: &str) -> Vec<String> {
    let dir = fuzz_dir().join(kind);
    let entries =
        fs::read_dir(&dir).unwrap_or_else(|err| panic!("{} cannot be read: {err}", dir.display()));
    let mut names = Vec::new();
    for entry in entries {
        let path = entry.expect("a directory entry is readable").path();
        if !path.is_dir() {
            continue;
        }
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        assert!(
            TARGETS.iter().any(|(target, _)| *target == name),
            "{} names no fuzz target (the targets: {:?})",
            path.display(),
            TARGETS.iter().map(|(t, _)| *t).collect::<Vec<_>>()
        );
        names.push(name.to_owned());
    }
    names
}

/// The files of `fuzz/<kind>/<target>/`, sorted (none when that directory does not exist);
/// `open` selects the not-yet-fixed ones.
fn inputs(kind: &str, target: &str, open: bool) -> Vec<PathBuf> {
    let dir = fuzz_dir().join(kind).join(target);
    if !dir.exists() {
        return Vec::new();
    }
    let entries =
        fs::read_dir(&dir).unwrap_or_else(|err| panic!("{} cannot be read: {err}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.expect("a directory entry is readable").path())
        .filter(|p| p.is_file())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            !name.starts_with('.') && name.starts_with("open-") == open
        })
        .collect();
    files.sort();
    files
}

/// Runs every input through its target; panics naming each input that failed.
fn replay(kind: &str, open: bool) -> usize {
    target_dirs(kind);
    let mut failures = Vec::new();
    let mut count = 0;
    for (target, run) in TARGETS {
        for path in inputs(kind, target, open) {
            count += 1;
            let data = fs::read(&path)
                .unwrap_or_else(|err| panic!("{} cannot be read: {err}", path.display()));
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| run(&data))) {
                let message = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                failures.push(format!("{}: {message}", path.display()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} inputs violated an invariant:\n{}",
        failures.len(),
        failures.join("\n")
    );
    count
}

#[test]
fn every_seed_in_the_corpus_holds_the_invariants() {
    let count = replay("corpus", false);
    assert!(
        count >= 30,
        "only {count} seed files: is fuzz/corpus missing?"
    );
    for (target, _) in TARGETS {
        assert!(
            !inputs("corpus", target, false).is_empty(),
            "no seeds for the {target} target in fuzz/corpus/{target}/"
        );
    }
}

#[test]
fn every_fixed_regression_stays_fixed() {
    let count = replay("regressions", false);
    assert!(
        count > 0,
        "no regression inputs under fuzz/regressions/: were they moved?"
    );
}

/// The cargo-fuzz crate builds one `[[bin]]` per target, each calling the function of its
/// name, and nothing else: a target added to one list and not the other would never be fuzzed
/// or never be replayed.
#[test]
fn the_cargo_fuzz_crate_builds_every_target() {
    let manifest = fs::read_to_string(fuzz_dir().join("Cargo.toml")).expect("fuzz/Cargo.toml");
    let bins: Vec<&str> = manifest
        .split("[[bin]]")
        .skip(1)
        .filter_map(|section| {
            let line = section
                .lines()
                .find(|line| line.trim_start().starts_with("name"))?;
            line.split('"').nth(1)
        })
        .collect();
    let targets: Vec<&str> = TARGETS.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        bins, targets,
        "fuzz/Cargo.toml's [[bin]]s and TARGETS differ"
    );
    for name in targets {
        let path = fuzz_dir().join("fuzz_targets").join(format!("{name}.rs"));
        let source = fs::read_to_string(&path)
            .unwrap_or_else(|err| panic!("{} cannot be read: {err}", path.display()));
        assert!(
            source.contains(&format!("mcp_fuzzing::{name}(data)")),
            "{} does not call mcp_fuzzing::{name}",
            path.display()
        );
    }
}

/// The inputs of reported bugs that are not fixed yet (`fuzz/regressions/<target>/open-*`):
/// this fails while any of them still breaks an invariant. Run it with `--ignored`; once a fix
/// lands, drop the file's `open-` prefix so the always-on replay keeps it fixed.
#[test]
#[ignore = "bug: replays the reported, unfixed bugs in fuzz/regressions/*/open-* (none is open now)"]
fn open_bugs_are_fixed() {
    replay("regressions", true);
}
