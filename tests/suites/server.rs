//! Wire-level tests of the test server itself.

use std::time::{Duration, Instant};

use mcp_testkit::client::{self, RawClient, RawResponse};
use mcp_testkit::{
    AnswerMode, Hostile, NotificationReply, RpcKind, Script, ServerRequest, TestServer,
};
use serde_json::{Value, json};

fn connect(server: &TestServer) -> RawClient {
    RawClient::connect(server.addr()).unwrap()
}

/// Connects and performs the handshake; returns the client and session id.
fn init(server: &TestServer) -> (RawClient, String) {
    let mut c = connect(server);
    let session = c.initialize().unwrap().expect("session id");
    (c, session)
}

fn rpc(id: u64, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
}

fn call(c: &mut RawClient, session: &str, id: u64, method: &str, params: Value) -> RawResponse {
    c.post_json(&rpc(id, method, params), &[("Mcp-Session-Id", session)])
        .unwrap()
}

fn tool(c: &mut RawClient, session: &str, id: u64, name: &str, args: Value) -> RawResponse {
    call(
        c,
        session,
        id,
        "tools/call",
        json!({"name": name, "arguments": args}),
    )
}

fn json_of(resp: &RawResponse) -> Value {
    assert_eq!(resp.status, 200, "body: {}", resp.text());
    assert_eq!(resp.header("content-type"), Some("application/json"));
    resp.json().expect("JSON body")
}

fn text_of(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"].as_str().unwrap()
}

#[test]
fn handles_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<TestServer>();
    check::<mcp_testkit::ScriptHandle>();
    check::<Script>();
    check::<RawClient>();
}

#[test]
fn initialize_negotiates_version_and_session() {
    let server = TestServer::start(Script::new());
    assert_eq!(
        server.url(),
        format!("http://127.0.0.1:{}/mcp", server.port())
    );
    let mut c = connect(&server);
    for (asked, expected) in [
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2025-11-25", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let resp = c
            .post_json(
                &rpc(1, "initialize", json!({"protocolVersion": asked})),
                &[],
            )
            .unwrap();
        let answer = json_of(&resp);
        assert_eq!(answer["id"], 1);
        assert_eq!(answer["result"]["protocolVersion"], expected);
        assert_eq!(
            answer["result"]["capabilities"],
            json!({"tools": {"listChanged": false}, "resources": {}, "prompts": {}})
        );
        assert_eq!(
            answer["result"]["serverInfo"],
            json!({"name": "mcp-testkit", "version": "0.1.0"})
        );
        let session = resp.header("mcp-session-id").unwrap();
        let parts: Vec<&str> = session.split('-').collect();
        assert_eq!(parts.len(), 3, "{session}");
        assert_eq!(parts[0], "s");
        assert!(parts[1].parse::<u64>().is_ok());
        assert!(parts[2].chars().all(|ch| ch.is_ascii_hexdigit()));
    }
    assert_eq!(server.sessions().len(), 4);

    server.set_script(Script::new().protocol_version("2024-11-05"));
    let resp = c
        .post_json(
            &rpc(2, "initialize", json!({"protocolVersion": "2025-06-18"})),
            &[],
        )
        .unwrap();
    assert_eq!(json_of(&resp)["result"]["protocolVersion"], "2024-11-05");
}

#[test]
fn ping_unknown_method_and_tools() {
    let server = TestServer::start(Script::new());
    let (mut c, s) = init(&server);

    assert_eq!(
        json_of(&call(&mut c, &s, 1, "ping", json!({})))["result"],
        json!({})
    );
    let err = json_of(&call(&mut c, &s, 2, "nope/nope", json!({})));
    assert_eq!(err["error"]["code"], -32601);
    assert_eq!(err["id"], 2);

    let echo = json_of(&tool(&mut c, &s, 3, "echo", json!({"text": "héllo"})));
    assert_eq!(
        echo["result"],
        json!({"content": [{"type": "text", "text": "héllo"}], "isError": false})
    );

    let add = json_of(&tool(&mut c, &s, 4, "add", json!({"a": 2, "b": 40})));
    assert_eq!(text_of(&add), "42");
    assert_eq!(add["result"]["structuredContent"], json!({"sum": 42}));
    let add = json_of(&tool(&mut c, &s, 5, "add", json!({"a": 0.5, "b": 2})));
    assert_eq!(text_of(&add), "2.5");

    let started = Instant::now();
    let slept = json_of(&tool(&mut c, &s, 6, "sleep", json!({"ms": 120})));
    assert!(started.elapsed() >= Duration::from_millis(110));
    assert_eq!(text_of(&slept), "slept 120 ms");

    let fail = json_of(&tool(&mut c, &s, 7, "fail", json!({})));
    assert_eq!(
        fail["result"],
        json!({"content": [{"type": "text", "text": "the tool failed on purpose"}], "isError": true})
    );

    let unknown = json_of(&tool(&mut c, &s, 8, "nope", json!({})));
    assert_eq!(unknown["error"]["code"], -32602);
    assert_eq!(unknown["error"]["message"], "unknown tool: nope");

    let list = json_of(&call(&mut c, &s, 9, "tools/list", json!({})));
    let names: Vec<&str> = list["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "add", "sleep", "fail"]);
    assert!(list["result"].get("nextCursor").is_none());
    let echo_schema = &list["result"]["tools"][0]["inputSchema"];
    assert_eq!(echo_schema["type"], "object");
    assert_eq!(echo_schema["properties"]["text"]["type"], "string");
    let add_schema = &list["result"]["tools"][1]["inputSchema"];
    assert_eq!(add_schema["properties"]["a"]["type"], "number");
    assert_eq!(
        list["result"]["tools"][2]["inputSchema"]["properties"]["ms"]["type"],
        "integer"
    );
}

fn list_all(c: &mut RawClient, s: &str, max_pages: usize) -> (Vec<String>, Vec<Option<String>>) {
    let mut names = Vec::new();
    let mut cursors = Vec::new();
    let mut cursor: Option<String> = None;
    for i in 0..max_pages {
        let params = match &cursor {
            Some(cur) => json!({"cursor": cur}),
            None => json!({}),
        };
        let page = json_of(&call(c, s, 100 + i as u64, "tools/list", params));
        let tools = page["result"]["tools"].as_array().unwrap();
        assert!(!tools.is_empty());
        names.extend(tools.iter().map(|t| t["name"].as_str().unwrap().to_owned()));
        cursor = page["result"]["nextCursor"].as_str().map(str::to_owned);
        cursors.push(cursor.clone());
        if cursor.is_none() {
            break;
        }
    }
    (names, cursors)
}

#[test]
fn tool_listing_pages() {
    let server = TestServer::start(Script::new().tool_pages(3));
    let (mut c, s) = init(&server);
    let (names, cursors) = list_all(&mut c, &s, 10);
    assert_eq!(names, ["echo", "add", "sleep", "fail"]);
    assert_eq!(
        cursors,
        [Some("page-2".to_owned()), Some("page-3".to_owned()), None]
    );

    server.set_script(Script::new().tool_pages(6));
    let (names, cursors) = list_all(&mut c, &s, 10);
    assert_eq!(names, ["echo", "add", "sleep", "fail", "tool-1", "tool-2"]);
    assert_eq!(cursors.len(), 6);
    let filler = json_of(&tool(&mut c, &s, 1, "tool-2", json!({})));
    assert_eq!(text_of(&filler), "tool-2 called");

    let bad = json_of(&call(
        &mut c,
        &s,
        2,
        "tools/list",
        json!({"cursor": "bogus"}),
    ));
    assert_eq!(bad["error"]["code"], -32602);

    server.set_script(Script::new().tool_pages(2).repeated_cursor(true));
    let (_, cursors) = list_all(&mut c, &s, 4);
    assert_eq!(cursors, vec![Some("page-2".to_owned()); 4]);

    server.set_script(Script::new().endless_listing(true));
    let (names, cursors) = list_all(&mut c, &s, 5);
    assert_eq!(cursors.len(), 5);
    assert_eq!(cursors[4].as_deref(), Some("page-6"));
    assert_eq!(names.len(), 8);
}

#[test]
fn notifications_and_client_responses() {
    let server = TestServer::start(Script::new());
    let (mut c, s) = init(&server);
    let note = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#;
    let client_response = r#"{"jsonrpc":"2.0","id":"srv-1","result":{}}"#;
    let resp = c.post_json(note, &[("Mcp-Session-Id", &s)]).unwrap();
    assert_eq!((resp.status, resp.body.len()), (202, 0));
    let resp = c
        .post_json(client_response, &[("Mcp-Session-Id", &s)])
        .unwrap();
    assert_eq!((resp.status, resp.body.len()), (202, 0));

    server.set_script(Script::new().notification_reply(NotificationReply::OkWithBody));
    let resp = c.post_json(note, &[("Mcp-Session-Id", &s)]).unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.json().unwrap(),
        json!({"jsonrpc": "2.0", "result": {}})
    );

    server.set_script(Script::new().notification_reply(NotificationReply::OkEmpty));
    let resp = c
        .post_json(client_response, &[("Mcp-Session-Id", &s)])
        .unwrap();
    assert_eq!((resp.status, resp.body.len()), (200, 0));

    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "notifications/cancelled",
            "(response)",
            "notifications/cancelled",
            "(response)"
        ]
    );
}

#[test]
fn session_rules() {
    let server = TestServer::start(Script::new());
    let (mut c, s) = init(&server);

    let resp = c.post_json(&rpc(1, "ping", json!({})), &[]).unwrap();
    assert_eq!(resp.status, 400);
    assert!(resp.text().contains("missing session id"));
    let resp = c
        .post_json(
            &rpc(2, "ping", json!({})),
            &[("Mcp-Session-Id", "s-999-dead")],
        )
        .unwrap();
    assert_eq!(resp.status, 404);
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    assert_eq!(c.post_json(note, &[]).unwrap().status, 400);
    assert_eq!(call(&mut c, &s, 3, "ping", json!({})).status, 200);

    server.expire_sessions();
    assert!(server.sessions().is_empty());
    assert_eq!(call(&mut c, &s, 4, "ping", json!({})).status, 404);

    // A new session works; DELETE forgets it.
    let s2 = c.initialize().unwrap().unwrap();
    assert_ne!(s, s2);
    assert_eq!(call(&mut c, &s2, 5, "ping", json!({})).status, 200);
    let resp = c
        .request("DELETE", "/mcp", &[("Mcp-Session-Id", &s2)], b"")
        .unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(call(&mut c, &s2, 6, "ping", json!({})).status, 404);
    assert_eq!(c.request("DELETE", "/mcp", &[], b"").unwrap().status, 400);

    server.set_script(Script::new().allow_delete(false));
    let s3 = c.initialize().unwrap().unwrap();
    let resp = c
        .request("DELETE", "/mcp", &[("Mcp-Session-Id", &s3)], b"")
        .unwrap();
    assert_eq!(resp.status, 405);
    assert_eq!(call(&mut c, &s3, 7, "ping", json!({})).status, 200);

    // Sessions off: no header, no checks.
    server.set_script(Script::new().sessions(false));
    let resp = c.post_json(&rpc(8, "initialize", json!({})), &[]).unwrap();
    assert_eq!(resp.status, 200);
    assert!(resp.header("mcp-session-id").is_none());
    assert_eq!(
        c.post_json(&rpc(9, "ping", json!({})), &[]).unwrap().status,
        200
    );
    assert!(server.rpc_methods().contains(&"DELETE".to_owned()));
}

#[test]
fn raw_session_id_override_is_sent_verbatim() {
    let server =
        TestServer::start(Script::new().session_id_header(b"abc\r\nX-Injected: 1".to_vec()));
    let mut c = connect(&server);
    let resp = c.post_json(&rpc(1, "initialize", json!({})), &[]).unwrap();
    assert_eq!(resp.status, 200);
    assert!(
        resp.head
            .windows(b"Mcp-Session-Id: abc\r\nX-Injected: 1\r\n".len())
            .any(|w| w == b"Mcp-Session-Id: abc\r\nX-Injected: 1\r\n")
    );
    assert_eq!(resp.header("x-injected"), Some("1"));

    server.set_script(Script::new().session_id_header("plain-id"));
    let resp = c.post_json(&rpc(2, "initialize", json!({})), &[]).unwrap();
    assert_eq!(resp.header("mcp-session-id"), Some("plain-id"));
    assert_eq!(call(&mut c, "plain-id", 3, "ping", json!({})).status, 200);
}

#[test]
fn other_paths_and_methods() {
    let server = TestServer::start(Script::new());
    let mut c = connect(&server);
    assert_eq!(c.post_json("{}", &[]).unwrap().status, 400);
    assert_eq!(c.request("POST", "/other", &[], b"{}").unwrap().status, 404);
    let resp = c
        .request("GET", "/mcp", &[("Accept", "text/event-stream")], b"")
        .unwrap();
    assert_eq!(resp.status, 405);
    assert!(resp.header("allow").is_some());
    assert_eq!(c.request("PUT", "/mcp", &[], b"x").unwrap().status, 405);
    c.send_request("HEAD", "/mcp", &[], b"").unwrap();
    let head = c.read_head().unwrap();
    assert_eq!(
        (head.status, head.header("content-length")),
        (405, Some("0"))
    );
    let resp = c.post_json("{not json", &[]).unwrap();
    assert_eq!(resp.status, 400);
    assert_eq!(resp.json().unwrap()["error"]["code"], -32700);
    let resp = c.post_json("[]", &[]).unwrap();
    assert_eq!(resp.status, 400);
    // The connection survived all of that.
    assert_eq!(
        c.post_json(&rpc(1, "initialize", json!({})), &[])
            .unwrap()
            .status,
        200
    );
    assert_eq!(server.connections_accepted(), 1);
}

#[test]
fn keep_alive_and_recording() {
    let server = TestServer::start(Script::new());
    let (mut c, s) = init(&server);
    for i in 0..20 {
        let answer = json_of(&tool(
            &mut c,
            &s,
            i,
            "echo",
            json!({"text": format!("n{i}")}),
        ));
        assert_eq!(text_of(&answer), format!("n{i}"));
        assert_eq!(answer["id"], i);
    }
    assert_eq!(server.connections_accepted(), 1);
    assert!(server.wait_for_requests(22, Duration::from_secs(1)));
    let reqs = server.requests();
    assert_eq!(reqs.len(), 22);
    let last = &reqs[21];
    assert_eq!(last.method, "POST");
    assert_eq!(last.path, "/mcp");
    assert_eq!(last.rpc_method.as_deref(), Some("tools/call"));
    assert_eq!(last.rpc_id, Some(json!(19)));
    assert_eq!(last.rpc_kind, Some(RpcKind::Request));
    assert_eq!(last.header("Mcp-Session-Id"), Some(s.as_str()));
    assert!(
        last.headers
            .iter()
            .all(|(n, _)| *n == n.to_ascii_lowercase())
    );
    assert_eq!(last.json().unwrap()["params"]["arguments"]["text"], "n19");
    assert!(
        reqs.windows(2)
            .all(|w| w[0].received_at <= w[1].received_at)
    );
    assert_eq!(reqs[1].rpc_kind, Some(RpcKind::Notification));
    server.clear_requests();
    assert!(server.requests().is_empty());
    assert!(!server.wait_for_requests(1, Duration::from_millis(20)));
}

#[test]
fn connection_close_and_http10() {
    let server = TestServer::start(Script::new().sessions(false).answer_mode(AnswerMode::Sse));
    let mut c = connect(&server);
    let body = rpc(1, "ping", json!({}));
    let resp = c
        .request("POST", "/mcp", &[("Connection", "close")], body.as_bytes())
        .unwrap();
    assert_eq!(resp.status, 200);
    assert!(c.wait_closed(Duration::from_secs(2)).unwrap());

    let mut c = connect(&server);
    let raw = format!(
        "POST /mcp HTTP/1.0\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    c.send_raw(raw.as_bytes()).unwrap();
    let resp = c.read_response().unwrap();
    assert_eq!(resp.status, 200);
    assert!(!resp.is_chunked());
    assert_eq!(resp.sse_messages()[0]["id"], 1);
}

#[test]
fn chunked_request_body_and_expect_continue() {
    let server = TestServer::start(Script::new().sessions(false));
    let mut c = connect(&server);
    let body = rpc(
        7,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "chunky"}}),
    );
    let (a, b) = body.split_at(10);
    let raw = format!(
        "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{a}\r\n{:x};ext=1\r\n{b}\r\n0\r\n\r\n",
        a.len(),
        b.len()
    );
    c.send_raw(raw.as_bytes()).unwrap();
    let answer = json_of(&c.read_response().unwrap());
    assert_eq!(text_of(&answer), "chunky");
    assert_eq!(server.requests()[0].body, body.as_bytes());

    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    c.send_raw(head.as_bytes()).unwrap();
    let interim = c.read_raw_for(Duration::from_millis(500)).unwrap();
    assert!(interim.starts_with(b"HTTP/1.1 100 Continue\r\n\r\n"));
    c.send_raw(body.as_bytes()).unwrap();
    assert_eq!(text_of(&json_of(&c.read_response().unwrap())), "chunky");
}

#[test]
fn malformed_requests_get_400_or_413_and_close() {
    let server = TestServer::start(Script::new());
    let cases: Vec<(Vec<u8>, u16)> = vec![
        (b"GARBAGE\r\n\r\n".to_vec(), 400),
        (b"\x00\xff\xfe junk HTTP/1.1\r\n\r\n".to_vec(), 400),
        (
            b"POST /mcp HTTP/1.1\r\nContent-Length: nope\r\n\r\n".to_vec(),
            400,
        ),
        (
            b"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n".to_vec(),
            400,
        ),
        (
            b"POST /mcp HTTP/1.1\r\nContent-Length: 17000000\r\n\r\n".to_vec(),
            413,
        ),
        (
            format!(
                "GET /mcp HTTP/1.1\r\nX-Big: {}\r\n\r\n",
                "a".repeat(70 * 1024)
            )
            .into_bytes(),
            400,
        ),
    ];
    for (raw, status) in cases {
        let mut c = connect(&server);
        c.send_raw(&raw).unwrap();
        let resp = c.read_response().unwrap();
        assert_eq!(
            resp.status,
            status,
            "for {:?}",
            String::from_utf8_lossy(&raw[..20])
        );
        assert_eq!(resp.header("connection"), Some("close"));
        assert!(c.wait_closed(Duration::from_secs(2)).unwrap());
    }
    // Half a request then a disconnect does not hurt either.
    let mut c = connect(&server);
    c.send_raw(b"POST /mcp HTTP/1.1\r\nContent-Length: 100\r\n\r\n{")
        .unwrap();
    drop(c);
    let (mut c, s) = init(&server);
    assert_eq!(call(&mut c, &s, 1, "ping", json!({})).status, 200);
}

#[test]
fn sse_answers() {
    let server = TestServer::start(Script::new().answer_mode(AnswerMode::Sse));
    let (mut c, s) = init(&server);
    let resp = tool(&mut c, &s, 1, "echo", json!({"text": "x"}));
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    assert!(resp.is_chunked());
    let events = resp.sse_events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].event.as_deref(), Some("message"));
    assert_eq!(events[0].id, None);
    assert_eq!(text_of(&resp.sse_messages()[0]), "x");

    server.set_script(
        Script::new()
            .answer_mode(AnswerMode::Sse)
            .notifications_before_answer(2)
            .event_ids(true),
    );
    let resp = tool(&mut c, &s, 2, "echo", json!({"text": "y"}));
    let events = resp.sse_events();
    assert_eq!(events.len(), 4);
    assert_eq!(events[0].id.as_deref(), Some("0"));
    assert_eq!(events[0].data.as_deref(), Some(""));
    let ids: Vec<&str> = events[1..]
        .iter()
        .map(|e| e.id.as_deref().unwrap())
        .collect();
    assert_eq!(ids, ["1", "2", "3"]);
    let msgs = resp.sse_messages();
    assert_eq!(msgs[0]["method"], "notifications/message");
    assert_eq!(msgs[1]["method"], "notifications/message");
    assert_eq!(msgs[2]["id"], 2);

    server.set_script(
        Script::new()
            .answer_mode_for("tools/call", AnswerMode::Sse)
            .sse_content_length(true)
            .notifications_before_answer(1),
    );
    let resp = tool(&mut c, &s, 3, "echo", json!({"text": "z"}));
    assert!(!resp.is_chunked());
    assert_eq!(
        resp.header("content-length"),
        Some(resp.body.len().to_string().as_str())
    );
    assert_eq!(resp.sse_messages().len(), 2);
    // Other methods stay JSON.
    assert_eq!(
        json_of(&call(&mut c, &s, 4, "ping", json!({})))["result"],
        json!({})
    );
}

#[test]
fn progress_notifications() {
    let server = TestServer::start(Script::new().answer_mode(AnswerMode::Sse));
    let (mut c, s) = init(&server);
    let params =
        json!({"name": "sleep", "arguments": {"ms": 150}, "_meta": {"progressToken": "tok"}});
    let started = Instant::now();
    let resp = call(&mut c, &s, 1, "tools/call", params);
    assert!(started.elapsed() >= Duration::from_millis(140));
    let msgs = resp.sse_messages();
    assert_eq!(msgs.len(), 4);
    for (i, m) in msgs[..3].iter().enumerate() {
        assert_eq!(m["method"], "notifications/progress");
        assert_eq!(
            m["params"],
            json!({"progressToken": "tok", "progress": i + 1, "total": 3})
        );
    }
    assert_eq!(text_of(&msgs[3]), "slept 150 ms");

    let params = json!({"name": "echo", "arguments": {"text": "p"}, "_meta": {"progressToken": 9}});
    let msgs = call(&mut c, &s, 2, "tools/call", params.clone()).sse_messages();
    assert_eq!(msgs.len(), 4);
    assert_eq!(msgs[0]["params"]["progressToken"], 9);

    server.set_script(Script::new().answer_mode(AnswerMode::Sse).progress(false));
    assert_eq!(
        call(&mut c, &s, 3, "tools/call", params)
            .sse_messages()
            .len(),
        1
    );
}

/// Calls `echo` with `text` on a server answering `tools/call` in `mode`, reads what comes
/// for `read_for` after the head (which must be an event stream), then leaves, and checks the
/// server lets the connection go: the body as text.
fn stream_read_for(mode: AnswerMode, text: &str, read_for: Duration) -> String {
    let server = TestServer::start(Script::new().answer_mode_for("tools/call", mode));
    let (mut c, s) = init(&server);
    c.post_json_no_read(
        &rpc(
            1,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": text}}),
        ),
        &s,
    );
    let head = c.read_head().unwrap();
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    let raw = c.read_raw_for(read_for).unwrap();
    let body = String::from_utf8_lossy(&client::decode_chunked(&raw)).into_owned();
    drop(c);
    // The connection thread notices the disconnect.
    let deadline = Instant::now() + Duration::from_secs(3);
    while server.open_connections() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        server.open_connections(),
        0,
        "the stream outlived its client"
    );
    body
}

#[test]
fn sse_trickle_after_answer_sends_the_answer_then_thin_comments_until_the_client_leaves() {
    let text = stream_read_for(
        AnswerMode::SseTrickleAfterAnswer,
        "t",
        Duration::from_millis(300),
    );
    let (answer, after) = text
        .split_once("\"text\":\"t\"")
        .expect("the answer came first");
    assert!(answer.contains("event: message"), "{text}");
    // One every half millisecond, or far fewer on a loaded machine: still many.
    assert!(after.matches("\n:\n").count() >= 10, "{text}");
}

#[test]
fn sse_keep_open_sends_keepalives() {
    let text = stream_read_for(AnswerMode::SseKeepOpen, "k", Duration::from_millis(700));
    assert!(text.contains("\"text\":\"k\""), "{text}");
    assert!(text.matches(": keepalive").count() >= 2, "{text}");
}

#[test]
fn delays_apply_per_method() {
    let server = TestServer::start(
        Script::new()
            .delay("tools/call", Duration::from_millis(250))
            .delay("notifications/initialized", Duration::from_millis(100)),
    );
    let mut c = connect(&server);
    let started = Instant::now();
    let s = c.initialize().unwrap().unwrap();
    assert!(started.elapsed() >= Duration::from_millis(90));
    let started = Instant::now();
    assert_eq!(call(&mut c, &s, 1, "ping", json!({})).status, 200);
    assert!(started.elapsed() < Duration::from_millis(200));
    let started = Instant::now();
    tool(&mut c, &s, 2, "echo", json!({"text": "d"}));
    assert!(started.elapsed() >= Duration::from_millis(240));
}

#[test]
fn demo_server() {
    let server = TestServer::demo();
    let mut c = connect(&server);
    let started = Instant::now();
    let s = c.initialize().unwrap().unwrap();
    assert!(started.elapsed() >= Duration::from_millis(390));
    let resp = tool(&mut c, &s, 1, "add", json!({"a": 1, "b": 2}));
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    assert_eq!(text_of(&resp.sse_messages()[0]), "3");
}

trait PostNoRead {
    fn post_json_no_read(&mut self, body: &str, session: &str);
}

impl PostNoRead for RawClient {
    fn post_json_no_read(&mut self, body: &str, session: &str) {
        self.send_request(
            "POST",
            "/mcp",
            &[
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
                ("Mcp-Session-Id", session),
            ],
            body.as_bytes(),
        )
        .unwrap();
    }
}

/// Starts a server where `tools/call` misbehaves with `mode`, and returns it
/// with a handshaken client.
fn hostile_call(mode: Hostile) -> (TestServer, RawClient, String) {
    let server = TestServer::start(Script::new().hostile("tools/call", mode));
    let (c, s) = init(&server);
    (server, c, s)
}

fn echo_call() -> String {
    rpc(
        5,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "e"}}),
    )
}

#[test]
fn hostile_stall() {
    let (server, mut c, s) = hostile_call(Hostile::Stall);
    c.post_json_no_read(&echo_call(), &s);
    let got = c.read_raw_for(Duration::from_millis(300)).unwrap();
    assert!(got.is_empty());
    assert_eq!(
        server.rpc_methods().last().map(String::as_str),
        Some("tools/call")
    );
    // Shutdown while stalled returns quickly and closes the socket.
    let started = Instant::now();
    drop(server);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert!(c.wait_closed(Duration::from_secs(1)).unwrap());
}

#[test]
fn hostile_trickle() {
    let (server, mut c, s) = hostile_call(Hostile::Trickle);
    c.post_json_no_read(&echo_call(), &s);
    let head = c.read_head().unwrap();
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    let raw = c.read_raw_for(Duration::from_millis(650)).unwrap();
    let body = client::decode_chunked(&raw);
    let ticks = String::from_utf8_lossy(&body).matches(": tick\n").count();
    assert!((2..=6).contains(&ticks), "{ticks} ticks");
    assert!(!String::from_utf8_lossy(&body).contains("data:"));
    let started = Instant::now();
    server.shutdown();
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[test]
fn hostile_oversize() {
    let (server, mut c, s) = hostile_call(Hostile::Oversize(3_000_000));
    let resp = c
        .post_json(&echo_call(), &[("Mcp-Session-Id", &s)])
        .unwrap();
    assert_eq!(resp.header("content-length"), Some("3000000"));
    assert_eq!(resp.body.len(), 3_000_000);
    let answer = resp.json().unwrap();
    assert_eq!(answer["id"], 5);
    assert!(text_of(&answer).len() > 2_900_000);

    server.set_script(Script::new().hostile("tools/call", Hostile::OversizeChunked(200_000)));
    let resp = c
        .post_json(&echo_call(), &[("Mcp-Session-Id", &s)])
        .unwrap();
    assert!(resp.is_chunked());
    assert_eq!(resp.body.len(), 200_000);
    assert!(resp.json().is_some());

    server.set_script(
        Script::new()
            .answer_mode(AnswerMode::Sse)
            .hostile("tools/call", Hostile::Oversize(100_000)),
    );
    let resp = c
        .post_json(&echo_call(), &[("Mcp-Session-Id", &s)])
        .unwrap();
    assert!(resp.is_chunked());
    let msgs = resp.sse_messages();
    assert_eq!(msgs.len(), 1);
    assert_eq!(serde_json::to_vec(&msgs[0]).unwrap().len(), 100_000);
}

#[test]
fn hostile_endless_sse() {
    let (server, mut c, s) = hostile_call(Hostile::EndlessSse);
    c.post_json_no_read(&echo_call(), &s);
    let head = c.read_head().unwrap();
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    let raw = c.read_raw_for(Duration::from_millis(300)).unwrap();
    let events = client::parse_sse(&client::decode_chunked(&raw));
    assert!(events.len() > 100, "{} events", events.len());
    assert!(events.iter().all(|e| {
        e.data
            .as_deref()
            .is_some_and(|d| d.contains("notifications/message"))
    }));
    let started = Instant::now();
    drop(server);
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[test]
fn hostile_answers_with_bad_content() {
    let (server, mut c, s) = hostile_call(Hostile::WrongId);
    let h = [("Mcp-Session-Id", s.as_str())];
    let answer = json_of(&c.post_json(&echo_call(), &h).unwrap());
    assert_eq!(answer["id"], 1005);
    assert_eq!(text_of(&answer), "e");

    server.set_script(Script::new().hostile("tools/call", Hostile::InvalidUtf8));
    let resp = c.post_json(&echo_call(), &h).unwrap();
    assert_eq!(resp.status, 200);
    assert!(std::str::from_utf8(&resp.body).is_err());
    assert!(resp.body.starts_with(b"{\"jsonrpc\":\"2.0\",\"id\":5,"));

    server.set_script(Script::new().hostile("tools/call", Hostile::Redirect));
    let resp = c.post_json(&echo_call(), &h).unwrap();
    assert_eq!(resp.status, 302);
    assert_eq!(
        resp.header("location"),
        Some(format!("http://127.0.0.2:{}/mcp", server.port()).as_str())
    );

    let elsewhere = "http://other.example:8080/mcp?x=1";
    server.set_script(Script::new().hostile("tools/call", Hostile::RedirectTo(elsewhere.into())));
    let resp = c.post_json(&echo_call(), &h).unwrap();
    assert_eq!(resp.status, 302);
    assert_eq!(resp.header("location"), Some(elsewhere));

    server.set_script(Script::new().hostile("tools/call", Hostile::Status(500)));
    let resp = c.post_json(&echo_call(), &h).unwrap();
    assert_eq!(resp.status, 500);
    assert!(!resp.body.is_empty());

    server.set_script(Script::new().hostile("tools/call", Hostile::Html));
    let resp = c.post_json(&echo_call(), &h).unwrap();
    assert_eq!(resp.status, 200);
    assert!(
        resp.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    assert!(resp.text().contains("<html>"));

    server.set_script(Script::new().hostile("tools/call", Hostile::NotJson));
    let resp = c.post_json(&echo_call(), &h).unwrap();
    assert_eq!(resp.header("content-type"), Some("application/json"));
    assert_eq!(resp.text(), "not json at all");

    server.set_script(Script::new().hostile("tools/call", Hostile::EmptyBody));
    let resp = c.post_json(&echo_call(), &h).unwrap();
    assert_eq!((resp.status, resp.body.len()), (200, 0));
    assert_eq!(resp.header("content-type"), Some("application/json"));

    server.set_script(Script::new().hostile("tools/call", Hostile::DeepNesting(100)));
    let resp = c.post_json(&echo_call(), &h).unwrap();
    let mut v = &json_of(&resp)["result"];
    let mut depth = 0;
    while let Some(inner) = v.as_array() {
        depth += 1;
        match inner.first() {
            Some(next) => v = next,
            None => break,
        }
    }
    assert_eq!(depth, 100);
    server.set_script(Script::new().hostile("tools/call", Hostile::DeepNesting(100_000)));
    let resp = c.post_json(&echo_call(), &h).unwrap();
    assert_eq!(resp.body.iter().filter(|&&b| b == b'[').count(), 100_000);

    server.set_script(Script::new().hostile(
        "tools/call",
        Hostile::ErrorEnvelope {
            code: -32000,
            message: "boom".into(),
        },
    ));
    let answer = json_of(&c.post_json(&echo_call(), &h).unwrap());
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32000, "message": "boom"}})
    );

    server.set_script(Script::new().hostile("tools/call", Hostile::ManyNotifications(50)));
    let resp = c.post_json(&echo_call(), &h).unwrap();
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    let msgs = resp.sse_messages();
    assert_eq!(msgs.len(), 51);
    assert_eq!(text_of(&msgs[50]), "e");

    // The other methods were never affected.
    assert_eq!(call(&mut c, &s, 9, "ping", json!({})).status, 200);
}

#[test]
fn hostile_close_after_priming_then_resume() {
    let (server, mut c, s) = hostile_call(Hostile::CloseAfterPriming { retry_ms: 50 });
    let resp = c
        .post_json(&echo_call(), &[("Mcp-Session-Id", &s)])
        .unwrap();
    assert_eq!(resp.status, 200);
    let events = resp.sse_events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].id.as_deref(), Some("ev-1"));
    assert_eq!(events[0].retry, Some(50));
    assert_eq!(events[0].data.as_deref(), Some(""));

    let get_headers = [
        ("Accept", "text/event-stream"),
        ("Last-Event-ID", "ev-1"),
        ("Mcp-Session-Id", s.as_str()),
    ];
    let resp = c.request("GET", "/mcp", &get_headers, b"").unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    let events = resp.sse_events();
    assert_eq!(events[0].id.as_deref(), Some("ev-2"));
    let msgs = resp.sse_messages();
    assert_eq!(msgs[0]["id"], 5);
    assert_eq!(text_of(&msgs[0]), "e");
    // Consumed: a second resume is refused.
    assert_eq!(
        c.request("GET", "/mcp", &get_headers, b"").unwrap().status,
        405
    );
    let methods = server.rpc_methods();
    assert_eq!(&methods[methods.len() - 3..], ["tools/call", "GET", "GET"]);
    let get = &server.requests()[3];
    assert_eq!(get.header("last-event-id"), Some("ev-1"));
}

#[test]
fn hostile_all_and_runtime_switch() {
    let server = TestServer::start(Script::new());
    let (mut c, s) = init(&server);
    assert_eq!(
        tool(&mut c, &s, 1, "echo", json!({"text": "ok"})).status,
        200
    );

    // Only the second operation misbehaves.
    let handle = server.script_handle();
    handle.update(|sc| sc.hostile("tools/call", Hostile::Status(503)));
    assert_eq!(
        tool(&mut c, &s, 2, "echo", json!({"text": "ok"})).status,
        503
    );
    handle.set(Script::new());
    assert_eq!(
        tool(&mut c, &s, 3, "echo", json!({"text": "ok"})).status,
        200
    );

    server.set_script(Script::new().hostile_all(Hostile::Status(502)));
    let mut c2 = connect(&server);
    assert_eq!(
        c2.post_json(&rpc(1, "initialize", json!({})), &[])
            .unwrap()
            .status,
        502
    );
    // A per-method mode wins over the global one.
    server.update_script(|sc| sc.hostile("ping", Hostile::NotJson));
    assert_eq!(
        call(&mut c, &s, 4, "ping", json!({})).text(),
        "not json at all"
    );
    server.update_script(Script::clear_hostile);
    assert_eq!(call(&mut c, &s, 5, "ping", json!({})).status, 200);
}

#[test]
fn shutdown_interrupts_everything() {
    let server = TestServer::start(
        Script::new()
            .answer_mode_for("ping", AnswerMode::SseKeepOpen)
            .delay("notifications/cancelled", Duration::from_secs(60)),
    );
    let (mut sleeper, s) = init(&server);
    sleeper.post_json_no_read(
        &rpc(
            1,
            "tools/call",
            json!({"name": "sleep", "arguments": {"ms": 60_000}}),
        ),
        &s,
    );
    let mut keep_open = connect(&server);
    keep_open.post_json_no_read(&rpc(2, "ping", json!({})), &s);
    assert_eq!(keep_open.read_head().unwrap().status, 200);
    let mut delayed = connect(&server);
    delayed.post_json_no_read(
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#,
        &s,
    );
    let _idle = connect(&server);
    assert!(server.wait_for_requests(5, Duration::from_secs(2)));

    let started = Instant::now();
    server.shutdown();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    for c in [&mut sleeper, &mut keep_open, &mut delayed] {
        assert!(c.wait_closed(Duration::from_secs(1)).unwrap());
    }
    assert!(RawClient::connect(server.addr()).is_err() || server.open_connections() == 0);
    server.shutdown(); // idempotent
}

#[test]
fn many_connections_in_parallel() {
    let server = TestServer::start(Script::new());
    let addr = server.addr();
    let threads: Vec<_> = (0..16)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = RawClient::connect(addr).unwrap();
                let s = c.initialize().unwrap().unwrap();
                for i in 0..25 {
                    let answer = tool(&mut c, &s, i, "add", json!({"a": t, "b": i}));
                    assert_eq!(
                        answer.json().unwrap()["result"]["structuredContent"]["sum"],
                        t + i
                    );
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(server.connections_accepted(), 16);
    assert_eq!(server.requests().len(), 16 * 27);
    assert_eq!(server.sessions().len(), 16);
}

#[test]
fn free_post_json_helper() {
    let server = TestServer::start(Script::new().sessions(false));
    let resp = client::post_json(server.addr(), &rpc(1, "ping", json!({})), &[]).unwrap();
    assert_eq!(resp.json().unwrap()["result"], json!({}));
}

/// Starts `tools/call` `echo` with id 1 and `text` on `c` and reads up to the server request
/// on its answer stream; returns the response head and the messages read so far.
fn call_until_server_request(
    c: &mut RawClient,
    session: &str,
    text: &str,
    needle: &str,
) -> (RawResponse, Vec<u8>) {
    let params = json!({"name": "echo", "arguments": {"text": text}});
    c.post_json_no_read(&rpc(1, "tools/call", params), session);
    let head = c.read_head().unwrap();
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-type"), Some("text/event-stream"));
    assert!(head.is_chunked(), "{:?}", head.headers);
    let raw = c
        .read_raw_until(needle.as_bytes(), Duration::from_secs(10))
        .unwrap();
    (head, raw)
}

fn messages_of(raw: &[u8]) -> Vec<Value> {
    client::parse_sse(&client::decode_chunked(raw))
        .into_iter()
        .filter_map(|e| e.data)
        .filter_map(|d| serde_json::from_str(&d).ok())
        .collect()
}

#[test]
fn a_server_request_on_the_call_stream_waits_for_the_answer() {
    // JSON answers by default: the server request makes the call's answer a stream.
    let server = TestServer::start(Script::new().server_request(ServerRequest::ping("srv-1")));
    let (mut c, s) = init(&server);
    let (_, mut raw) = call_until_server_request(&mut c, &s, "after", "srv-1");
    assert_eq!(
        messages_of(&raw),
        [json!({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})],
        "only the server request before the client answers"
    );

    // The answer comes on another connection; a response with another id does not count.
    let mut other = connect(&server);
    let stray = json!({"jsonrpc": "2.0", "id": "srv-0", "result": {}}).to_string();
    let resp = other
        .post_json(&stray, &[("Mcp-Session-Id", s.as_str())])
        .unwrap();
    assert_eq!(resp.status, 202);
    let answer = json!({"jsonrpc": "2.0", "id": "srv-1", "result": {}});
    let resp = other
        .post_json(&answer.to_string(), &[("Mcp-Session-Id", s.as_str())])
        .unwrap();
    assert_eq!(resp.status, 202);

    raw.extend(
        c.read_raw_until(b"0\r\n\r\n", Duration::from_secs(10))
            .unwrap(),
    );
    let messages = messages_of(&raw);
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[1]["id"], 1);
    assert_eq!(text_of(&messages[1]), "after");
    assert_eq!(
        server.rpc_methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "(response)",
            "(response)"
        ]
    );
    assert_eq!(
        server.client_responses(),
        [serde_json::from_str::<Value>(&stray).unwrap(), answer]
    );

    // The connection serves the next call (which asks again).
    let (_, raw) = call_until_server_request(&mut c, &s, "again", "srv-1");
    assert_eq!(messages_of(&raw)[0]["method"], "ping");
    server.update_script(Script::clear_server_request);
    let resp = other
        .post_json(
            &json!({"jsonrpc": "2.0", "id": "srv-1", "error": {"code": -1, "message": "no"}})
                .to_string(),
            &[("Mcp-Session-Id", s.as_str())],
        )
        .unwrap();
    assert_eq!(resp.status, 202);
    let raw = c
        .read_raw_until(b"0\r\n\r\n", Duration::from_secs(10))
        .unwrap();
    assert_eq!(
        text_of(&messages_of(&raw)[0]),
        "again",
        "an error answer counts too"
    );
}

#[test]
fn a_server_request_can_leave_the_stream_open_after_the_answer() {
    let server = TestServer::start(
        Script::new()
            .server_request(ServerRequest::elicit_name(7, "Ada"))
            .answer_mode_for("tools/call", AnswerMode::SseKeepOpen)
            .event_ids(true),
    );
    let (mut c, s) = init(&server);
    let (_, mut raw) = call_until_server_request(&mut c, &s, "open", "elicitation/create");
    let ask = &messages_of(&raw)[0];
    assert_eq!(ask["id"], 7);
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["name"]["default"],
        "Ada"
    );
    let answer = json!({"jsonrpc": "2.0", "id": 7,
        "result": {"action": "accept", "content": {"name": "Ada"}}});
    let resp = client::post_json(
        server.addr(),
        &answer.to_string(),
        &[("Mcp-Session-Id", s.as_str())],
    )
    .unwrap();
    assert_eq!(resp.status, 202);
    raw.extend(
        c.read_raw_until(b": keepalive", Duration::from_secs(10))
            .unwrap(),
    );
    let events = client::parse_sse(&client::decode_chunked(&raw));
    let ids: Vec<Option<&str>> = events.iter().map(|e| e.id.as_deref()).collect();
    assert_eq!(
        ids,
        [Some("0"), Some("1"), Some("2")],
        "priming, request, answer"
    );
    let messages = messages_of(&raw);
    assert_eq!(text_of(&messages[1]), "open");
    assert!(
        !c.wait_closed(Duration::from_millis(300)).unwrap(),
        "the stream stays open"
    );
    assert_eq!(server.client_responses(), [answer]);
}

#[test]
fn an_unanswered_server_request_fails_the_call_in_time() {
    let timeout = Duration::from_millis(300);
    let server = TestServer::start(
        Script::new()
            .answer_mode(AnswerMode::Sse)
            // Streamed all the same: the request must go out before the answer exists.
            .sse_content_length(true)
            .server_request(ServerRequest::ping(5).answer_timeout(timeout)),
    );
    let (mut c, s) = init(&server);
    let started = Instant::now();
    let (_, mut raw) = call_until_server_request(&mut c, &s, "late", "ping");
    raw.extend(
        c.read_raw_until(b"0\r\n\r\n", Duration::from_secs(10))
            .unwrap(),
    );
    let elapsed = started.elapsed();
    let messages = messages_of(&raw);
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert_eq!(messages[1]["id"], 1);
    assert_eq!(messages[1]["error"]["code"], -32000);
    let message = messages[1]["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("no answer to the server request 5"),
        "{message}"
    );
    assert!(elapsed >= timeout, "{elapsed:?}");
    assert!(elapsed < timeout + Duration::from_secs(5), "{elapsed:?}");
    // A late answer is recorded and accepted, and changes nothing.
    let late = json!({"jsonrpc": "2.0", "id": 5, "result": {}}).to_string();
    let resp = c
        .post_json(&late, &[("Mcp-Session-Id", s.as_str())])
        .unwrap();
    assert_eq!(resp.status, 202);
    assert_eq!(server.client_responses().len(), 1);
}

#[test]
fn shutdown_ends_a_wait_for_a_server_request_answer() {
    let server = TestServer::start(
        Script::new()
            .server_request(ServerRequest::ping("srv-1").answer_timeout(Duration::from_secs(60))),
    );
    let (mut c, s) = init(&server);
    call_until_server_request(&mut c, &s, "x", "srv-1");
    let started = Instant::now();
    server.shutdown();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(1), "{took:?}");
    assert!(c.wait_closed(Duration::from_secs(5)).unwrap());
    assert_eq!(server.open_connections(), 0);
}

// ---------------------------------------------------------------------------------------
// The OAuth mode, at the wire level.
// ---------------------------------------------------------------------------------------

/// A query or form value of `text` (`a=1&b=2`).
fn form_value(text: &str, name: &str) -> Option<String> {
    url::form_urlencoded::parse(text.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

fn form(pairs: &[(&str, &str)]) -> String {
    let mut out = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        out.append_pair(k, v);
    }
    out.finish()
}

fn post_form(c: &mut RawClient, path: &str, body: &str) -> RawResponse {
    c.request(
        "POST",
        path,
        &[("Content-Type", "application/x-www-form-urlencoded")],
        body.as_bytes(),
    )
    .unwrap()
}

#[test]
fn oauth_mode_serves_discovery_and_checks_every_rule_of_the_code_flow() {
    use base64::Engine as _;
    use mcp_testkit::OAuthScript;
    use sha2::Digest as _;

    let server = TestServer::start(
        Script::new().oauth(
            OAuthScript::new()
                .challenge_scope("files:read")
                .call_scope("files:write"),
        ),
    );
    let base = server.base_url();
    let mut c = connect(&server);

    // The MCP endpoint refuses without a token, naming its resource metadata.
    let refused = c.post_json(&rpc(1, "initialize", json!({})), &[]).unwrap();
    assert_eq!(refused.status, 401);
    assert_eq!(
        refused.header("www-authenticate"),
        Some(
            format!(
                "Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\", scope=\"files:read\""
            )
            .as_str()
        )
    );
    let prm = c
        .request("GET", mcp_testkit::RESOURCE_METADATA_PATH, &[], b"")
        .unwrap();
    let prm = prm.json().unwrap();
    assert_eq!(prm["resource"], server.url());
    assert_eq!(prm["authorization_servers"], json!([base]));
    let metadata = c
        .request("GET", mcp_testkit::SERVER_METADATA_PATH, &[], b"")
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(metadata["issuer"], base);
    assert_eq!(metadata["token_endpoint"], format!("{base}/token"));
    assert_eq!(
        metadata["code_challenge_methods_supported"],
        json!(["S256"])
    );

    // Registration.
    let redirect = "http://127.0.0.1:9/cb";
    let registered = c
        .request(
            "POST",
            "/register",
            &[("Content-Type", "application/json")],
            json!({"redirect_uris": [redirect], "client_name": "raw"})
                .to_string()
                .as_bytes(),
        )
        .unwrap();
    assert_eq!(registered.status, 201);
    let client_id = registered.json().unwrap()["client_id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Authorization: PKCE S256 and the resource are required.
    let verifier = "v".repeat(43);
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()));
    let authorize = |c: &mut RawClient, method: &str| {
        let query = form(&[
            ("response_type", "code"),
            ("client_id", &client_id),
            ("redirect_uri", redirect),
            ("code_challenge", &challenge),
            ("code_challenge_method", method),
            ("state", "st-1"),
            ("resource", &server.url()),
            ("scope", "files:read"),
        ]);
        let answer = c
            .request("GET", &format!("/authorize?{query}"), &[], b"")
            .unwrap();
        assert_eq!(answer.status, 302);
        let location = answer.header("location").unwrap().to_owned();
        assert!(location.starts_with(&format!("{redirect}?")), "{location}");
        location.split_once('?').unwrap().1.to_owned()
    };
    let plain = authorize(&mut c, "plain");
    assert_eq!(
        form_value(&plain, "error").as_deref(),
        Some("invalid_request")
    );
    let good = authorize(&mut c, "S256");
    assert_eq!(form_value(&good, "state").as_deref(), Some("st-1"));
    assert_eq!(form_value(&good, "iss").as_deref(), Some(base.as_str()));
    let code = form_value(&good, "code").unwrap();

    // The token endpoint checks the verifier, and a code is good once.
    let exchange = |c: &mut RawClient, verifier: &str| {
        post_form(
            c,
            "/token",
            &form(&[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", redirect),
                ("code_verifier", verifier),
                ("client_id", &client_id),
                ("resource", &server.url()),
            ]),
        )
    };
    let wrong = exchange(&mut c, &"w".repeat(43));
    assert_eq!(wrong.status, 400);
    assert_eq!(wrong.json().unwrap()["error"], "invalid_grant");
    // The failed attempt spent the code.
    assert_eq!(exchange(&mut c, &verifier).status, 400);
    let code = form_value(&authorize(&mut c, "S256"), "code").unwrap();
    let tokens = post_form(
        &mut c,
        "/token",
        &form(&[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", redirect),
            ("code_verifier", &verifier),
            ("client_id", &client_id),
            ("resource", &server.url()),
        ]),
    );
    assert_eq!(tokens.status, 200, "{}", tokens.text());
    let tokens = tokens.json().unwrap();
    assert_eq!(tokens["scope"], "files:read");
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let bearer = format!("Bearer {access}");

    // The token opens /mcp; a call needs files:write.
    let session = {
        let answer = c
            .post_json(
                &rpc(
                    2,
                    "initialize",
                    json!({"protocolVersion": "2025-11-25",
                "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}),
                ),
                &[("Authorization", &bearer)],
            )
            .unwrap();
        assert_eq!(answer.status, 200, "{}", answer.text());
        answer.header("mcp-session-id").unwrap().to_owned()
    };
    let headers = [
        ("Authorization", bearer.as_str()),
        ("Mcp-Session-Id", &session),
    ];
    let listed = c
        .post_json(&rpc(3, "tools/list", json!({})), &headers)
        .unwrap();
    assert_eq!(listed.status, 200);
    let call = rpc(
        4,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
    );
    let step_up = c.post_json(&call, &headers).unwrap();
    assert_eq!(step_up.status, 403);
    let challenge = step_up.header("www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\"")
            && challenge.contains("scope=\"files:write\""),
        "{challenge}"
    );

    // Refresh: a new token; the refresh token rotates.
    let refresh = tokens["refresh_token"].as_str().unwrap().to_owned();
    let refresh_form = form(&[
        ("grant_type", "refresh_token"),
        ("refresh_token", &refresh),
        ("client_id", &client_id),
    ]);
    let refreshed = post_form(&mut c, "/token", &refresh_form);
    assert_eq!(refreshed.status, 200);
    assert_ne!(refreshed.json().unwrap()["access_token"], access.as_str());
    assert_eq!(post_form(&mut c, "/token", &refresh_form).status, 400);

    // Expired tokens are refused again.
    server.expire_tokens();
    assert_eq!(
        c.post_json(&rpc(5, "tools/list", json!({})), &headers)
            .unwrap()
            .status,
        401
    );

    assert!(server.issued_secrets().contains(&access));
    let trail = server.trail();
    assert_eq!(
        trail,
        [
            "initialize",
            "oauth:resource-metadata",
            "oauth:server-metadata",
            "oauth:register",
            "oauth:authorize",
            "oauth:authorize",
            "oauth:token",
            "oauth:token",
            "oauth:authorize",
            "oauth:token",
            "initialize",
            "tools/list",
            "tools/call",
            "oauth:refresh",
            "oauth:refresh",
            "tools/list",
        ]
    );
}
