//! Which transport a session speaks ([`Transport`]), what it takes to start a local server
//! ([`StdioCommand`]), and how stdio's one stream of bytes becomes messages ([`LineFramer`]).
//!
//! Over Streamable HTTP each leg is its own HTTP exchange. Over stdio every message goes down
//! the child's stdin as one line and every answer comes back on one shared stdout, one line
//! each; the operation matches answers to requests by id. The framer only splits and bounds
//! lines: it never decodes them (that is the operation's) and never reads a pipe (the driver's).

use std::collections::VecDeque;
use std::path::PathBuf;

/// How a session reaches its server.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// Over HTTP: each leg is an HTTP request. Streamable HTTP to the configured endpoint, or
    /// the HTTP+SSE transport of 2024-11-05 where the configuration's [`HttpTransport`] says
    /// so or finds it.
    StreamableHttp,
    /// stdio: the server is a child process the driver starts; each leg is one line written
    /// to its stdin, answers are lines read from its stdout.
    Stdio(StdioCommand),
}

/// A local MCP server to run: a program, its arguments, extra environment, working
/// directory. No shell is involved: the program is started directly with exactly these
/// arguments.
///
/// ```
/// use mcp_proto::StdioCommand;
/// let command = StdioCommand::new("uvx")
///     .arg("mcp-server-time")
///     .env("TZ", "UTC");
/// assert_eq!(command.program(), "uvx");
/// assert_eq!(command.arguments(), ["mcp-server-time"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioCommand {
    program: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
    current_dir: Option<PathBuf>,
}

impl StdioCommand {
    /// A command running `program` (looked up in `PATH` when it has no slash).
    pub fn new(program: impl Into<String>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
            env: Vec::new(),
            current_dir: None,
        }
    }

    /// Adds one argument, passed as it is.
    pub fn arg(mut self, arg: impl Into<String>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Adds arguments, passed as they are.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets an environment variable for the server (on top of this process's environment).
    pub fn env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    /// Runs the server in `dir`.
    pub fn current_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.current_dir = Some(dir.into());
        self
    }

    /// The program.
    pub fn program(&self) -> &str {
        &self.program
    }

    /// The arguments.
    pub fn arguments(&self) -> &[String] {
        &self.args
    }

    /// The extra environment.
    pub fn environment(&self) -> &[(String, String)] {
        &self.env
    }

    /// The working directory, if set.
    pub fn working_dir(&self) -> Option<&std::path::Path> {
        self.current_dir.as_deref()
    }

    /// The name errors call the server by: the program's file name.
    pub(crate) fn label(&self) -> String {
        let name = self
            .program
            .rsplit(['/', '\\'])
            .next()
            .filter(|n| !n.is_empty())
            .unwrap_or(&self.program);
        format!("stdio:{name}")
    }
}

/// Which HTTP transport a session speaks to its URL
/// ([`SessionConfig::with_http_transport`](crate::SessionConfig::with_http_transport)).
///
/// Streamable HTTP (2025-03-26 on) POSTs every message to the URL and reads each answer from
/// the POST's own response. The HTTP+SSE transport of 2024-11-05 (deprecated, still served:
/// the Python SDK's and FastMCP's `sse` transports, gateways) GETs the URL for an event stream
/// whose first event, `endpoint`, names where to POST; every answer comes on that one stream.
/// Over HTTP+SSE the session speaks the legacy era (a handshake, then the work).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum HttpTransport {
    /// Streamable HTTP first, and HTTP+SSE when the URL refuses it the way the spec's
    /// backwards-compatibility procedure names: the legacy `initialize` POST answered `400`,
    /// `404` or `405` with no JSON-RPC error in the body. The GET follows inside the same
    /// budget, and the session remembers the answer.
    #[default]
    Auto,
    /// Streamable HTTP only: a refused POST is the error.
    StreamableHttp,
    /// HTTP+SSE only: the first leg is the GET that opens the event stream.
    Sse,
}

impl HttpTransport {
    /// The name `--transport` takes: `auto`, `streamable-http` or `sse`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "auto",
            Self::StreamableHttp => "streamable-http",
            Self::Sse => "sse",
        }
    }
}

impl std::str::FromStr for HttpTransport {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "auto" => Ok(Self::Auto),
            "streamable-http" | "http" => Ok(Self::StreamableHttp),
            "sse" => Ok(Self::Sse),
            other => Err(format!(
                "\"{}\" is not a transport: auto, streamable-http or sse",
                other.escape_debug()
            )),
        }
    }
}

/// What the framer found in a chunk of stdout (or of an HTTP+SSE event stream).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Framed {
    /// One complete line (without its line ending; `\r\n` is accepted); over HTTP+SSE, one
    /// `message` event's data.
    Line(Vec<u8>),
    /// A line grew past the cap: it is dropped, up to its newline, without being kept.
    TooLong,
    /// Over HTTP+SSE: an `endpoint` event, its data as sent (not checked yet).
    Endpoint(String),
    /// Over HTTP+SSE: the stream broke its format (an event past the cap, a line that is not
    /// UTF-8); nothing more can be read from it.
    Broken(crate::sse::SseError),
}

/// Over HTTP+SSE: where the `endpoint` event's `data` says to POST, resolved against the
/// session's `url` (it is usually a path with a session query, `/messages/?session_id=...`).
/// The endpoint is the server's word, so it is held to the URL's origin (scheme, host and
/// port): an endpoint elsewhere would send the client's messages (and its token) to another
/// server. The error says why, with the server's text clipped.
pub(crate) fn resolve_endpoint(url: &str, data: &str) -> Result<http::Uri, String> {
    use mcp_auth::{QUOTE_LIMIT, clip};
    let quoted = || clip(data.trim(), QUOTE_LIMIT);
    let base = url::Url::parse(url).map_err(|_| "the session's URL does not parse".to_owned())?;
    let joined = base.join(data.trim()).map_err(|_| {
        format!(
            "the endpoint event named {:?}, which is not a URL",
            quoted()
        )
    })?;
    if joined.origin() != base.origin() {
        return Err(format!(
            "the endpoint event named {:?}, on another origin than the URL's (refused: the \
             messages and their credentials would go to another server)",
            quoted()
        ));
    }
    joined.as_str().parse().map_err(|_| {
        format!(
            "the endpoint event named {:?}, which is not a URL",
            quoted()
        )
    })
}

/// How the session's one stream is cut into messages (stdio's lines, or HTTP+SSE's events),
/// and the messages cut and not read yet. Kept by the session between operations (with any
/// partial line or event in it, and what an operation that ended left unread), lent to the
/// operation that runs.
#[derive(Debug)]
pub(crate) struct Framer {
    cut: Cut,
    /// Cut and not read yet, oldest first.
    pending: VecDeque<Framed>,
}

#[derive(Debug)]
enum Cut {
    /// stdio: one message a line.
    Lines(LineFramer),
    /// HTTP+SSE: one message an event.
    Events(EventFramer),
}

impl Framer {
    /// stdio's: lines of at most `cap` bytes.
    pub(crate) fn lines(cap: usize) -> Self {
        Self {
            cut: Cut::Lines(LineFramer::new(cap)),
            pending: VecDeque::new(),
        }
    }

    /// HTTP+SSE's: events of at most `cap` bytes.
    pub(crate) fn events(cap: usize) -> Self {
        Self {
            cut: Cut::Events(EventFramer::new(cap)),
            pending: VecDeque::new(),
        }
    }

    /// Feeds the next bytes; true when something is cut and not read yet.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> bool {
        match &mut self.cut {
            Cut::Lines(framer) => framer.feed(chunk, &mut self.pending),
            Cut::Events(framer) => framer.feed(chunk, &mut self.pending),
        }
        !self.pending.is_empty()
    }

    /// Whether what an operation that ended left unread is kept for the next (HTTP+SSE: the
    /// session's stream goes on) rather than skipped (stdio, as it always was).
    pub(crate) fn keeps_unread(&self) -> bool {
        matches!(self.cut, Cut::Events(_))
    }

    /// The operation it was lent to ended: over stdio the lines it left unread go with it (as
    /// they always did); over HTTP+SSE they are the next operation's.
    pub(crate) fn end_of_operation(&mut self) {
        if !self.keeps_unread() {
            self.pending.clear();
        }
    }

    /// Whether something is cut and not read yet.
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// The oldest message cut and not read yet.
    pub(crate) fn next(&mut self) -> Option<Framed> {
        self.pending.pop_front()
    }

    /// Puts back `item`, read by an operation that can no longer act on it: the next reads it.
    pub(crate) fn put_back(&mut self, item: Framed) {
        self.pending.push_front(item);
    }

    /// A fresh stream (a process started, a stream opened or ended): nothing of the last
    /// carries over.
    pub(crate) fn reset(&mut self) {
        match &mut self.cut {
            // Lines already cut are read as they always were.
            Cut::Lines(framer) => framer.reset(),
            Cut::Events(framer) => {
                self.pending.clear();
                *framer = EventFramer::new(framer.cap);
            }
        }
    }

    /// Over HTTP+SSE: whether the stream broke its format (nothing more is read from it).
    pub(crate) fn is_broken(&self) -> bool {
        matches!(&self.cut, Cut::Events(framer) if framer.broken)
    }
}

/// HTTP+SSE's one event stream, cut into what it carries: each `message` event (the default
/// type) is one JSON-RPC message, an `endpoint` event names where to POST, other events are
/// skipped. Bounded like the parser it wraps: one event of at most the cap.
#[derive(Debug)]
pub(crate) struct EventFramer {
    parser: crate::sse::SseParser,
    events: Vec<crate::sse::SseEvent>,
    broken: bool,
    cap: usize,
}

impl EventFramer {
    /// A framer whose events are at most `cap` bytes.
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            parser: crate::sse::SseParser::new(cap),
            events: Vec::new(),
            broken: false,
            cap,
        }
    }

    /// Feeds the next bytes of the stream (any split), pushing what they completed onto `out`;
    /// after a [`Framed::Broken`] nothing more.
    pub(crate) fn feed(&mut self, chunk: &[u8], out: &mut VecDeque<Framed>) {
        if self.broken {
            return;
        }
        let fed = self.parser.feed(chunk, &mut self.events);
        for event in self.events.drain(..) {
            match event.event.as_deref() {
                None | Some("message") if !event.data.trim().is_empty() => {
                    out.push_back(Framed::Line(event.data.into_bytes()));
                }
                Some("endpoint") => out.push_back(Framed::Endpoint(event.data)),
                _ => {}
            }
        }
        if let Err(error) = fed {
            self.broken = true;
            out.push_back(Framed::Broken(error));
        }
    }
}

/// Splits stdout into lines, each at most `cap` bytes. A line past the cap is reported once
/// and skipped to its end with bounded memory; blank lines are skipped.
#[derive(Debug)]
pub(crate) struct LineFramer {
    cap: usize,
    partial: Vec<u8>,
    skipping: bool,
}

impl LineFramer {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap,
            partial: Vec::new(),
            skipping: false,
        }
    }

    /// Feeds `chunk`; complete lines (and overlong ones) go to `out` in order.
    pub(crate) fn feed(&mut self, mut chunk: &[u8], out: &mut VecDeque<Framed>) {
        while !chunk.is_empty() {
            let newline = memchr::memchr(b'\n', chunk);
            let (piece, rest, ended) = match newline {
                Some(at) => (&chunk[..at], &chunk[at + 1..], true),
                None => (chunk, &[][..], false),
            };
            chunk = rest;
            if self.skipping {
                if ended {
                    self.skipping = false;
                }
                continue;
            }
            if self.partial.len().saturating_add(piece.len()) > self.cap.saturating_add(1) {
                // One byte of slack for the `\r` of a `\r\n` ending.
                self.partial.clear();
                self.skipping = !ended;
                out.push_back(Framed::TooLong);
                continue;
            }
            self.partial.extend_from_slice(piece);
            if ended {
                let mut line = std::mem::take(&mut self.partial);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.len() > self.cap {
                    out.push_back(Framed::TooLong);
                } else if !line.iter().all(u8::is_ascii_whitespace) {
                    out.push_back(Framed::Line(line));
                }
            }
        }
    }

    /// Forgets a partial line (the process that was writing it is gone).
    pub(crate) fn reset(&mut self) {
        self.partial.clear();
        self.skipping = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frame(cap: usize, chunks: &[&[u8]]) -> Vec<Framed> {
        let mut framer = LineFramer::new(cap);
        let mut out = VecDeque::new();
        for chunk in chunks {
            framer.feed(chunk, &mut out);
        }
        out.into()
    }

    fn line(text: &str) -> Framed {
        Framed::Line(text.as_bytes().to_vec())
    }

    #[test]
    fn lines_are_split_across_chunks_and_crlf_and_blank_lines_are_tolerated() {
        let out = frame(100, &[b"{\"a\"", b":1}\r\n\n  \n{\"b\":2}\n{\"c\""]);
        assert_eq!(out, [line(r#"{"a":1}"#), line(r#"{"b":2}"#)]);
    }

    #[test]
    fn an_overlong_line_is_reported_once_and_skipped_to_its_end() {
        let long = vec![b'x'; 50];
        let out = frame(10, &[&long, &long, b"tail\nok\n"]);
        assert_eq!(out, [Framed::TooLong, line("ok")]);
        let out = frame(3, &[b"abcd\nabc\n"]);
        assert_eq!(out, [Framed::TooLong, line("abc")]);
    }

    proptest! {
        #[test]
        fn any_split_of_the_stream_gives_the_same_lines(
            lines in proptest::collection::vec("[a-z{}:\"]{0,20}", 0..8),
            cuts in proptest::collection::vec(0usize..200, 0..6),
        ) {
            let mut stream = Vec::new();
            for l in &lines {
                stream.extend_from_slice(l.as_bytes());
                stream.push(b'\n');
            }
            let whole = frame(16, &[&stream]);
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(stream.len())).collect();
            cuts.sort_unstable();
            let mut pieces = Vec::new();
            let mut start = 0;
            for cut in cuts {
                pieces.push(&stream[start..cut]);
                start = cut;
            }
            pieces.push(&stream[start..]);
            prop_assert_eq!(frame(16, &pieces), whole);
        }

        #[test]
        fn memory_stays_within_the_cap(chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..32)) {
            let mut framer = LineFramer::new(20);
            let mut out = VecDeque::new();
            for chunk in &chunks {
                framer.feed(chunk, &mut out);
                prop_assert!(framer.partial.len() <= 21);
            }
            for framed in out {
                if let Framed::Line(l) = framed {
                    prop_assert!(l.len() <= 20);
                }
            }
        }
    }
}
