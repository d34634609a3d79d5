//! The fuzz targets of this workspace: one function per target, taking arbitrary bytes and
//! panicking **only** when an invariant of the code under test is violated (any input
//! whatsoever is otherwise fine).
//!
//! Two callers run the same functions: the cargo-fuzz crate in `fuzz/` (libFuzzer, nightly,
//! `fuzz/run.sh`), whose targets are one line each, and the corpus replay
//! (`fuzz/harness/tests/corpus_replay.rs`), which `cargo test` at the workspace root runs on
//! stable over every committed seed (`fuzz/corpus/<target>/`) and regression
//! (`fuzz/regressions/<target>/`). [`TARGETS`] is the list both follow.
//!
//! This crate must never depend on the test server (`mcp-testkit`) or a driver: a target
//! drives the sans-IO code with the fuzzer's bytes and nothing else, so libFuzzer builds it
//! quickly and every run is deterministic. (`mcp-driver-common`, whose connection policy the
//! `connect` target reads, is no driver: it does no I/O on a transport.)
//!
//! | module       | targets                                | code under test                          |
//! |--------------|----------------------------------------|------------------------------------------|
//! | `streamable` | [`sse`], [`answer`], [`operation`]     | `mcp-proto` over Streamable HTTP         |
//! | `stdio`      | [`stdio`]                              | `mcp-proto` over stdio, a fake process   |
//! | `http_sse`   | [`http_sse`]                           | `mcp-proto` over HTTP+SSE (2024-11-05): the event stream and its `endpoint` |
//! | `tasks`      | [`tasks`]                              | `mcp-proto`'s tasks, both eras, over HTTP |
//! | `auth`       | [`auth`]                               | `mcp-auth`'s `AuthFlow`                  |
//! | `connect`    | [`connect`]                            | `mcp-driver-common`'s reading of a `CONNECT` answer |
//! | `files`      | [`servers`], [`credentials`]           | `mcp-call`'s `--config` and credentials files |
//! | `bridge`     | [`bridge`]                             | `mcp-call bridge`'s reading of its host  |
//! | `schema`     | [`schema`]                             | `mcp-proto`'s `OutputSchema`: a tool's `outputSchema` and `structuredContent` |
//!
//! The byte layout of each target's input is documented on its function; `fuzz/seeds.py`
//! writes every target's seeds in those layouts.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod auth;
mod bridge;
mod bytes;
mod connect;
mod files;
mod http_sse;
mod schema;
mod stdio;
mod streamable;
mod tasks;

/// The operation's account of its legs, checked: every report names a leg it handed out, no
/// leg is reported twice, and by the result every leg handed out has been reported.
#[derive(Debug, Default)]
pub(crate) struct Reports(Vec<u32>);

impl Reports {
    /// `report` came, when `handed` legs had been handed out.
    pub(crate) fn saw(&mut self, report: &mcp_proto::LegReport, handed: u32) {
        let number = report.number;
        assert!(
            (1..=handed).contains(&number),
            "a report of leg {number}, of {handed} handed out"
        );
        assert!(!self.0.contains(&number), "leg {number} was reported twice");
        assert!(
            !report.grant.is_zero(),
            "leg {number} is reported granted zero"
        );
        self.0.push(number);
    }

    /// The result came, after `handed` legs.
    pub(crate) fn all(&self, handed: u32) {
        assert_eq!(
            self.0.len(),
            handed as usize,
            "{handed} legs handed out, {} reported before the result",
            self.0.len()
        );
    }
}

pub use auth::auth;
pub use bridge::bridge;
pub use connect::{CONNECT_HEAD_LIMIT, connect};
pub use files::{credentials, servers};
pub use http_sse::{HTTP_SSE_BODY_CAPS, http_sse};
pub use schema::schema;
pub use stdio::{STDIO_BODY_CAPS, stdio};
pub use streamable::{
    ANSWER_BODY_CAP, MAX_FED, MAX_INPUTS, OPERATION_BODY_CAP, SSE_LIMITS, answer, operation, sse,
};
pub use tasks::tasks;

/// A fuzz target: it panics only on an invariant violation.
pub type Target = fn(&[u8]);

/// Every target by name, as `fuzz/Cargo.toml` names its `[[bin]]`s and `fuzz/corpus/` and
/// `fuzz/regressions/` name their directories.
pub const TARGETS: &[(&str, Target)] = &[
    ("sse", sse),
    ("answer", answer),
    ("operation", operation),
    ("stdio", stdio),
    ("auth", auth),
    ("connect", connect),
    ("servers", servers),
    ("credentials", credentials),
    ("tasks", tasks),
    ("bridge", bridge),
    ("schema", schema),
    ("http_sse", http_sse),
];
