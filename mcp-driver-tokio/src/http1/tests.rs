//! The HTTP/1.1 client over a scripted connection: what leaves in which write, which answers
//! are read whole, and which connections are kept.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::*;

/// A connection whose answers are scripted: each read gets the next piece (an empty piece is
/// the server's close; with none left the read waits for ever); what is sent is recorded, one
/// entry a write.
#[derive(Debug)]
pub(crate) struct Scripted {
    answers: VecDeque<Vec<u8>>,
    sent: Sent,
}

/// What a scripted connection was sent, one entry a write.
type Sent = Arc<Mutex<Vec<Vec<u8>>>>;

impl AsyncRead for Scripted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let Some(piece) = self.answers.pop_front() else {
            return Poll::Pending;
        };
        let fits = piece.len().min(buf.remaining());
        buf.put_slice(&piece[..fits]);
        if fits < piece.len() {
            self.answers.push_front(piece[fits..].to_vec());
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Scripted {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.sent.lock().unwrap().push(buf.to_vec());
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

const URL: &str = "http://127.0.0.1:1/mcp";
const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

fn scripted(answers: &[&[u8]]) -> (Box<Conn>, Sent) {
    let sent = Arc::default();
    let scripted = Scripted {
        answers: answers.iter().map(|piece| piece.to_vec()).collect(),
        sent: Arc::clone(&sent),
    };
    (Conn::new(Stream::Scripted(scripted), (Vec::new(), 0)), sent)
}

struct Ran {
    sent: Sent,
    http: Http,
    result: HeadResult,
}

/// Runs `request`'s exchange on a scripted connection.
fn run(request: Request<Vec<u8>>, answers: &[&[u8]]) -> Ran {
    let (mut conn, sent) = scripted(answers);
    let http = http_client();
    let keep = Keep {
        server: Origin::of(request.uri()),
        http: http.clone(),
    };
    let result = write_request(request, &mut conn.output).and_then(|(call, to_send)| {
        conn.to_send = to_send;
        block_on(Exchange {
            step: Step::Send(conn, 0),
            call: Some(call),
            keep,
        })
    });
    Ran { sent, http, result }
}

fn post(body: &[u8]) -> Request<Vec<u8>> {
    Request::post(URL).body(body.to_vec()).unwrap()
}

fn kept(http: &Http) -> usize {
    http.0.pool.lock().len()
}

/// Reads `body` to its end, a chunk at a time.
fn read_all(body: &mut Body) -> io::Result<Vec<u8>> {
    block_on(async {
        let mut read = Vec::new();
        while let Some(chunk) = std::future::poll_fn(|cx| body.poll_chunk(cx)).await {
            chunk?;
            read.extend_from_slice(body.chunk());
        }
        Ok(read)
    })
}

/// The answer's body read whole, and how many connections are kept after.
fn answered(exchange: Ran) -> (Vec<u8>, usize) {
    let mut body = exchange.result.unwrap().into_body();
    let read = read_all(&mut body).unwrap();
    drop(body);
    (read, kept(&exchange.http))
}

#[test]
fn a_request_leaves_in_one_write_with_its_body() {
    let exchange = run(post(b"{\"id\":1}"), &[ANSWER]);
    let sent = exchange.sent.lock().unwrap().clone();
    assert_eq!(sent.len(), 1, "head and body in one write");
    let text = String::from_utf8(sent[0].clone()).unwrap();
    assert!(text.starts_with("POST /mcp HTTP/1.1\r\n"), "{text}");
    assert!(text.contains("host: 127.0.0.1:1\r\n"), "{text}");
    assert!(text.contains("content-length: 8\r\n"), "{text}");
    assert!(text.contains("user-agent: mcp-driver-tokio/"), "{text}");
    assert!(text.ends_with("\r\n\r\n{\"id\":1}"), "{text}");
    // A request without a body is sent without one, not with an empty one; a query stays.
    let get = Request::get("http://127.0.0.1:1/mcp?x=1")
        .header("user-agent", "mine/1")
        .body(Vec::new())
        .unwrap();
    let exchange = run(get, &[ANSWER]);
    let sent = exchange.sent.lock().unwrap().clone();
    let text = String::from_utf8(sent.concat()).unwrap();
    assert_eq!(sent.len(), 1);
    assert!(text.starts_with("GET /mcp?x=1 HTTP/1.1\r\n"), "{text}");
    assert!(!text.contains("content-length"), "{text}");
    assert!(text.contains("user-agent: mine/1\r\n"), "{text}");
    assert!(!text.contains("mcp-driver-tokio"), "{text}");
}

#[test]
fn a_long_head_or_body_grows_the_output_buffer_and_leaves_whole_and_in_order() {
    let body: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let exchange = run(post(&body), &[ANSWER]);
    let sent = exchange.sent.lock().unwrap().concat();
    assert!(sent.starts_with(b"POST /mcp HTTP/1.1\r\n"));
    assert!(sent.ends_with(&body), "the body follows the head, whole");
    assert_eq!(answered(exchange).0, b"{}");
    // A head longer than the output buffer grows it; one longer than the limit is an error,
    // not a loop, and nothing is sent.
    let long = Request::post(URL)
        .header("x-long", "x".repeat(OUTPUT + 1))
        .body(b"{}".to_vec())
        .unwrap();
    let exchange = run(long, &[ANSWER]);
    assert_eq!(answered(exchange).0, b"{}");
    let long = Request::post(URL)
        .header("x-long", "x".repeat(INPUT + 1))
        .body(b"{}".to_vec())
        .unwrap();
    let refused = run(long, &[ANSWER]);
    assert!(matches!(refused.result, Err(RequestError::Io(_))));
    assert!(refused.sent.lock().unwrap().is_empty(), "nothing was sent");
}

#[test]
fn a_connection_is_kept_only_after_a_whole_clean_answer() {
    // Read to its end: kept, and taken by the next request to the same server only.
    let exchange = run(post(b"{}"), &[ANSWER]);
    let http = exchange.http.clone();
    assert_eq!(answered(exchange), (b"{}".to_vec(), 1));
    let server = Origin::of(&URL.parse().unwrap());
    let other = Origin::of(&"http://127.0.0.1:2/mcp".parse().unwrap());
    assert!(http.0.pool.take(&other).is_none());
    assert!(http.0.pool.take(&server).is_some());
    // An answer without a body (202) gives it back at once.
    let accepted = b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n";
    let exchange = run(post(b"{}"), &[accepted]);
    drop(exchange.result);
    assert_eq!(kept(&exchange.http), 1);
    // Its last bytes read and the body dropped before its end was polled for: kept too.
    let exchange = run(post(b"{}"), &[ANSWER]);
    let mut body = exchange.result.unwrap().into_body();
    block_on(std::future::poll_fn(|cx| body.poll_chunk(cx)))
        .unwrap()
        .unwrap();
    assert_eq!(body.chunk(), b"{}");
    assert!(body.is_end_stream());
    drop(body);
    assert_eq!(kept(&exchange.http), 1);
    // Stray bytes after the body, a close asked for, a body dropped half read: closed.
    let stray: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}HTTP";
    assert_eq!(answered(run(post(b"{}"), &[stray])).1, 0);
    let close: &[u8] = b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 2\r\n\r\n{}";
    assert_eq!(answered(run(post(b"{}"), &[close])).1, 0);
    let half: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 4\r\n\r\n{}";
    let exchange = run(post(b"{}"), &[half]);
    let mut body = exchange.result.unwrap().into_body();
    block_on(std::future::poll_fn(|cx| body.poll_chunk(cx)))
        .unwrap()
        .unwrap();
    assert_eq!(body.chunk(), b"{}");
    drop(body);
    assert_eq!(kept(&exchange.http), 0);
}

#[test]
fn a_kept_connection_is_taken_only_while_its_server_keeps_it_open() {
    let http = http_client();
    let server = Origin::of(&URL.parse().unwrap());
    // Closed by its server while idle, or holding bytes nobody asked for: not taken.
    for after in [&b""[..], b"HTTP/1.1 408 Request Timeout\r\n\r\n"] {
        let (conn, _) = scripted(&[after]);
        http.0.pool.give(server.clone(), conn);
        assert_eq!(kept(&http), 1);
        assert!(http.0.pool.take(&server).is_none());
        assert_eq!(kept(&http), 0, "dropped");
    }
    // Nothing on it (a read would wait): taken.
    let (conn, _) = scripted(&[]);
    http.0.pool.give(server.clone(), conn);
    assert!(http.0.pool.take(&server).is_some());
}

#[test]
fn chunked_and_close_delimited_bodies_are_read_whole() {
    let head: &[u8] = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n";
    let exchange = run(
        post(b"{}"),
        &[head, b"3\r\nabc\r\n", b"2\r\nde\r\n0\r\n\r\n"],
    );
    assert_eq!(answered(exchange), (b"abcde".to_vec(), 1));
    // A chunk's size line cut between two reads: the reader waits for the rest of it.
    let pieces: [&[u8]; 4] = [head, b"3\r", b"\nabc\r\n0\r", b"\n\r\n"];
    assert_eq!(answered(run(post(b"{}"), &pieces)), (b"abc".to_vec(), 1));
    // The server closed after the last chunk's size line: the body is whole, not kept.
    let pieces: [&[u8]; 3] = [head, b"2\r\nab\r\n0\r\n", b""];
    assert_eq!(answered(run(post(b"{}"), &pieces)), (b"ab".to_vec(), 0));
    let head: &[u8] = b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nab";
    let exchange = run(post(b"{}"), &[head, b"cd", b""]);
    assert_eq!(answered(exchange), (b"abcd".to_vec(), 0));
    // A body cut short by the close is an error, not a short answer.
    let head: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 9\r\n\r\nab";
    let mut body = run(post(b"{}"), &[head, b""]).result.unwrap().into_body();
    let err = read_all(&mut body).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof, "{err}");
    // A body larger than one chunk comes in several, whole and in order.
    let big: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let head = format!("HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n", big.len());
    let exchange = run(post(b"{}"), &[head.as_bytes(), &big]);
    assert_eq!(answered(exchange), (big, 1));
}

#[test]
fn an_answer_that_is_not_http_or_never_comes_whole_is_an_error() {
    // The server closed before the head.
    let closed = run(post(b"{}"), &[b"HTTP/1.1 200"[..].as_ref(), b""]).result;
    assert!(
        matches!(closed, Err(RequestError::Io(err)) if err.kind() == io::ErrorKind::UnexpectedEof)
    );
    // Not HTTP at all.
    let garbage = run(post(b"{}"), &[b"SSH-2.0-OpenSSH_9.6\r\n\r\n"]).result;
    assert!(
        matches!(garbage, Err(RequestError::Protocol(_))),
        "{garbage:?}"
    );
    // A head longer than the limit is refused.
    let mut long = b"HTTP/1.1 200 OK\r\nx-filler: ".to_vec();
    long.resize(INPUT + 1, b'0');
    let pieces: Vec<&[u8]> = long.chunks(4000).collect();
    let refused = run(post(b"{}"), &pieces).result;
    assert!(
        matches!(refused, Err(RequestError::Protocol(_))),
        "{refused:?}"
    );
}

#[test]
fn a_kept_connection_its_server_closed_while_the_runtime_slept_is_not_taken() {
    // An operation at a time on `block_on`: between two, nothing runs the runtime's driver,
    // so tokio cannot know that the server closed an idle connection. The look at the socket
    // itself does.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    client.set_nonblocking(true).unwrap();
    let (server, _) = listener.accept().unwrap();
    let tcp = runtime.block_on(async { tokio::net::TcpStream::from_std(client).unwrap() });
    let http = http_client();
    let origin = Origin::of(&URL.parse().unwrap());
    http.0.pool.give(
        origin.clone(),
        Conn::new(Stream::Plain(tcp), (Vec::new(), 0)),
    );
    let conn = http.0.pool.take(&origin).expect("open, so taken");
    http.0.pool.give(origin.clone(), conn);
    drop(server);
    // The close reaches the client's socket at once over loopback; allow a slow machine time.
    let mut taken = http.0.pool.take(&origin);
    for _ in 0..200 {
        let Some(conn) = taken else { break };
        http.0.pool.give(origin.clone(), conn);
        std::thread::sleep(std::time::Duration::from_millis(10));
        taken = http.0.pool.take(&origin);
    }
    assert!(taken.is_none(), "a connection its server closed was taken");
}
