//! An incremental parser for `text/event-stream` bodies.
//!
//! Bytes go in as they arrive, split anywhere (even inside a CRLF or a UTF-8 sequence); whole
//! events come out. Lines end in CRLF, CR or LF; `:` lines are comments; `data:` lines join with
//! `\n`; `id:` and `retry:` are remembered for resumption; a blank line dispatches the event.
//! An event with an `id:` and empty `data:` (a priming event) is dispatched with empty data so
//! that the caller sees it; the caller decides to skip it.
//!
//! The parser holds at most one event: its memory is bounded by the `max_event_size` it was
//! built with, and a longer event (or a line that never ends) is an error rather than growth.
//! It does no I/O and never panics on any input.

use std::time::Duration;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` type, `None` for the default (`message`).
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last event id in force when the event was dispatched.
    pub id: Option<String>,
}

/// Why a stream could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// One event (or one line) grew past the parser's limit.
    #[error("an event-stream event exceeded {limit} bytes")]
    EventTooLarge {
        /// The configured limit in bytes.
        limit: usize,
    },
    /// A line was not valid UTF-8.
    #[error("an event-stream line was not valid UTF-8")]
    InvalidUtf8,
}

/// The incremental event-stream parser. See the [module docs](self).
///
/// ```
/// use mcp_proto::sse::SseParser;
///
/// let mut parser = SseParser::new(1 << 20);
/// let mut events = Vec::new();
/// parser.feed(b"id: 7\r\nretry: 500\r\ndata: {\"a\":", &mut events).unwrap();
/// assert!(events.is_empty());
/// parser.feed(b"1}\r\n\r\n", &mut events).unwrap();
/// assert_eq!(events[0].data, r#"{"a":1}"#);
/// assert_eq!(parser.last_event_id(), Some("7"));
/// assert_eq!(parser.retry(), Some(std::time::Duration::from_millis(500)));
/// ```
#[derive(Debug, Clone)]
pub struct SseParser {
    max_event_size: usize,
    /// Bytes of the line being read (without its terminator).
    line: Vec<u8>,
    /// The previous chunk ended in CR: a leading LF in the next chunk belongs to it.
    after_cr: bool,
    /// No line has been completed yet (a UTF-8 BOM may open the stream).
    at_start: bool,
    data: String,
    has_data: bool,
    event_type: Option<String>,
    last_event_id: Option<String>,
    retry: Option<Duration>,
    /// Bytes accounted to the event being built (its lines so far).
    event_bytes: usize,
    failed: Option<SseError>,
}

impl SseParser {
    /// A parser that refuses any event larger than `max_event_size` bytes.
    pub fn new(max_event_size: usize) -> Self {
        Self {
            max_event_size,
            line: Vec::new(),
            after_cr: false,
            at_start: true,
            data: String::new(),
            has_data: false,
            event_type: None,
            last_event_id: None,
            retry: None,
            event_bytes: 0,
            failed: None,
        }
    }

    /// The last event id the stream set (for `Last-Event-ID` on resumption).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The reconnection delay the stream asked for with `retry:`.
    pub fn retry(&self) -> Option<Duration> {
        self.retry
    }

    /// Feeds the next bytes of the stream, pushing every event they complete onto `events`.
    ///
    /// After an error the parser stays failed and returns the same error on every call.
    pub fn feed(&mut self, mut input: &[u8], events: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        if self.after_cr && !input.is_empty() {
            self.after_cr = false;
            if let Some(rest) = input.strip_prefix(b"\n") {
                input = rest;
            }
        }
        while let Some(end) = memchr::memchr2(b'\n', b'\r', input) {
            if let Err(err) = self.take_line_part(&input[..end]) {
                return Err(self.fail(err));
            }
            if let Err(err) = self.end_line(events) {
                return Err(self.fail(err));
            }
            let was_cr = input[end] == b'\r';
            input = &input[end + 1..];
            if was_cr {
                match input.first() {
                    Some(b'\n') => input = &input[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        if let Err(err) = self.take_line_part(input) {
            return Err(self.fail(err));
        }
        Ok(())
    }

    /// Ends the stream: an unterminated last line and an undispatched last event still count
    /// (a server that closes without the final blank line has still sent its answer).
    pub fn finish(&mut self, events: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if let Some(err) = &self.failed {
            return Err(err.clone());
        }
        if !self.line.is_empty() {
            if let Err(err) = self.end_line(events) {
                return Err(self.fail(err));
            }
        }
        self.dispatch(events);
        Ok(())
    }

    fn fail(&mut self, err: SseError) -> SseError {
        self.failed = Some(err.clone());
        self.line = Vec::new();
        self.data = String::new();
        err
    }

    fn take_line_part(&mut self, part: &[u8]) -> Result<(), SseError> {
        if self.event_bytes + self.line.len() + part.len() > self.max_event_size {
            return Err(SseError::EventTooLarge {
                limit: self.max_event_size,
            });
        }
        self.line.extend_from_slice(part);
        Ok(())
    }

    fn end_line(&mut self, events: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let mut line = std::mem::take(&mut self.line);
        if self.at_start {
            self.at_start = false;
            if line.starts_with(b"\xEF\xBB\xBF") {
                line.drain(..3);
            }
        }
        self.event_bytes += line.len() + 1;
        let result = self.process_line(&line, events);
        // Reuse the allocation for the next line.
        line.clear();
        self.line = line;
        result
    }

    fn process_line(&mut self, line: &[u8], events: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(events);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                let value = std::str::from_utf8(value).map_err(|_| SseError::InvalidUtf8)?;
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            b"event" => {
                let value = std::str::from_utf8(value).map_err(|_| SseError::InvalidUtf8)?;
                self.event_type = Some(value.to_owned());
            }
            b"id" if !value.contains(&0) => {
                let value = std::str::from_utf8(value).map_err(|_| SseError::InvalidUtf8)?;
                self.last_event_id = (!value.is_empty()).then(|| value.to_owned());
            }
            b"retry" if !value.is_empty() && value.iter().all(u8::is_ascii_digit) => {
                // Digits only, so the text is ASCII; an absurdly long number is ignored.
                if let Some(ms) = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse::<u64>().ok())
                {
                    self.retry = Some(Duration::from_millis(ms));
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, events: &mut Vec<SseEvent>) {
        self.event_bytes = 0;
        let event = self.event_type.take().filter(|t| !t.is_empty());
        if !self.has_data {
            return;
        }
        self.has_data = false;
        events.push(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
            id: self.last_event_id.clone(),
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8]) -> Vec<SseEvent> {
        let mut parser = SseParser::new(1 << 20);
        let mut events = Vec::new();
        parser.feed(input, &mut events).unwrap();
        parser.finish(&mut events).unwrap();
        events
    }

    #[test]
    fn every_line_ending_ends_a_line() {
        for stream in [
            &b"data: a\n\ndata: b\n\n"[..],
            b"data: a\r\n\r\ndata: b\r\n\r\n",
            b"data: a\r\rdata: b\r\r",
        ] {
            let data: Vec<_> = parse_all(stream).into_iter().map(|e| e.data).collect();
            assert_eq!(data, ["a", "b"], "stream {stream:?}");
        }
    }

    #[test]
    fn multi_line_data_joins_with_newline_and_comments_are_skipped() {
        let events = parse_all(b": keepalive\nevent: message\ndata: line1\n: mid\ndata:line2\n\n");
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "line1\nline2");
        assert_eq!(events[0].event.as_deref(), Some("message"));
    }

    #[test]
    fn priming_event_is_dispatched_empty_and_sets_the_id() {
        let mut parser = SseParser::new(1024);
        let mut events = Vec::new();
        parser
            .feed(b"id: ev-1\nretry: 500\ndata:\n\n", &mut events)
            .unwrap();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "");
        assert_eq!(parser.last_event_id(), Some("ev-1"));
        assert_eq!(parser.retry(), Some(Duration::from_millis(500)));
    }

    #[test]
    fn an_event_without_data_is_not_dispatched() {
        assert!(parse_all(b"id: 3\nevent: x\n\n").is_empty());
    }

    #[test]
    fn a_trailing_event_without_blank_line_still_counts() {
        let events = parse_all(b"data: {\"a\":1}");
        assert_eq!(events[0].data, "{\"a\":1}");
    }

    #[test]
    fn a_crlf_split_across_chunks_is_one_line_ending() {
        let mut parser = SseParser::new(1024);
        let mut events = Vec::new();
        parser.feed(b"data: a\r", &mut events).unwrap();
        parser.feed(b"\n\r", &mut events).unwrap();
        parser.feed(b"\ndata: b\n\n", &mut events).unwrap();
        let data: Vec<_> = events.into_iter().map(|e| e.data).collect();
        assert_eq!(data, ["a", "b"]);
    }

    #[test]
    fn an_oversized_event_or_endless_line_is_refused() {
        let mut parser = SseParser::new(16);
        let mut events = Vec::new();
        let err = parser.feed(&[b'x'; 17], &mut events).unwrap_err();
        assert_eq!(err, SseError::EventTooLarge { limit: 16 });
        assert!(parser.feed(b"\n\n", &mut events).is_err(), "stays failed");

        let mut parser = SseParser::new(16);
        parser.feed(b"data: 0123456\n", &mut events).unwrap();
        assert!(parser.feed(b"data: 0123456\n", &mut events).is_err());
    }

    #[test]
    fn an_empty_chunk_between_cr_and_lf_does_not_make_a_blank_line() {
        // Found by the split-invariance property: an empty feed used to forget the pending CR.
        let mut parser = SseParser::new(1024);
        let mut events = Vec::new();
        for chunk in [&b"event: x\r"[..], b"", b"\ndata: a\r\n\r\n"] {
            parser.feed(chunk, &mut events).unwrap();
        }
        assert_eq!(events[0].event.as_deref(), Some("x"));
    }

    #[test]
    fn invalid_utf8_is_an_error_not_a_replacement() {
        let mut parser = SseParser::new(1024);
        let mut events = Vec::new();
        assert_eq!(
            parser.feed(b"data: \xff\xfe\n\n", &mut events),
            Err(SseError::InvalidUtf8)
        );
    }

    #[test]
    fn a_leading_bom_is_ignored() {
        assert_eq!(parse_all(b"\xEF\xBB\xBFdata: x\n\n")[0].data, "x");
    }
}
