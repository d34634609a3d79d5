//! Answer bodies made of literal bytes and long runs of one byte, so that huge hostile answers
//! are streamed without being built in memory; shared by the HTTP server and the stdio server.

use std::io;

use serde_json::Value;

/// Runs of one byte are produced in blocks of this size.
const BLOCK: usize = 64 * 1024;

/// A body made of literal bytes and long runs of one byte, so that huge
/// hostile answers are streamed without being built in memory.
#[derive(Debug, Clone)]
pub(crate) enum Piece {
    Bytes(Vec<u8>),
    Repeat(u8, usize),
}

#[derive(Debug, Clone)]
pub(crate) struct Payload(pub(crate) Vec<Piece>);

impl From<Vec<u8>> for Payload {
    fn from(bytes: Vec<u8>) -> Self {
        Self(vec![Piece::Bytes(bytes)])
    }
}

impl Payload {
    pub(crate) fn len(&self) -> u64 {
        self.0
            .iter()
            .map(|p| match p {
                Piece::Bytes(b) => b.len() as u64,
                Piece::Repeat(_, n) => *n as u64,
            })
            .fold(0u64, u64::saturating_add)
    }

    pub(crate) fn for_each_chunk(
        &self,
        f: &mut dyn FnMut(&[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        for piece in &self.0 {
            match piece {
                Piece::Bytes(b) => f(b)?,
                Piece::Repeat(byte, n) => {
                    let block = vec![*byte; (*n).min(BLOCK)];
                    let mut left = *n;
                    while left > 0 {
                        let k = left.min(block.len());
                        f(&block[..k])?;
                        left -= k;
                    }
                }
            }
        }
        Ok(())
    }

    pub(crate) fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let _ = self.for_each_chunk(&mut |c| {
            out.extend_from_slice(c);
            Ok(())
        });
        out
    }
}

pub(crate) fn id_json(id: &Value) -> String {
    serde_json::to_string(id).unwrap_or_else(|_| "null".to_owned())
}

pub(crate) fn text_answer_prefix(id: &Value) -> Vec<u8> {
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"content":[{{"type":"text","text":""#,
        id_json(id)
    )
    .into_bytes()
}

pub(crate) const TEXT_ANSWER_SUFFIX: &[u8] = br#""}],"isError":false}}"#;

pub(crate) fn oversize_payload(id: &Value, size: usize) -> Payload {
    let prefix = text_answer_prefix(id);
    let pad = size.saturating_sub(prefix.len() + TEXT_ANSWER_SUFFIX.len());
    Payload(vec![
        Piece::Bytes(prefix),
        Piece::Repeat(b'x', pad),
        Piece::Bytes(TEXT_ANSWER_SUFFIX.to_vec()),
    ])
}

pub(crate) fn invalid_utf8_payload(id: &Value) -> Payload {
    let mut body = text_answer_prefix(id);
    body.extend_from_slice(b"bad bytes: \xff\xfe\xc3\x28 end");
    body.extend_from_slice(TEXT_ANSWER_SUFFIX);
    Payload::from(body)
}

pub(crate) fn nesting_payload(id: &Value, depth: usize) -> Payload {
    Payload(vec![
        Piece::Bytes(format!(r#"{{"jsonrpc":"2.0","id":{},"result":"#, id_json(id)).into_bytes()),
        Piece::Repeat(b'[', depth),
        Piece::Repeat(b']', depth),
        Piece::Bytes(b"}".to_vec()),
    ])
}
