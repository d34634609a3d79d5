//! A request's head held back for its body: [`HeldOutput`] is ureq's buffers with the start of
//! the output set aside, so that a request head which declares a body leaves in the same write
//! as the body's first bytes: one `send` and one TCP segment where ureq's own flow makes two
//! (the head, then the body). The server is woken once and reads the request whole, not a
//! head and then, after one more wait, its body.
//!
//! The head is held only between ureq's write of a head and its next step on the connection:
//! the body's write sends both; a wait for input first sends what is held (a request that
//! waits for `100 Continue`, or a body that never came, still reaches the server). Both the
//! TCP [`Socket`](super::socket::Socket) and the TLS transport hold a head: over TLS the head
//! and the body's first bytes go in one record, and the socket below, which sees records and
//! never a head, sends it as it comes.
//!
//! This module never parses more of a head than its request line's shape and its
//! `content-length` or `transfer-encoding`, and never drops, reorders or alters a byte.

use std::io::{self, Write};

use ureq::unversioned::transport::{Buffers, LazyBuffers};

/// ureq's buffers, with the first [`Self::held`] bytes of the output set aside: ureq writes
/// after them and [`Self::outgoing`] hands both over to be sent together.
#[derive(Debug)]
pub(super) struct HeldOutput {
    inner: LazyBuffers,
    held: usize,
}

impl HeldOutput {
    pub(super) fn new(inner: LazyBuffers) -> Self {
        Self { inner, held: 0 }
    }

    /// Takes in the `amount` bytes ureq just wrote to the output. Returns the bytes to send
    /// now: none when they are a request head that declares a body (held until the body's
    /// first bytes, or a wait for input, come); else what was held and them, in order.
    pub(super) fn outgoing(&mut self, amount: usize) -> &[u8] {
        let held = self.held;
        let output = self.inner.output();
        let total = held + amount;
        // A head is held only when there is room after it for some of the body.
        if held == 0 && amount < output.len() && declares_body(&output[..amount]) {
            self.held = amount;
            return &[];
        }
        self.held = 0;
        &self.inner.output()[..total]
    }

    /// Before a wait for input: sends a head still held (its body never came: a wait for
    /// `100 Continue`) through `out`; nothing is held afterwards.
    pub(super) fn send_held(&mut self, mut out: impl Write) -> io::Result<()> {
        let held = std::mem::take(&mut self.held);
        if held == 0 {
            return Ok(());
        }
        out.write_all(&self.inner.output()[..held])
    }
}

impl Buffers for HeldOutput {
    fn output(&mut self) -> &mut [u8] {
        let held = self.held;
        &mut self.inner.output()[held..]
    }

    fn input(&self) -> &[u8] {
        self.inner.input()
    }

    fn input_append_buf(&mut self) -> &mut [u8] {
        self.inner.input_append_buf()
    }

    fn input_appended(&mut self, amount: usize) {
        self.inner.input_appended(amount);
    }

    fn input_consume(&mut self, amount: usize) {
        self.inner.input_consume(amount);
    }

    fn tmp_and_output(&mut self) -> (&mut [u8], &mut [u8]) {
        let held = self.held;
        let (tmp, output) = self.inner.tmp_and_output();
        (tmp, &mut output[held..])
    }

    fn can_use_input(&self) -> bool {
        self.inner.can_use_input()
    }
}

/// Whether `bytes` are one whole HTTP/1.1 request head (a request line that starts with an
/// upper-case method and a space, header lines, the empty line last) that declares a body: a
/// `content-length` above zero, or a `transfer-encoding`.
fn declares_body(bytes: &[u8]) -> bool {
    let Some(lines) = bytes.strip_suffix(b"\r\n\r\n") else {
        return false;
    };
    let mut lines = lines.split(|&byte| byte == b'\n');
    let Some(request_line) = lines.next() else {
        return false;
    };
    let method = request_line
        .iter()
        .take_while(|byte| byte.is_ascii_uppercase())
        .count();
    if method == 0 || request_line.get(method) != Some(&b' ') {
        return false;
    }
    lines.any(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let Some(colon) = line.iter().position(|&byte| byte == b':') else {
            return false;
        };
        let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii());
        if name.eq_ignore_ascii_case(b"transfer-encoding") {
            return true;
        }
        name.eq_ignore_ascii_case(b"content-length")
            && !value.is_empty()
            && value.iter().all(u8::is_ascii_digit)
            && value.iter().any(|&digit| digit != b'0')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_whole_request_head_that_declares_a_body_is_held() {
        let post = b"POST /mcp HTTP/1.1\r\ncontent-length: 334\r\nhost: a\r\n\r\n";
        assert!(declares_body(post));
        assert!(declares_body(
            b"POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 7\r\n\r\n"
        ));
        assert!(declares_body(
            b"POST /mcp HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n"
        ));
        // No body, an empty one, a head cut short, bytes that are no head (a TLS record).
        assert!(!declares_body(b"GET /mcp HTTP/1.1\r\nhost: a\r\n\r\n"));
        assert!(!declares_body(
            b"DELETE /mcp HTTP/1.1\r\ncontent-length: 0\r\n\r\n"
        ));
        assert!(!declares_body(&post[..post.len() - 2]));
        assert!(!declares_body(
            b"\x17\x03\x03\x01\x00content-length: 9\r\n\r\n"
        ));
        assert!(!declares_body(
            b"post /mcp HTTP/1.1\r\ncontent-length: 9\r\n\r\n"
        ));
        assert!(!declares_body(
            b"POST /mcp HTTP/1.1\r\ncontent-length: 1x\r\n\r\n"
        ));
        assert!(!declares_body(b""));
        assert!(!declares_body(b"\r\n\r\n"));
    }

    #[test]
    fn a_held_head_goes_out_with_its_body_and_nothing_is_lost() {
        let mut buffers = HeldOutput::new(LazyBuffers::new(1024, 1024));
        let head = b"POST / HTTP/1.1\r\ncontent-length: 4\r\n\r\n";
        buffers.output()[..head.len()].copy_from_slice(head);
        assert!(buffers.outgoing(head.len()).is_empty());
        // ureq writes the body where it is told the output starts: after the head.
        let (_, output) = buffers.tmp_and_output();
        output[..4].copy_from_slice(b"body");
        let sent = buffers.outgoing(4).to_vec();
        assert_eq!(sent, [&head[..], b"body"].concat());
        let mut released = Vec::new();
        buffers.send_held(&mut released).unwrap();
        assert!(released.is_empty(), "nothing is held once the body went");
        // A head whose body never comes is sent whole before a wait for input, once.
        buffers.output()[..head.len()].copy_from_slice(head);
        assert!(buffers.outgoing(head.len()).is_empty());
        buffers.send_held(&mut released).unwrap();
        buffers.send_held(&mut released).unwrap();
        assert_eq!(released, head);
        // A head without a body leaves at once.
        let get = b"GET / HTTP/1.1\r\n\r\n";
        buffers.output()[..get.len()].copy_from_slice(get);
        assert_eq!(buffers.outgoing(get.len()), &get[..]);
    }
}
