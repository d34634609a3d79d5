//! Hand-written HTTP/1.1 wire handling: request parsing and response writing.
//!
//! Everything here is defensive: malformed input turns into a [`ReadError::Bad`]
//! carrying the status to answer with, never into a panic.

use std::io::{self, BufRead, Write};

/// Largest accepted request head (request line plus headers), in bytes.
pub(crate) const MAX_HEAD_BYTES: usize = 64 * 1024;
/// Largest accepted request body, in bytes.
pub(crate) const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;
/// Largest accepted chunk-size line (with extensions) in a chunked body.
const MAX_CHUNK_LINE: usize = 4096;

/// A fully read HTTP request.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    /// HTTP method, e.g. `POST`.
    pub(crate) method: String,
    /// Request target exactly as sent, e.g. `/mcp?x=1`.
    pub(crate) target: String,
    /// `true` for `HTTP/1.0` requests.
    pub(crate) http10: bool,
    /// Headers in arrival order, names lower-cased.
    pub(crate) headers: Vec<(String, String)>,
    /// Decoded body bytes (chunked framing removed).
    pub(crate) body: Vec<u8>,
}

impl Request {
    /// First value of the header `name` (give it lower-cased).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path part of the target (without the query string).
    pub(crate) fn path(&self) -> &str {
        match self.target.find('?') {
            Some(i) => &self.target[..i],
            None => &self.target,
        }
    }

    /// Whether the connection must be closed after answering this request.
    pub(crate) fn wants_close(&self) -> bool {
        let mut close = self.http10;
        for (name, value) in &self.headers {
            if name != "connection" {
                continue;
            }
            for token in value.split(',') {
                let token = token.trim();
                if token.eq_ignore_ascii_case("close") {
                    return true;
                }
                if token.eq_ignore_ascii_case("keep-alive") {
                    close = false;
                }
            }
        }
        close
    }
}

/// Why no request could be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The client closed the connection cleanly between requests.
    Closed,
    /// The connection broke (or the server is shutting down).
    Io,
    /// The request is malformed or too large: answer `status` and close.
    Bad {
        /// Status code to answer with (400 or 413).
        status: u16,
        /// Short human-readable reason, sent as the body.
        message: &'static str,
    },
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> Self {
        Self::Io
    }
}

const fn bad(status: u16, message: &'static str) -> ReadError {
    ReadError::Bad { status, message }
}

/// Reads one line ending in `\n` (the terminator, and a `\r` before it, are
/// stripped), charging its length against `budget`.
///
/// Returns `Ok(false)` on end of stream before any byte of the line.
fn read_line<R: BufRead>(
    r: &mut R,
    out: &mut Vec<u8>,
    budget: &mut usize,
    too_long: ReadError,
) -> Result<bool, ReadError> {
    out.clear();
    loop {
        let buf = match r.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(ReadError::Io),
        };
        if buf.is_empty() {
            if out.is_empty() {
                return Ok(false);
            }
            return Err(ReadError::Io);
        }
        let (take, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if take > *budget {
            return Err(too_long);
        }
        *budget -= take;
        out.extend_from_slice(&buf[..take]);
        r.consume(take);
        if done {
            out.pop();
            if out.last() == Some(&b'\r') {
                out.pop();
            }
            return Ok(true);
        }
    }
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn is_token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(is_tchar)
}

/// Reads one request from `r`. `w` is used only to send `100 Continue`.
pub(crate) fn read_request<R: BufRead, W: Write>(
    r: &mut R,
    w: &mut W,
) -> Result<Request, ReadError> {
    let mut budget = MAX_HEAD_BYTES;
    let mut line = Vec::new();
    let head_too_large = || bad(400, "request head too large");

    // Request line; tolerate empty lines before it (RFC 9112 section 2.2).
    loop {
        if !read_line(r, &mut line, &mut budget, head_too_large())? {
            return Err(ReadError::Closed);
        }
        if !line.is_empty() {
            break;
        }
    }
    let request_line = std::str::from_utf8(&line).map_err(|_| bad(400, "bad request line"))?;
    let mut parts = request_line.split(' ');
    let (method, target, version) = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v), None) => (m, t, v),
        _ => return Err(bad(400, "bad request line")),
    };
    if !is_token(method) {
        return Err(bad(400, "bad method"));
    }
    if target.is_empty() || target.bytes().any(|b| b.is_ascii_control() || b == b' ') {
        return Err(bad(400, "bad request target"));
    }
    let http10 = match version {
        "HTTP/1.1" => false,
        "HTTP/1.0" => true,
        _ => return Err(bad(400, "unsupported HTTP version")),
    };
    let method = method.to_owned();
    let target = target.to_owned();

    // Header fields.
    let mut headers = Vec::new();
    loop {
        if !read_line(r, &mut line, &mut budget, head_too_large())? {
            return Err(ReadError::Io);
        }
        if line.is_empty() {
            break;
        }
        if line[0] == b' ' || line[0] == b'\t' {
            return Err(bad(400, "obsolete header folding"));
        }
        let colon = line
            .iter()
            .position(|&b| b == b':')
            .ok_or_else(|| bad(400, "bad header line"))?;
        let name = std::str::from_utf8(&line[..colon]).map_err(|_| bad(400, "bad header name"))?;
        if !is_token(name) {
            return Err(bad(400, "bad header name"));
        }
        let value = &line[colon + 1..];
        if value.iter().any(|&b| b == 0 || b == b'\r' || b == b'\n') {
            return Err(bad(400, "bad header value"));
        }
        let value = String::from_utf8_lossy(value)
            .trim_matches([' ', '\t'])
            .to_owned();
        headers.push((name.to_ascii_lowercase(), value));
    }

    let mut req = Request {
        method,
        target,
        http10,
        headers,
        body: Vec::new(),
    };
    read_body(r, w, &mut req)?;
    Ok(req)
}

fn send_continue<W: Write>(w: &mut W, req: &Request) -> Result<(), ReadError> {
    let wants = req
        .header("expect")
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"));
    if wants && !req.http10 {
        w.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        w.flush()?;
    }
    Ok(())
}

fn read_body<R: BufRead, W: Write>(
    r: &mut R,
    w: &mut W,
    req: &mut Request,
) -> Result<(), ReadError> {
    let transfer_encodings: Vec<String> = req
        .headers
        .iter()
        .filter(|(n, _)| n == "transfer-encoding")
        .flat_map(|(_, v)| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .filter(|t| !t.is_empty())
        .collect();
    let has_te = req.headers.iter().any(|(n, _)| n == "transfer-encoding");
    let lengths: Vec<&str> = req
        .headers
        .iter()
        .filter(|(n, _)| n == "content-length")
        .flat_map(|(_, v)| v.split(','))
        .map(str::trim)
        .collect();

    if has_te {
        if !lengths.is_empty() {
            return Err(bad(400, "both Transfer-Encoding and Content-Length"));
        }
        if transfer_encodings != ["chunked"] {
            return Err(bad(400, "unsupported Transfer-Encoding"));
        }
        send_continue(w, req)?;
        req.body = read_chunked(r)?;
        return Ok(());
    }
    if lengths.is_empty() {
        return Ok(());
    }
    let first = lengths[0];
    if lengths.iter().any(|l| *l != first) {
        return Err(bad(400, "conflicting Content-Length"));
    }
    if first.is_empty() || first.len() > 19 || !first.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad(400, "bad Content-Length"));
    }
    let len: u64 = first.parse().map_err(|_| bad(400, "bad Content-Length"))?;
    if len > MAX_BODY_BYTES as u64 {
        return Err(bad(413, "request body too large"));
    }
    if len > 0 {
        send_continue(w, req)?;
    }
    // `len` is at most MAX_BODY_BYTES, so it fits in usize.
    let mut body = vec![0u8; len as usize];
    r.read_exact(&mut body)?;
    req.body = body;
    Ok(())
}

fn read_chunked<R: BufRead>(r: &mut R) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    let mut line = Vec::new();
    loop {
        let mut budget = MAX_CHUNK_LINE;
        if !read_line(r, &mut line, &mut budget, bad(400, "chunk line too long"))? {
            return Err(ReadError::Io);
        }
        let size_end = line.iter().position(|&b| b == b';').unwrap_or(line.len());
        let size_text = std::str::from_utf8(&line[..size_end])
            .map_err(|_| bad(400, "bad chunk size"))?
            .trim_matches([' ', '\t']);
        if size_text.is_empty()
            || size_text.len() > 16
            || !size_text.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Err(bad(400, "bad chunk size"));
        }
        let size = u64::from_str_radix(size_text, 16).map_err(|_| bad(400, "bad chunk size"))?;
        if size == 0 {
            // Trailer section, discarded.
            let mut trailer_budget = MAX_HEAD_BYTES;
            loop {
                if !read_line(
                    r,
                    &mut line,
                    &mut trailer_budget,
                    bad(400, "trailers too large"),
                )? {
                    return Err(ReadError::Io);
                }
                if line.is_empty() {
                    return Ok(body);
                }
            }
        }
        if size > (MAX_BODY_BYTES - body.len()) as u64 {
            return Err(bad(413, "request body too large"));
        }
        let start = body.len();
        // Bounded by MAX_BODY_BYTES above.
        body.resize(start + size as usize, 0);
        r.read_exact(&mut body[start..])?;
        let mut budget = 2;
        if !read_line(r, &mut line, &mut budget, bad(400, "bad chunk terminator"))?
            || !line.is_empty()
        {
            return Err(bad(400, "bad chunk terminator"));
        }
    }
}

/// Standard reason phrase for `status` (a generic one for unknown codes).
pub(crate) fn reason_phrase(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    }
}

/// How a response body is delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// `Content-Length: n`.
    Length(u64),
    /// `Transfer-Encoding: chunked`.
    Chunked,
    /// The body ends when the connection closes (HTTP/1.0 streaming).
    CloseDelimited,
}

/// Writes a status line and headers. `headers` values are written verbatim
/// (raw bytes, so a test can send deliberately broken values).
pub(crate) fn write_head<W: Write>(
    w: &mut W,
    status: u16,
    headers: &[(String, Vec<u8>)],
    framing: Framing,
    close: bool,
) -> io::Result<()> {
    let mut head = Vec::with_capacity(256);
    head.extend_from_slice(format!("HTTP/1.1 {status} {}\r\n", reason_phrase(status)).as_bytes());
    for (name, value) in headers {
        head.extend_from_slice(name.as_bytes());
        head.extend_from_slice(b": ");
        head.extend_from_slice(value);
        head.extend_from_slice(b"\r\n");
    }
    match framing {
        Framing::Length(n) => head.extend_from_slice(format!("Content-Length: {n}\r\n").as_bytes()),
        Framing::Chunked => head.extend_from_slice(b"Transfer-Encoding: chunked\r\n"),
        Framing::CloseDelimited => {}
    }
    if close || framing == Framing::CloseDelimited {
        head.extend_from_slice(b"Connection: close\r\n");
    }
    head.extend_from_slice(b"\r\n");
    w.write_all(&head)?;
    w.flush()
}

/// A complete (non-streamed) response.
#[derive(Debug, Clone)]
pub(crate) struct Response {
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
}

impl Response {
    /// A response with `status`, no headers and an empty body.
    pub(crate) const fn new(status: u16) -> Self {
        Self {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// Adds a header (value written verbatim).
    pub(crate) fn header(mut self, name: &str, value: impl Into<Vec<u8>>) -> Self {
        self.headers.push((name.to_owned(), value.into()));
        self
    }

    /// Sets the body and its `Content-Type`.
    pub(crate) fn body(mut self, content_type: &str, body: impl Into<Vec<u8>>) -> Self {
        self.headers
            .push(("Content-Type".to_owned(), content_type.as_bytes().to_vec()));
        self.body = body.into();
        self
    }

    /// A `text/plain` response.
    pub(crate) fn text(status: u16, text: &str) -> Self {
        Self::new(status).body("text/plain; charset=utf-8", format!("{text}\n"))
    }

    /// Writes the whole response with a `Content-Length` in one go.
    pub(crate) fn write_to<W: Write>(&self, w: &mut W, close: bool) -> io::Result<()> {
        let mut out = Vec::with_capacity(256 + self.body.len());
        write_head(
            &mut out,
            self.status,
            &self.headers,
            Framing::Length(self.body.len() as u64),
            close,
        )?;
        out.extend_from_slice(&self.body);
        w.write_all(&out)?;
        w.flush()
    }
}

/// Writes a streamed body according to its [`Framing`].
#[derive(Debug)]
pub(crate) struct BodyWriter<'a, W: Write> {
    w: &'a mut W,
    chunked: bool,
}

impl<'a, W: Write> BodyWriter<'a, W> {
    /// Writes the head with chunked (or, for HTTP/1.0, close-delimited)
    /// framing and returns a writer for the body.
    pub(crate) fn start(
        w: &'a mut W,
        status: u16,
        headers: &[(String, Vec<u8>)],
        http10: bool,
        close: bool,
    ) -> io::Result<Self> {
        let framing = if http10 {
            Framing::CloseDelimited
        } else {
            Framing::Chunked
        };
        write_head(w, status, headers, framing, close)?;
        Ok(Self {
            w,
            chunked: !http10,
        })
    }

    /// Sends `data` (one chunk when chunked; empty data sends nothing).
    pub(crate) fn send(&mut self, data: &[u8]) -> io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        if self.chunked {
            let mut out = Vec::with_capacity(data.len() + 16);
            out.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
            out.extend_from_slice(data);
            out.extend_from_slice(b"\r\n");
            self.w.write_all(&out)?;
        } else {
            self.w.write_all(data)?;
        }
        self.w.flush()
    }

    /// Ends the body (the terminating chunk when chunked).
    pub(crate) fn finish(self) -> io::Result<()> {
        if self.chunked {
            self.w.write_all(b"0\r\n\r\n")?;
        }
        self.w.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(raw: &[u8]) -> Result<Request, ReadError> {
        let mut r = io::BufReader::new(raw);
        let mut sink = Vec::new();
        read_request(&mut r, &mut sink)
    }

    fn status_of(res: Result<Request, ReadError>) -> u16 {
        match res {
            Err(ReadError::Bad { status, .. }) => status,
            other => panic!("expected a Bad error, got {other:?}"),
        }
    }

    #[test]
    fn parses_content_length_request() {
        let req = parse(
            b"POST /mcp?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nX-Thing:  v \r\n\r\n{}",
        )
        .unwrap();
        assert_eq!(req.method, "POST");
        assert_eq!(req.path(), "/mcp");
        assert_eq!(req.header("x-thing"), Some("v"));
        assert_eq!(req.body, b"{}");
        assert!(!req.wants_close());
    }

    #[test]
    fn parses_chunked_request_with_trailers() {
        let req = parse(b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n")
            .unwrap();
        assert_eq!(req.body, b"abcde");
    }

    #[test]
    fn rejects_malformed_input() {
        assert_eq!(status_of(parse(b"GARBAGE\r\n\r\n")), 400);
        assert_eq!(status_of(parse(b"GET / HTTP/2.0\r\n\r\n")), 400);
        assert_eq!(status_of(parse(b"GET / HTTP/1.1\r\nNoColon\r\n\r\n")), 400);
        assert_eq!(status_of(parse(b"GET / HTTP/1.1\r\n folded\r\n\r\n")), 400);
        assert_eq!(
            status_of(parse(b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n")),
            400
        );
        assert_eq!(
            status_of(parse(
                b"POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"
            )),
            400
        );
        assert_eq!(
            status_of(parse(
                b"POST / HTTP/1.1\r\nContent-Length: 99999999999\r\n\r\n"
            )),
            413
        );
        assert_eq!(
            status_of(parse(b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n")),
            400
        );
        assert_eq!(
            status_of(parse(
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
            )),
            400
        );
        assert_eq!(
            status_of(parse(
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n0\r\n\r\n"
            )),
            400
        );
        assert_eq!(
            status_of(parse(
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nFFFFFFFF\r\n"
            )),
            413
        );
        let mut huge = b"GET / HTTP/1.1\r\nX: ".to_vec();
        huge.extend(std::iter::repeat_n(b'a', MAX_HEAD_BYTES));
        huge.extend_from_slice(b"\r\n\r\n");
        assert_eq!(status_of(parse(&huge)), 400);
    }

    #[test]
    fn eof_before_request_is_closed() {
        assert!(matches!(parse(b""), Err(ReadError::Closed)));
        assert!(matches!(parse(b"\r\n"), Err(ReadError::Closed)));
        assert!(matches!(parse(b"GET / HT"), Err(ReadError::Io)));
    }

    #[test]
    fn connection_semantics() {
        assert!(
            parse(b"GET / HTTP/1.1\r\nConnection: keep-alive, close\r\n\r\n")
                .unwrap()
                .wants_close()
        );
        assert!(parse(b"GET / HTTP/1.0\r\n\r\n").unwrap().wants_close());
        assert!(
            !parse(b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
                .unwrap()
                .wants_close()
        );
    }

    #[test]
    fn chunked_writer_frames_data() {
        let mut out = Vec::new();
        let mut body = BodyWriter::start(&mut out, 200, &[], false, false).unwrap();
        body.send(b"hello").unwrap();
        body.send(b"").unwrap();
        body.finish().unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"));
        assert!(text.ends_with("5\r\nhello\r\n0\r\n\r\n"));
    }
}
