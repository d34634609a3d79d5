//! The proxy's answer to `CONNECT` ([`mcp_driver_common::network::parse_connect_response`]), read the
//! way each driver reads it: the tokio driver one byte at a time, the blocking driver whatever
//! each read brought.
//!
//! Both drivers tunnel through an `http://` proxy by writing `CONNECT host:port` and reading
//! the proxy's answer head; what follows the head belongs to the tunnel (the TLS handshake
//! with the MCP server). The answer is the proxy's (or whatever sits on that port): hostile
//! input. This module must never call a driver: it replays their reading loops over the
//! parser, and compares both with a model of what the parser's doc promises.

use mcp_driver_common::network::{ProxyFailure, parse_connect_response};

use crate::bytes::Bytes;

/// The longest answer head a driver reads (the parser's documented 8 KiB).
pub const CONNECT_HEAD_LIMIT: usize = 8 * 1024;

/// How a driver's tunnel attempt ends, as far as the answer decides it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// A 2xx head of `head` bytes: the tunnel starts right after it.
    Tunnel { head: usize, status: u16 },
    /// A complete head with another status: the driver reports the refusal.
    Refused { head: usize, status: u16 },
    /// The parser said the answer is not HTTP (or its head is too long).
    Failed(ProxyFailure),
    /// The proxy closed the connection before a complete head.
    Closed,
}

fn verdict(parsed: (usize, u16)) -> Verdict {
    let (head, status) = parsed;
    if (200..300).contains(&status) {
        Verdict::Tunnel { head, status }
    } else {
        Verdict::Refused { head, status }
    }
}

/// The tokio driver's loop: one byte read at a time, the parser asked after each.
///
/// Asking about every prefix of a long answer costs the square of its length (as it does the
/// driver, bounded there by the 8 KiB limit); to keep the target fast, prefixes past the
/// first KiB are asked about every 16th byte, wherever a blank line ends, around the limit
/// and at the end, and once one of them is not `Ok(None)` the prefixes since the last one
/// asked are asked in order, so the verdict is the first prefix's that is not `Ok(None)` as
/// long as the parser never goes back to `Ok(None)` between two of those points.
fn byte_at_a_time(answer: &[u8]) -> Verdict {
    let asked = |read: usize| {
        read <= 1024
            || read % 16 == 0
            || read == answer.len()
            || answer[..read].ends_with(b"\r\n\r\n")
            || (CONNECT_HEAD_LIMIT - 2..=CONNECT_HEAD_LIMIT + 2).contains(&read)
    };
    let mut last_none = 0;
    for read in (1..=answer.len()).filter(|&read| asked(read)) {
        if parse_connect_response(&answer[..read]) == Ok(None) {
            last_none = read;
            continue;
        }
        for read in last_none + 1..=read {
            match parse_connect_response(&answer[..read]) {
                Ok(None) => {}
                Ok(Some(parsed)) => {
                    assert_eq!(
                        parsed.0, read,
                        "read byte by byte, the head ends where the last byte was read"
                    );
                    return verdict(parsed);
                }
                Err(failure) => return Verdict::Failed(failure),
            }
        }
    }
    Verdict::Closed
}

/// The blocking driver's loop: each read appends what arrived (`ends`: where the reads end,
/// increasing) and the parser is asked about the whole buffer; a read that brings nothing is
/// the end of the connection.
fn read_by_read(answer: &[u8], ends: &[usize]) -> Verdict {
    for &end in ends {
        match parse_connect_response(&answer[..end]) {
            Ok(None) => {}
            Ok(Some(parsed)) => {
                assert!(
                    parsed.0 <= end,
                    "a head of {} bytes in a buffer of {end}",
                    parsed.0
                );
                return verdict(parsed);
            }
            Err(failure) => return Verdict::Failed(failure),
        }
    }
    Verdict::Closed
}

/// What the parser's doc promises for the whole answer, written independently of it: the
/// head is everything up to the first blank line (`\r\n\r\n`), at most
/// [`CONNECT_HEAD_LIMIT`] bytes; its status line is `HTTP/1.<minor> <three digits>[ reason]`;
/// an answer whose first five bytes are not `HTTP/` is not HTTP as soon as they are in.
fn model(answer: &[u8]) -> Verdict {
    let not_http = Verdict::Failed(ProxyFailure::NotHttp);
    let head = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|end| end + 4);
    match head {
        Some(head) if head <= CONNECT_HEAD_LIMIT => {
            let line_end = answer.iter().position(|&b| b == b'\r').unwrap_or(head);
            let Ok(line) = std::str::from_utf8(&answer[..line_end]) else {
                return not_http;
            };
            let mut words = line.splitn(3, ' ');
            let (Some(version), Some(code)) = (words.next(), words.next()) else {
                return not_http;
            };
            let three_digits = code.len() == 3 && code.bytes().all(|b| b.is_ascii_digit());
            if !version.starts_with("HTTP/1.") || !three_digits {
                return not_http;
            }
            let status: u16 = code.parse().unwrap_or_default();
            verdict((head, status))
        }
        _ if answer.len() >= 5 && !answer.starts_with(b"HTTP/") => not_http,
        _ if answer.len() >= CONNECT_HEAD_LIMIT => not_http,
        _ => Verdict::Closed,
    }
}

/// The proxy-answer target.
///
/// Layout: byte 0 = `....NNNN`, `NNNN` (0..=15) read boundaries that follow as little-endian
/// `u16`s (each taken modulo the answer's length + 1; the answer's end is always one); byte 1 =
/// a repeat count `r`; byte 2 = a filler length (`% 64`), then that many filler bytes; the
/// rest is the answer, with the filler repeated `8 r` times after its first line (so that
/// heads beyond the 8 KiB limit are a few bytes of input away).
///
/// Invariants: read one byte at a time (tokio) and read by reads ending at the boundaries
/// (blocking), the answer ends the same way (the same tunnel or refusal with the same head
/// length and status, the same failure, or the same early close), and that way is the model's
/// (see [`model`]): a head of at most 8 KiB, a status of three digits, `NotHttp` only for an
/// answer that is not `HTTP/`, a bad status line or an overlong head; read byte by byte, the
/// head ends where the last byte was read; a head is never longer than the buffer.
pub fn connect(data: &[u8]) {
    let mut bytes = Bytes::new(data);
    let reads = usize::from(bytes.byte() & 0x0f);
    let raw_ends: Vec<u16> = (0..reads).map(|_| bytes.u16()).collect();
    let repeat = usize::from(bytes.byte()) * 8;
    let filler_len = usize::from(bytes.byte() % 64);
    let filler = bytes.take(filler_len);
    let rest = bytes.rest();
    let first_line = rest
        .iter()
        .position(|&b| b == b'\n')
        .map_or(rest.len(), |i| i + 1);
    let mut answer = rest[..first_line].to_vec();
    for _ in 0..repeat {
        answer.extend_from_slice(filler);
    }
    answer.extend_from_slice(&rest[first_line..]);

    let mut ends: Vec<usize> = raw_ends
        .iter()
        .map(|&end| usize::from(end) % (answer.len() + 1))
        .filter(|&end| end > 0)
        .chain([answer.len()])
        .collect();
    ends.sort_unstable();
    ends.dedup();

    let expected = model(&answer);
    let tokio = byte_at_a_time(&answer);
    let blocking = read_by_read(&answer, &ends);
    assert_eq!(
        tokio,
        expected,
        "read byte by byte, the answer of {} bytes ended otherwise than documented",
        answer.len()
    );
    assert_eq!(
        blocking,
        expected,
        "read by reads ending at {:?}, the answer of {} bytes ended otherwise than documented",
        ends,
        answer.len()
    );
}
