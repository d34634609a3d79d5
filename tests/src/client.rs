//! A tiny blocking HTTP/1.1 client over [`std::net::TcpStream`], to poke the
//! test server (or any server) at the wire level in tests.
//!
//! It is deliberately simple and lenient: it sends what it is told and reads
//! what comes back, with a read timeout (10 s unless changed) so that a test
//! can never hang.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Read timeout set by [`RawClient::connect`].
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A response read by [`RawClient`].
#[derive(Debug, Clone, Default)]
pub struct RawResponse {
    /// Status code.
    pub status: u16,
    /// Reason phrase.
    pub reason: String,
    /// Headers in order, names lower-cased, values decoded lossily.
    pub headers: Vec<(String, String)>,
    /// The raw bytes of the head (status line and headers, final CRLF included).
    pub head: Vec<u8>,
    /// The body, framing removed (empty after [`RawClient::read_head`]).
    pub body: Vec<u8>,
}

impl RawResponse {
    /// First value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body parsed as JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// Whether the body is chunked.
    pub fn is_chunked(&self) -> bool {
        self.header("transfer-encoding")
            .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"))
    }

    /// The body parsed as SSE events.
    pub fn sse_events(&self) -> Vec<SseEvent> {
        parse_sse(&self.body)
    }

    /// The JSON data of the SSE events that have non-empty data.
    pub fn sse_messages(&self) -> Vec<Value> {
        self.sse_events()
            .iter()
            .filter_map(|e| e.data.as_deref())
            .filter(|d| !d.is_empty())
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect()
    }
}

/// One server-sent event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `id:` field.
    pub id: Option<String>,
    /// The `event:` field.
    pub event: Option<String>,
    /// The `data:` lines joined with `\n` (`None` when there was no data line).
    pub data: Option<String>,
    /// The `retry:` field.
    pub retry: Option<u64>,
}

/// Parses an SSE stream into events (comments are skipped; an event with any
/// field is returned, even with empty data).
pub fn parse_sse(bytes: &[u8]) -> Vec<SseEvent> {
    let text = String::from_utf8_lossy(bytes);
    let mut events = Vec::new();
    let mut current = SseEvent::default();
    let mut has_field = false;
    for line in text.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() {
            if has_field {
                events.push(std::mem::take(&mut current));
                has_field = false;
            }
            continue;
        }
        if line.starts_with(':') {
            continue;
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (line, ""),
        };
        has_field = true;
        match field {
            "id" => current.id = Some(value.to_owned()),
            "event" => current.event = Some(value.to_owned()),
            "retry" => current.retry = value.parse().ok(),
            "data" => match &mut current.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => current.data = Some(value.to_owned()),
            },
            _ => {}
        }
    }
    events
}

/// Decodes a chunked body that is complete in `raw` (lenient: stops at the
/// first malformed piece).
pub fn decode_chunked(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut rest = raw;
    while let Some(eol) = rest.windows(2).position(|w| w == b"\r\n") {
        let line = String::from_utf8_lossy(&rest[..eol]);
        let size_text = line.split(';').next().unwrap_or("").trim();
        let Ok(size) = usize::from_str_radix(size_text, 16) else {
            break;
        };
        rest = &rest[eol + 2..];
        if size == 0 || rest.len() < size {
            out.extend_from_slice(&rest[..size.min(rest.len())]);
            break;
        }
        out.extend_from_slice(&rest[..size]);
        rest = rest.get(size + 2..).unwrap_or(&[]);
    }
    out
}

/// A blocking HTTP/1.1 connection.
#[derive(Debug)]
pub struct RawClient {
    reader: BufReader<TcpStream>,
    host: String,
}

fn invalid(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_owned())
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

impl RawClient {
    /// Connects to `addr` with a read timeout of [`DEFAULT_READ_TIMEOUT`].
    pub fn connect(addr: SocketAddr) -> io::Result<Self> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(DEFAULT_READ_TIMEOUT))?;
        Ok(Self {
            reader: BufReader::new(stream),
            host: addr.to_string(),
        })
    }

    /// The underlying stream.
    pub fn stream(&self) -> &TcpStream {
        self.reader.get_ref()
    }

    /// Sets the read timeout (`None`: block forever).
    pub fn set_read_timeout(&self, timeout: Option<Duration>) -> io::Result<()> {
        self.stream().set_read_timeout(timeout)
    }

    /// Sends raw bytes.
    pub fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        let mut stream = self.reader.get_ref();
        stream.write_all(bytes)?;
        stream.flush()
    }

    /// Half-closes the connection (no more requests).
    pub fn shutdown_write(&self) -> io::Result<()> {
        self.stream().shutdown(Shutdown::Write)
    }

    /// Sends a request with a `Content-Length` body. `Host` and
    /// `Content-Length` are added; `headers` are sent as given.
    pub fn send_request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<()> {
        let mut out = format!("{method} {path} HTTP/1.1\r\nHost: {}\r\n", self.host);
        for (name, value) in headers {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            out.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(body);
        self.send_raw(&bytes)
    }

    /// Sends a request and reads the whole response.
    pub fn request(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> io::Result<RawResponse> {
        self.send_request(method, path, headers, body)?;
        self.read_response()
    }

    /// POSTs a JSON body to `/mcp` with `Content-Type: application/json` and
    /// `Accept: application/json, text/event-stream` plus `headers`, and reads
    /// the whole response.
    pub fn post_json(&mut self, body: &str, headers: &[(&str, &str)]) -> io::Result<RawResponse> {
        let mut all = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        all.extend_from_slice(headers);
        self.request("POST", "/mcp", &all, body.as_bytes())
    }

    /// Sends `initialize` then `notifications/initialized`; returns the
    /// session id the server gave, if any.
    pub fn initialize(&mut self) -> io::Result<Option<String>> {
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
        let resp = self.post_json(init, &[])?;
        if resp.status != 200 {
            return Err(invalid(&format!("initialize answered {}", resp.status)));
        }
        let session = resp.header("mcp-session-id").map(str::to_owned);
        let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let headers: Vec<(&str, &str)> = session
            .iter()
            .map(|s| ("Mcp-Session-Id", s.as_str()))
            .collect();
        self.post_json(note, &headers)?;
        Ok(session)
    }

    fn read_line(&mut self, out: &mut Vec<u8>) -> io::Result<()> {
        out.clear();
        let n = self.reader.read_until(b'\n', out)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        Ok(())
    }

    /// Reads a response head (status line and headers), skipping `1xx`
    /// interim responses. The body is left unread.
    pub fn read_head(&mut self) -> io::Result<RawResponse> {
        loop {
            let mut resp = RawResponse::default();
            let mut line = Vec::new();
            self.read_line(&mut line)?;
            resp.head.extend_from_slice(&line);
            let status_line = String::from_utf8_lossy(&line).trim_end().to_owned();
            let mut parts = status_line.splitn(3, ' ');
            let _version = parts.next();
            resp.status = parts
                .next()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| invalid("bad status line"))?;
            resp.reason = parts.next().unwrap_or("").to_owned();
            loop {
                self.read_line(&mut line)?;
                resp.head.extend_from_slice(&line);
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end_matches(['\r', '\n']);
                if text.is_empty() {
                    break;
                }
                if let Some((name, value)) = text.split_once(':') {
                    resp.headers
                        .push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
                }
            }
            if !(100..200).contains(&resp.status) {
                return Ok(resp);
            }
        }
    }

    /// Reads the body of a response whose head was read by
    /// [`RawClient::read_head`] (chunked, `Content-Length` or until close).
    pub fn read_body(&mut self, head: &RawResponse) -> io::Result<Vec<u8>> {
        if head.status == 204 || head.status == 304 {
            return Ok(Vec::new());
        }
        let mut body = Vec::new();
        if head.is_chunked() {
            let mut line = Vec::new();
            loop {
                self.read_line(&mut line)?;
                let text = String::from_utf8_lossy(&line);
                let size_text = text.split(';').next().unwrap_or("").trim();
                let size =
                    usize::from_str_radix(size_text, 16).map_err(|_| invalid("bad chunk size"))?;
                if size == 0 {
                    loop {
                        self.read_line(&mut line)?;
                        if line == b"\r\n" || line == b"\n" {
                            return Ok(body);
                        }
                    }
                }
                let start = body.len();
                body.resize(start + size, 0);
                self.reader.read_exact(&mut body[start..])?;
                self.read_line(&mut line)?;
            }
        }
        if let Some(len) = head.header("content-length") {
            let len: usize = len
                .trim()
                .parse()
                .map_err(|_| invalid("bad Content-Length"))?;
            body.resize(len, 0);
            self.reader.read_exact(&mut body)?;
            return Ok(body);
        }
        self.reader.read_to_end(&mut body)?;
        Ok(body)
    }

    /// Reads one whole response.
    pub fn read_response(&mut self) -> io::Result<RawResponse> {
        let mut resp = self.read_head()?;
        resp.body = self.read_body(&resp)?;
        Ok(resp)
    }

    /// Reads whatever raw bytes (framing included) arrive within `duration`,
    /// stopping early at end of stream.
    pub fn read_raw_for(&mut self, duration: Duration) -> io::Result<Vec<u8>> {
        let deadline = Instant::now() + duration;
        let previous = self.stream().read_timeout()?;
        let mut out = Vec::new();
        let result = loop {
            let now = Instant::now();
            if now >= deadline {
                break Ok(());
            }
            let wait = (deadline - now).max(Duration::from_millis(1));
            if let Err(e) = self.stream().set_read_timeout(Some(wait)) {
                break Err(e);
            }
            match self.reader.fill_buf() {
                Ok([]) => break Ok(()),
                Ok(buf) => {
                    let n = buf.len();
                    out.extend_from_slice(buf);
                    self.reader.consume(n);
                }
                Err(e) if is_timeout(&e) => break Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        self.stream().set_read_timeout(previous)?;
        result.map(|()| out)
    }

    /// Reads raw bytes (framing included) until those read contain `needle`,
    /// the stream ends or `within` is over; returns what was read.
    pub fn read_raw_until(&mut self, needle: &[u8], within: Duration) -> io::Result<Vec<u8>> {
        let deadline = Instant::now() + within;
        let previous = self.stream().read_timeout()?;
        let mut out = Vec::new();
        let found =
            |out: &[u8]| needle.is_empty() || out.windows(needle.len()).any(|w| w == needle);
        let result = loop {
            if found(&out) {
                break Ok(());
            }
            let now = Instant::now();
            if now >= deadline {
                break Ok(());
            }
            let wait = (deadline - now).max(Duration::from_millis(1));
            if let Err(e) = self.stream().set_read_timeout(Some(wait)) {
                break Err(e);
            }
            match self.reader.fill_buf() {
                Ok([]) => break Ok(()),
                Ok(buf) => {
                    let n = buf.len();
                    out.extend_from_slice(buf);
                    self.reader.consume(n);
                }
                Err(e) if is_timeout(&e) => break Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        self.stream().set_read_timeout(previous)?;
        result.map(|()| out)
    }

    /// Waits up to `within` for the server to close the connection (bytes
    /// arriving meanwhile are discarded). `true` if it closed (or reset).
    pub fn wait_closed(&mut self, within: Duration) -> io::Result<bool> {
        let deadline = Instant::now() + within;
        let previous = self.stream().read_timeout()?;
        let result = loop {
            let now = Instant::now();
            if now >= deadline {
                break false;
            }
            let wait = (deadline - now).max(Duration::from_millis(1));
            if self.stream().set_read_timeout(Some(wait)).is_err() {
                break true;
            }
            match self.reader.fill_buf() {
                Ok([]) => break true,
                Ok(buf) => {
                    let n = buf.len();
                    self.reader.consume(n);
                }
                Err(e) if is_timeout(&e) => break false,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break true,
            }
        };
        let _ = self.stream().set_read_timeout(previous);
        Ok(result)
    }
}

/// Opens a fresh connection to `addr`, POSTs `body` to `/mcp` (see
/// [`RawClient::post_json`]) and reads the response.
pub fn post_json(
    addr: SocketAddr,
    body: &str,
    headers: &[(&str, &str)],
) -> io::Result<RawResponse> {
    RawClient::connect(addr)?.post_json(body, headers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sse() {
        let events =
            parse_sse(b": c\nid: 0\ndata:\n\nevent: message\ndata: a\ndata: b\n\nretry: 5\r\n\r\n");
        assert_eq!(events.len(), 3);
        assert_eq!(events[0].id.as_deref(), Some("0"));
        assert_eq!(events[0].data.as_deref(), Some(""));
        assert_eq!(events[1].data.as_deref(), Some("a\nb"));
        assert_eq!(events[2].retry, Some(5));
    }

    #[test]
    fn decodes_chunked() {
        assert_eq!(
            decode_chunked(b"3\r\nabc\r\n1;x\r\nd\r\n0\r\n\r\n"),
            b"abcd"
        );
        assert_eq!(decode_chunked(b"5\r\nab"), b"ab");
    }
}
