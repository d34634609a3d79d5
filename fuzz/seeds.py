#!/usr/bin/env python3
"""Writes the seed corpus of the mcp-proto fuzz targets into fuzz/corpus/<target>/.

The seeds are real answers (JSON results for each method, event streams with ids, priming
events, keep-alive comments, notifications before the answer, CRLF and CR line ends, errors
with null and string ids, a TypeScript-SDK-style stream...) and real driver sequences, laid
out in the byte formats documented in fuzz/harness/src/ (keep the two in step).

Run it from anywhere: `python3 fuzz/seeds.py`. It rewrites the three seed directories
whole, so the committed corpus is always exactly what this script writes.
"""

import json
import pathlib
import shutil
import struct

ROOT = pathlib.Path(__file__).resolve().parent / "corpus"
UUID = "7f3c2b1a-9d8e-4f60-a1b2-c3d4e5f60718"


def rpc_result(id_, result):
    return json.dumps({"jsonrpc": "2.0", "id": id_, "result": result}, separators=(",", ":"))


def rpc_error(id_, code, message, data=None):
    error = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return json.dumps({"jsonrpc": "2.0", "id": id_, "error": error}, separators=(",", ":"))


def note(method, params):
    return json.dumps({"jsonrpc": "2.0", "method": method, "params": params}, separators=(",", ":"))


INIT = rpc_result(1, {
    "protocolVersion": "2025-06-18",
    "capabilities": {"tools": {"listChanged": True}, "logging": {}},
    "serverInfo": {"name": "example-server", "version": "1.2.3", "title": "Example"},
    "instructions": "Use the echo tool.",
})
INIT_OLD = rpc_result(1, {"protocolVersion": "2025-03-26", "capabilities": {},
                          "serverInfo": {"name": "old", "version": "0.1"}})
INIT_NEW = rpc_result(1, {"protocolVersion": "2025-11-25", "capabilities": {},
                          "serverInfo": {"name": "new", "version": "2"}})
INIT_BAD_VERSION = rpc_result(1, {"protocolVersion": "2024-01-01", "capabilities": {}})
INIT_NO_VERSION = rpc_result(1, {"capabilities": {}})
PING = rpc_result(2, {})
TOOLS = rpc_result(2, {"tools": [
    {"name": "echo", "description": "Echo text", "inputSchema": {
        "type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"name": "add", "inputSchema": {"type": "object"}},
]})
TOOLS_MORE = rpc_result(2, {"tools": [{"name": "page1"}], "nextCursor": "cursor-1"})
TOOLS_EMPTY_CURSOR = rpc_result(2, {"tools": [], "nextCursor": ""})
TOOLS_NOT_ARRAY = rpc_result(2, {"tools": {"name": "x"}})
CALL = rpc_result(2, {"content": [{"type": "text", "text": "hi"}]})
CALL_RICH = rpc_result(2, {
    "content": [{"type": "text", "text": "a"}, {"type": "image", "data": "aGk=", "mimeType": "image/png"},
                {"type": "resource_link", "uri": "file:///x", "name": "x"}, {"type": "future"}],
    "structuredContent": {"sum": 3},
})
CALL_IS_ERROR = rpc_result(2, {"content": [{"type": "text", "text": "boom"}], "isError": True})
ERR_NULL = rpc_error(None, -32600, "Invalid Request")
ERR_STRING = rpc_error("server-err-1", -32603, "Internal\nerror \u001b[31m", {"trace": [1, 2]})
ERR_NO_ID = json.dumps({"jsonrpc": "2.0", "error": {"code": "x"}}, separators=(",", ":"))
ERR_SAME = rpc_error(2, -32602, "Unknown tool: nope")
WRONG_ID = rpc_result(7, {"content": []})
STRING_ID = rpc_result("2", {"content": []})
PROGRESS = note("notifications/progress", {"progressToken": "t", "progress": 1, "total": 3, "message": "step 1"})
LOG = note("notifications/message", {"level": "info", "data": "working"})
SERVER_REQ = json.dumps({"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create",
                         "params": {"message": "?", "requestedSchema": {"type": "object"}}},
                        separators=(",", ":"))

ANSWERS = {
    "init": INIT, "init-old": INIT_OLD, "init-new": INIT_NEW, "init-bad-version": INIT_BAD_VERSION,
    "init-no-version": INIT_NO_VERSION, "ping": PING, "tools": TOOLS, "tools-more": TOOLS_MORE,
    "tools-empty-cursor": TOOLS_EMPTY_CURSOR, "tools-not-array": TOOLS_NOT_ARRAY, "call": CALL,
    "call-rich": CALL_RICH, "call-is-error": CALL_IS_ERROR, "err-null-id": ERR_NULL,
    "err-string-id": ERR_STRING, "err-no-id": ERR_NO_ID, "err-same-id": ERR_SAME,
    "wrong-id": WRONG_ID, "string-id": STRING_ID,
}


# Modern-era (2026-07-28) answers: a modern operation's first request has id 1 (no handshake).
MODERN = "2026-07-28"
M_CALL = rpc_result(1, {"content": [{"type": "text", "text": "hi"}], "resultType": "complete"})
M_TOOLS = rpc_result(1, {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}],
                         "resultType": "complete", "ttlMs": 60000, "cacheScope": "public"})
M_DISCOVER = rpc_result(1, {"supportedVersions": [MODERN], "capabilities": {"tools": {}},
                            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "m", "version": "1"}},
                            "resultType": "complete"})
M_READ = rpc_result(1, {"contents": [{"uri": "file:///fuzz/notes.txt", "text": "notes"}], "resultType": "complete"})
SKILL_MD = "---\nname: fuzz\ndescription: A skill for the fuzzer\n---\n\nRead REF.md.\n"
M_SKILL_MD = rpc_result(1, {"contents": [{"uri": "skill://fuzz/SKILL.md", "mimeType": "text/markdown",
                                          "text": SKILL_MD}], "resultType": "complete"})
M_SKILL_BAD = rpc_result(1, {"contents": [{"uri": "skill://fuzz/SKILL.md",
                                           "text": "---\nname: other\n---\n"}], "resultType": "complete"})
M_PROMPT = rpc_result(1, {"messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
                          "resultType": "complete"})
M_INPUT = rpc_result(1, {"resultType": "input_required", "inputRequests": {"name": {
    "method": "elicitation/create", "params": {"message": "?", "requestedSchema": {
        "type": "object", "properties": {"name": {"type": "string", "default": "Ada"}}}}}},
    "requestState": "s-1"})
M_INPUT_STATE_ONLY = rpc_result(1, {"resultType": "input_required", "requestState": "s-2"})
M_INPUT_UNANSWERED = rpc_result(1, {"resultType": "input_required", "inputRequests": {
    "r": {"method": "sampling/createMessage", "params": {}}}})
M_VERSION_MODERN = rpc_error(1, -32022, "Unsupported protocol version", {"supported": [MODERN], "requested": "x"})
M_VERSION_LEGACY = rpc_error(1, -32022, "Unsupported protocol version", {"supported": ["2025-11-25"]})
M_MISMATCH = rpc_error(1, -32020, "Header mismatch: Mcp-Name")
M_MISSING_CAP = rpc_error(1, -32021, "Missing required client capability")
M_NOT_FOUND = rpc_error(1, -32601, "Method not found")
NO_SESSION = rpc_error(None, -32000, "Bad Request: No valid session ID provided")

MODERN_ANSWERS = {
    "call": M_CALL, "tools": M_TOOLS, "discover": M_DISCOVER, "read": M_READ, "skill-md": M_SKILL_MD,
    "skill-md-mismatch": M_SKILL_BAD, "prompt": M_PROMPT, "input-required": M_INPUT,
    "input-state-only": M_INPUT_STATE_ONLY, "input-unanswered": M_INPUT_UNANSWERED,
    "version-modern": M_VERSION_MODERN, "version-legacy": M_VERSION_LEGACY,
    "header-mismatch": M_MISMATCH, "missing-capability": M_MISSING_CAP, "method-not-found": M_NOT_FOUND,
    "no-session": NO_SESSION,
}


def sse(*events, nl="\n"):
    """Event-stream text: each event is a list of lines; a blank line after each."""
    out = []
    for lines in events:
        out.extend(line + nl for line in lines)
        out.append(nl)
    return "".join(out)


def streams():
    """(name, bytes) of event streams built from real answers."""
    s = {}
    s["plain"] = sse([f"data: {CALL}"])
    s["priming"] = sse(["id: 0", "data:"], [f"id: 1", f"data: {CALL}"])
    s["priming-retry"] = sse(["id: 0", "retry: 3000", "data:"], [f"data: {CALL}"])
    s["keepalive"] = ": keepalive\n\n" + sse([": ping", f"data: {CALL}"]) + ": bye\n"
    s["notes-first"] = sse([f"data: {PROGRESS}"], [f"data: {LOG}"], [f"data: {SERVER_REQ}"], [f"data: {CALL}"])
    s["crlf"] = sse(["id: 0", "data:"], [f"data: {CALL}"], nl="\r\n")
    s["cr"] = sse([f"data: {PROGRESS}"], [f"data: {CALL}"], nl="\r")
    s["typescript"] = sse(["event: message", f"id: {UUID}", f"data: {TOOLS}"])
    s["typescript-init"] = sse(["event: message", f"id: {UUID}", f"data: {INIT}"])
    s["multiline"] = sse(["data: {\"jsonrpc\":\"2.0\",", "data: \"id\":2,", "data: \"result\":{\"content\":[]}}"])
    s["bom"] = "\ufeff" + sse([f"data: {PING}"])
    s["no-final-blank"] = f"data: {CALL}"
    s["err-null"] = sse([f"data: {ERR_NULL}"])
    s["err-string"] = sse(["event: message", f"data: {ERR_STRING}"])
    s["only-notes"] = sse([f"data: {LOG}"], [f"data: {PROGRESS}"])
    s["no-message"] = sse(["id: 0", "data:"], [": keepalive"])
    s["not-json"] = sse(["data: not json"])
    s["not-object"] = sse(["data: [1,2,3]"])
    s["fields"] = sse(["event:", "id", "data", "retry: x", "retry:99999999999999999999999", "unknown: 1", "data:x"])
    s["id-nul"] = "id: a\x00b\ndata: x\n\n"
    s["after-answer"] = sse([f"data: {CALL}"], ["data: {garbage"])
    return {k: v.encode() for k, v in s.items()}


def write(target, name, data):
    d = ROOT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_bytes(data)


def u16(v):
    return struct.pack("<H", v)


def sse_seeds():
    for name, stream in streams().items():
        write("sse", f"{name}-whole", bytes([0]) + stream)
        # Three cuts at 1/4, 1/2 and 3/4 of the stream.
        n = len(stream)
        cuts = b"".join(u16(c) for c in (n // 4, n // 2, 3 * n // 4))
        write("sse", f"{name}-cut3", bytes([3]) + cuts + stream)
    # Byte by byte, and small limits that make size errors reachable.
    st = streams()
    write("sse", "crlf-bytewise", bytes([0x20]) + st["crlf"])
    write("sse", "cr-bytewise", bytes([0x20]) + st["cr"])
    write("sse", "plain-limit256", bytes([0x40]) + st["plain"])
    write("sse", "notes-limit16", bytes([0x80 | 2]) + u16(5) + u16(40) + st["notes-first"])
    write("sse", "keepalive-limit1", bytes([0xC0]) + st["keepalive"])
    write("sse", "bad-utf8", bytes([1]) + u16(8) + b"data: \xe2\x82\nid: \xff\n\ndata: ok\n\n")
    write("sse", "split-crlf", bytes([2]) + u16(7) + u16(7) + b"data: a\r\n\r\ndata: b\r\r")
    write("sse", "empty", b"")


def answer_seeds():
    # [status byte, split byte] + body. Status byte < 160 is 200; 160 + i picks STATUSES[i].
    statuses = {"200": 0, "202": 162, "204": 163, "404": 176, "500": 184, "503": 186, "301": 169}
    for name, body in ANSWERS.items():
        write("answer", f"json-{name}", bytes([0, 0]) + body.encode())
    write("answer", "json-call-chunked7", bytes([0, 7]) + CALL.encode())
    write("answer", "json-init-chunked1-empties", bytes([0, 0x80]) + INIT.encode())
    write("answer", "json-pretty", bytes([0, 0]) + json.dumps(json.loads(CALL), indent=2).encode())
    write("answer", "json-whitespace", bytes([0, 0]) + b" \r\n\t ")
    write("answer", "json-empty", bytes([0, 0]))
    write("answer", "json-array", bytes([0, 0]) + b"[" + CALL.encode() + b"]")
    write("answer", "json-notification", bytes([0, 0]) + LOG.encode())
    write("answer", "json-truncated", bytes([0, 0]) + CALL.encode()[:25])
    write("answer", "json-trailing", bytes([0, 0]) + CALL.encode() + b"\n{}")
    for status, byte in statuses.items():
        write("answer", f"status-{status}", bytes([byte, 0]) + CALL.encode())
    for name, stream in streams().items():
        write("answer", f"sse-{name}", bytes([0, 13]) + stream)
    for name, body in [("init", INIT), ("ping", PING), ("tools-more", TOOLS_MORE)]:
        write("answer", f"sse-{name}-crlf", bytes([0, 0]) + sse(["id: 0", "data:"], [f"data: {body}"], nl="\r\n").encode())
    write("answer", "sse-init-typescript", bytes([0, 0]) + sse(["event: message", f"id: {UUID}", f"data: {INIT}"]).encode())
    # Modern answers (every answer input also runs against modern and detecting operations).
    s400 = 160 + 13  # STATUSES[13] = 400
    s404, s405 = 160 + 16, 160 + 17
    for name, body in MODERN_ANSWERS.items():
        write("answer", f"modern-{name}", bytes([0, 0]) + body.encode())
    for name in ("version-modern", "version-legacy", "header-mismatch", "missing-capability", "no-session"):
        write("answer", f"modern-400-{name}", bytes([s400, 0]) + MODERN_ANSWERS[name].encode())
    # The second file of a skill load (request id 2): the right bytes, then a wrong size.
    ref = {"uri": "skill://fuzz/references/REF.md", "text": "Reference text.\n"}
    write("answer", "modern-skill-ref", bytes([0, 0]) + rpc_result(2, {"contents": [ref], "resultType": "complete"}).encode())
    write("answer", "modern-skill-ref-size", bytes([0, 0]) + rpc_result(2, {"contents": [dict(ref, text="x")]}).encode())
    write("answer", "modern-400-plain", bytes([s400, 0]) + b"Bad Request")
    write("answer", "modern-400-empty", bytes([s400, 0]))
    write("answer", "modern-404-plain", bytes([s404, 0]) + b"Not Found")
    write("answer", "modern-405-plain", bytes([s405, 0]) + b"Method Not Allowed")
    write("answer", "modern-sse-call", bytes([0, 5]) + sse(["event: message", f"data: {M_CALL}"]).encode())
    write("answer", "modern-sse-input-required", bytes([0, 0]) + sse([f"data: {LOG}"], [f"data: {M_INPUT}"]).encode())
    write("answer", "modern-sse-broken", bytes([0, 0]) + sse(["id: 0", "data:"], [": keepalive"], [f"data: {LOG}"]).encode())


# The operation target's opcodes (see `operation` in fuzz/harness/src/streamable.rs).
POLL = bytes([0])
END = bytes([8])
TIMEOUT = bytes([10])
CANCEL = bytes([11])
JUMP = bytes([14])
POLL_EVENT = bytes([15])
PROBE, LIST, CALL_ACTION, CLOSE = 0, 1, 2, 3
PROGRESS = 0x04
RESPONDERS = 0x08
NOTICE = 0x10
LISTEN = 0x20
LIVE = 0x80
SECOND, MILLI = 0, 2
ALT = 0x40  # with PROBE, LIST, CALL_ACTION, CLOSE: read a resource, get a prompt, load a skill, list skills
READ, PROMPT, SKILL_LOAD, SKILLS = ALT | 0, ALT | 1, ALT | 2, ALT | 3
# The era: bits 3-4 of the page byte.
LEGACY_ERA, MODERN_ERA, DETECT, FROM_LEGACY = 0, 1, 2, 3


def era(mode, pages=7):
    """The page byte: the page ceiling (pages % 8 + 1) and the era (mode << 3)."""
    return pages | (mode << 3)


def setup(action, budget=19, resolution=SECOND, pages=7):
    """budget byte: < 240 is budget % 30 + 1 seconds; >= 240 is (b - 240) * 61 ms."""
    return bytes([action, budget, resolution, pages])


def head(status_pick=0, content=1, session=0, length=0):
    """content: index into CONTENT_TYPES; session: index into SESSION_IDS (31: too long)."""
    return bytes([2, status_pick, content | (session << 3), length])


def head_status(code, content=1):
    return bytes([2, 224]) + u16(code - 100) + bytes([content, 0])


def healthy(sse_=False, more=False, no_end=False):
    return bytes([3, (1 if sse_ else 0) | (2 if more else 0) | (4 if no_end else 0)])


def frag(i):
    return bytes([4, i])


def raw(data):
    assert len(data) < 256
    return bytes([6, len(data)]) + data


def big(kib, filler):
    return bytes([7, kib - 1, filler])


TIMED_OUT, CONNECT, IO, PROTOCOL, DECLINED = 0, 1, 2, 0x80, 0xC0


def transport(kind, detail=0):
    """kind: TIMED_OUT, CONNECT or IO (the byte % 3), or PROTOCOL or DECLINED (its top bits);
    detail: the index into DETAILS (bits 2 and 3)."""
    if kind >= 0x80:
        return bytes([9, kind | (detail << 2)])
    return bytes([9, next(b for b in range(128) if b % 3 == kind and (b >> 2) % 4 == detail)])


def at(selector, input_):
    """The same input about another leg: selector k is the k-th most recent leg sent."""
    return bytes([input_[0] | (selector << 4)]) + input_[1:]


def fwd(ms):
    return bytes([12]) + u16(ms)


def back(ms):
    return bytes([13]) + u16(ms)


ELICIT = b'data: {"jsonrpc":"2.0","id":"srv-1","method":"elicitation/create","params":{"message":"?","requestedSchema":{"type":"object","properties":{"name":{"type":"string","default":"Ada"}}}}}\n\n'
PING_REQ = b'event: message\ndata: {"jsonrpc":"2.0","id":9,"method":"ping"}\n\n'


def leg(*answer):
    return POLL + b"".join(answer)


def raws(data):
    """Raw chunks of at most 250 bytes carrying `data`."""
    return b"".join(raw(data[i:i + 250]) for i in range(0, len(data), 250))


def refusal(status, body, content=1):
    """A refusal with a body read to its end (a JSON-RPC error explains a modern refusal)."""
    return (head_status(status, content), raws(body), END)


def operation_seeds():
    h, hs = healthy(), healthy(sse_=True)
    ops = {
        "call-healthy": setup(CALL_ACTION) + leg(h) + leg(h) + leg(h) + POLL + POLL,
        "call-healthy-sse": setup(CALL_ACTION) + leg(hs) + leg(hs) + POLL + leg(hs) + POLL + POLL + POLL,
        "probe-healthy": setup(PROBE) + leg(h) + leg(h) + POLL,
        "probe-live-ping": setup(PROBE | LIVE) + leg(hs) + POLL + POLL,
        "list-pages": setup(LIST, pages=7) + leg(h) + leg(h) + leg(healthy(more=True)) + leg(healthy(sse_=True, more=True)) + leg(h) + POLL,
        "list-too-many-pages": setup(LIST, pages=1) + leg(h) + leg(h) + leg(healthy(more=True)) + POLL,
        "list-live": setup(LIST | LIVE) + leg(healthy(more=True)) + leg(h) + POLL,
        "call-slow-legs": setup(CALL_ACTION, budget=9) + leg(fwd(4000), h) + leg(fwd(3500), h) + leg(fwd(2000), h) + POLL,
        "call-budget-spent": setup(CALL_ACTION, budget=0) + leg(fwd(900), h) + fwd(200) + leg(h) + POLL + POLL,
        "call-ms-budget": setup(CALL_ACTION, budget=245, resolution=MILLI) + leg(fwd(100), h) + leg(fwd(150), h) + POLL + POLL,
        "call-zero-budget": setup(CALL_ACTION, budget=240, resolution=MILLI) + POLL + POLL + POLL,
        "call-unit-7ms": setup(CALL_ACTION, budget=241, resolution=3 | (6 << 2)) + leg(fwd(33), h) + leg(fwd(17), h) + POLL,
        "call-clock-back": setup(CALL_ACTION, budget=4) + leg(fwd(3000), h) + back(5000) + leg(h) + leg(back(2000), h) + POLL,
        "call-stall": setup(CALL_ACTION) + leg(h) + leg(h) + POLL + JUMP + POLL + POLL,
        "call-timeout-early": setup(CALL_ACTION) + leg(TIMEOUT, fwd(1000), TIMEOUT, h) + POLL,
        "call-404-reinit": setup(CALL_ACTION) + leg(h) + leg(h) + leg(head(176)) + leg(h) + leg(h) + leg(h) + POLL,
        "call-404-twice": setup(CALL_ACTION) + leg(h) + leg(h) + leg(head(176)) + leg(h) + leg(h) + leg(head(176)) + POLL,
        "call-500": setup(CALL_ACTION) + leg(head_status(500)) + POLL,
        "call-status-arbitrary": setup(CALL_ACTION) + leg(h) + leg(head_status(299)) + leg(head_status(418)) + POLL,
        "call-html": setup(CALL_ACTION) + leg(head(0, content=5)) + POLL,
        "init-bad-session": setup(CALL_ACTION) + leg(head(0, content=1, session=4)) + POLL,
        "init-long-session": setup(CALL_ACTION) + leg(head(0, content=1, session=31)) + POLL,
        "init-empty-session": setup(PROBE) + leg(head(0, content=1, session=3)) + POLL,
        "init-fragments": setup(PROBE) + leg(head(0, content=1, session=1), frag(0), END) + leg(h) + POLL,
        "call-fragments-pieces": setup(CALL_ACTION | LIVE) + leg(head(0, 1), frag(10), frag(11), frag(12), frag(13), END) + POLL,
        "call-sse-fragments": setup(CALL_ACTION | LIVE) + leg(head(0, 3), frag(26), frag(28), frag(36), frag(35)) + POLL_EVENT + POLL + POLL,
        "call-sse-raw": setup(CALL_ACTION | LIVE) + leg(head(0, 4), raw(b"event: message\r\nid: 1\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,"), raw(b"\"result\":{\"content\":[]}}\r\n\r\n")) + POLL,
        "call-json-oversize": setup(CALL_ACTION | LIVE) + leg(head(0, 1), big(64, 0), raw(b"x")) + POLL,
        "call-json-at-cap": setup(CALL_ACTION | LIVE) + leg(head(0, 1), big(63, 1), big(1, 1), END) + POLL,
        "call-sse-oversize-line": setup(CALL_ACTION | LIVE) + leg(head(0, 3), big(64, 0), big(1, 0)) + POLL,
        "call-sse-many-notes": setup(CALL_ACTION | LIVE) + leg(head(0, 3), big(64, 5), big(64, 5), frag(35)) + POLL + POLL + POLL,
        "call-sse-keepalives": setup(CALL_ACTION | LIVE) + leg(head(0, 3), big(32, 4), big(32, 4), TIMEOUT, JUMP) + POLL,
        "call-content-length-huge": setup(CALL_ACTION | LIVE) + leg(head(0, 1, length=3)) + POLL,
        "call-content-length-odd": setup(CALL_ACTION | LIVE) + leg(head(0, 1, length=4)) + leg(head(0, 1, length=5)) + POLL,
        "call-transport-timeout": setup(CALL_ACTION) + leg(h) + leg(transport(0)) + POLL,
        "call-transport-connect": setup(CALL_ACTION) + leg(transport(1, 2)) + POLL,
        "call-transport-io": setup(CALL_ACTION) + leg(h) + leg(h) + leg(head(0, 3), frag(26), transport(2, 3)) + POLL,
        "call-cancel-mid-leg": setup(CALL_ACTION) + leg(h) + leg(head(0, 3), frag(36), CANCEL) + POLL + POLL,
        "call-cancel-before": setup(CALL_ACTION) + CANCEL + POLL + POLL,
        "call-cancel-after": setup(CALL_ACTION | LIVE) + leg(h) + POLL + CANCEL + POLL,
        "call-inputs-out-of-order": setup(CALL_ACTION) + END + frag(1) + head(0, 1) + POLL + frag(0) + head(0, 1) + head(0, 1) + END + END + POLL,
        "call-after-done": setup(CALL_ACTION | LIVE) + leg(h) + POLL + head(0, 1) + frag(1) + END + transport(1) + TIMEOUT + POLL,
        "call-initialized-body": setup(CALL_ACTION) + leg(h) + leg(head(0, 1), frag(1), END) + leg(h) + POLL,
        "call-no-end-then-timer": setup(CALL_ACTION | LIVE) + leg(healthy(sse_=True, no_end=True)) + POLL,
        "call-sse-no-answer": setup(CALL_ACTION | LIVE) + leg(head(0, 3), frag(26), frag(28), END) + POLL,
        "call-error-null-id": setup(CALL_ACTION | LIVE) + leg(head(0, 1), frag(5), END) + POLL,
        "call-error-sse": setup(CALL_ACTION | LIVE) + leg(head(0, 3), frag(23), raw(b'{"jsonrpc":"2.0","id":"x","error":{"code":-1,"message":"m"}}\n\n')) + POLL,
        "list-repeated-cursor": setup(LIST | LIVE) + leg(head(0, 1), frag(2), END) + leg(head(0, 1), raw(b'{"jsonrpc":"2.0","id":3,"result":{"tools":[],"nextCursor":"c2"}}'), END) + POLL,
        "init-unsupported-version": setup(PROBE) + leg(head(0, 1, session=1), frag(9), END) + POLL,
        "close-live": setup(CLOSE | LIVE) + leg(h) + POLL,
        "close-nothing-to-close": setup(CLOSE) + POLL + POLL,
        "close-405": setup(CLOSE | LIVE) + leg(head(177)) + POLL,
        "close-500": setup(CLOSE | LIVE) + leg(head(184)) + POLL,
        "call-progress": setup(CALL_ACTION | PROGRESS) + leg(h) + leg(h) + leg(head(0, 3), frag(23), frag(7), frag(33), frag(35)) + POLL + POLL,
        "call-elicitation": setup(CALL_ACTION | RESPONDERS | LIVE) + leg(head(0, 3), raw(ELICIT), POLL, POLL, h, frag(35)) + POLL + POLL,
        "call-roots-refused": setup(CALL_ACTION | RESPONDERS | LIVE) + leg(head(0, 3), frag(23), frag(8), frag(33), POLL, POLL, h, frag(35)) + POLL,
        "call-ping-request": setup(CALL_ACTION | LIVE) + leg(head(0, 3), raw(PING_REQ), POLL, POLL, h, frag(35)) + POLL,
        "call-nested-fails": setup(CALL_ACTION | LIVE) + leg(head(0, 3), raw(PING_REQ), POLL, POLL, head(184)) + POLL,
        "call-resume": setup(CALL_ACTION | LIVE) + leg(head(0, 3), frag(26), END) + POLL + fwd(1000) + TIMEOUT + leg(healthy(sse_=True)) + POLL,
        "call-resume-long-retry": setup(CALL_ACTION | LIVE, budget=4) + leg(head(0, 3), raw(b"id: 5\nretry: 99999\ndata:\n\n"), END) + POLL + fwd(60000) + TIMEOUT + POLL + POLL,
        "call-resume-twice": setup(CALL_ACTION | LIVE) + leg(head(0, 3), frag(26), END) + POLL + fwd(1000) + TIMEOUT + leg(head(0, 3), frag(27), frag(33), END) + POLL + fwd(1000) + TIMEOUT + leg(healthy(sse_=True)) + POLL,
        "call-cancel-notice": setup(CALL_ACTION | LIVE | NOTICE) + leg(head(0, 3), frag(36), CANCEL) + POLL + POLL + h + POLL,
        "call-cancel-no-notice": setup(CALL_ACTION | LIVE) + leg(head(0, 3), frag(36), CANCEL) + POLL,
        "call-cancel-notice-timer": setup(CALL_ACTION | LIVE | NOTICE) + leg() + CANCEL + POLL + POLL + JUMP + POLL,
        "call-cancel-notice-late": setup(CALL_ACTION | LIVE | NOTICE) + leg() + CANCEL + POLL + fwd(1000) + h + POLL,
        "call-cancel-notice-fails": setup(CALL_ACTION | LIVE | NOTICE) + leg() + CANCEL + POLL + transport(IO, 1) + POLL,
        "call-cancel-notice-in-handshake": setup(CALL_ACTION | NOTICE) + leg() + CANCEL + POLL + POLL,
        "call-cancel-notice-resume": setup(CALL_ACTION | LIVE | NOTICE) + leg(head(0, 3), frag(26), END) + POLL + fwd(1000) + TIMEOUT + leg() + CANCEL + POLL + h + POLL,
        "call-late-head": setup(CALL_ACTION | LIVE) + leg(fwd(20000), head(0, 1)) + POLL,
        "call-late-chunk": setup(CALL_ACTION | LIVE) + leg(head(0, 1), frag(10), fwd(20000), frag(11)) + POLL,
        "call-late-end": setup(CALL_ACTION | LIVE) + leg(head(0, 1), frag(1), fwd(20000), END) + POLL,
        "call-stale-inputs": setup(CALL_ACTION) + leg(h) + leg(h) + POLL + at(3, head(0, 1)) + at(2, frag(1)) + at(3, END) + at(2, transport(CONNECT)) + h + POLL,
        "call-transport-protocol": setup(CALL_ACTION | LIVE) + leg(transport(PROTOCOL, 2)) + POLL,
        "call-transport-declined": setup(CALL_ACTION | LIVE) + leg(transport(DECLINED)) + POLL,
        "init-reply-beside-initialized": setup(CALL_ACTION) + leg(head(0, 3, session=1), raw(PING_REQ), frag(37)) + POLL + POLL + POLL + h + at(2, h) + leg(h) + POLL,
        "call-listen": setup(CALL_ACTION | LIVE | LISTEN) + leg(healthy(sse_=True, no_end=True)) + leg(h) + POLL,
        "call-listen-ping": setup(CALL_ACTION | LIVE | LISTEN) + leg(healthy(sse_=True, more=True, no_end=True)) + POLL + POLL + POLL + at(2, h) + h + POLL,
        "call-listen-ends": setup(CALL_ACTION | LIVE | LISTEN) + leg(healthy(sse_=True)) + leg(h) + POLL,
        "call-listen-declined": setup(CALL_ACTION | LIVE | LISTEN) + leg(transport(DECLINED)) + leg(h) + POLL,
        "call-listen-refused": setup(CALL_ACTION | LIVE | LISTEN) + leg(head(177)) + leg(h) + POLL,
        "call-listen-no-head": setup(CALL_ACTION | LIVE | LISTEN) + leg() + POLL + fwd(1000) + TIMEOUT + leg(h) + POLL,
        "call-listen-beside-404": setup(CALL_ACTION | LIVE | LISTEN) + leg(healthy(sse_=True, no_end=True)) + leg(head(176)) + leg(h) + leg(h) + leg(h) + POLL,
        "call-listen-chunks": setup(CALL_ACTION | LIVE | LISTEN | RESPONDERS) + leg(head(0, 3), raw(ELICIT)) + POLL + POLL + POLL + at(2, h) + at(3, frag(36)) + h + POLL,
        "call-listen-handshake": setup(CALL_ACTION | LISTEN) + leg(h) + leg(h) + leg(head(0, 3)) + leg(h) + POLL,
    }
    ops.update(modern_operation_seeds())
    for name, data in ops.items():
        write("operation", name, data)


def modern_operation_seeds():
    h, hs = healthy(), healthy(sse_=True)
    m, d, fl = era(MODERN_ERA), era(DETECT), era(FROM_LEGACY)
    enc = str.encode
    return {
        "modern-call-one-leg": setup(CALL_ACTION, pages=m) + leg(h) + POLL + POLL,
        "modern-call-sse": setup(CALL_ACTION | PROGRESS, pages=m) + leg(hs) + POLL + POLL,
        "modern-probe-discover": setup(PROBE, pages=m) + leg(h) + POLL,
        "modern-list-pages": setup(LIST, pages=era(MODERN_ERA, 3)) + leg(healthy(more=True)) + leg(h) + POLL,
        "modern-read": setup(READ, pages=m) + leg(h) + POLL,
        "modern-prompt": setup(PROMPT, pages=m) + leg(hs) + POLL,
        "modern-skill-load": setup(SKILL_LOAD, pages=m) + leg(h) + leg(hs) + POLL,
        "modern-skills-list": setup(SKILLS, pages=m) + leg(h) + POLL,
        "modern-close-nothing": setup(CLOSE, pages=m) + POLL + POLL,
        "modern-live-call": setup(CALL_ACTION | LIVE, pages=m) + leg(h) + POLL,
        "modern-version-retry": setup(CALL_ACTION, pages=m) + leg(*refusal(400, enc(M_VERSION_MODERN))) + leg(h) + POLL,
        "modern-version-legacy-only": setup(CALL_ACTION, pages=m) + leg(*refusal(400, enc(M_VERSION_LEGACY))) + POLL,
        "modern-400-plain-pinned": setup(CALL_ACTION, pages=m) + leg(head_status(400, 0)) + POLL,
        "modern-400-json-too-long": setup(CALL_ACTION, pages=m) + leg(bytes([2, 224]) + u16(300) + bytes([1, 3])) + POLL,
        "modern-400-json-pinned": setup(CALL_ACTION, pages=m) + leg(*refusal(400, enc(NO_SESSION))) + POLL,
        "modern-input-required": setup(CALL_ACTION | RESPONDERS, pages=m) + leg(head(0, 1), raws(enc(M_INPUT)), END) + POLL + leg(h) + POLL,
        "modern-input-required-sse": setup(PROMPT | RESPONDERS, pages=m) + leg(head(0, 3), raws(b"data: " + enc(M_INPUT) + b"\n\n")) + POLL + leg(hs) + POLL,
        "modern-input-unanswered": setup(CALL_ACTION, pages=m) + leg(head(0, 1), raws(enc(M_INPUT)), END) + POLL,
        "modern-header-mismatch": setup(CALL_ACTION, pages=m) + leg(*refusal(400, enc(M_MISMATCH))) + leg(h) + leg(h) + POLL,
        "modern-header-mismatch-twice": setup(CALL_ACTION, pages=m) + leg(*refusal(400, enc(M_MISMATCH))) + leg(h) + leg(*refusal(400, enc(M_MISMATCH).replace(b'"id":1', b'"id":3'))) + POLL,
        "modern-broken-stream-io": setup(CALL_ACTION, pages=m) + leg(head(0, 3), frag(26), transport(IO)) + leg(hs) + POLL,
        "modern-broken-stream-end": setup(CALL_ACTION, pages=m) + leg(head(0, 3), frag(26), END) + leg(hs) + POLL,
        "modern-broken-stream-thrice": setup(CALL_ACTION, pages=m) + leg(head(0, 3), frag(26), transport(IO)) + leg(head(0, 3), frag(28), END) + leg(head(0, 3), frag(26), transport(IO)) + POLL,
        "modern-server-request": setup(CALL_ACTION | RESPONDERS, pages=m) + leg(head(0, 3), raw(ELICIT), POLL, POLL, h, raw(b"data: " + enc(M_CALL) + b"\n\n")) + POLL,
        "modern-cancel-notice": setup(CALL_ACTION | NOTICE, pages=m) + leg(head(0, 3), frag(36), CANCEL) + POLL + POLL + h + POLL,
        "modern-session-id-ignored": setup(CALL_ACTION, pages=m) + leg(head(0, 1, session=1), raw(enc(M_CALL)), END) + POLL,
        "detect-modern-server": setup(CALL_ACTION, pages=d) + leg(h) + POLL,
        "detect-400-plain-handshake": setup(CALL_ACTION, pages=d) + leg(head_status(400, 0)) + leg(h) + leg(h) + leg(h) + POLL,
        "detect-400-json-handshake": setup(CALL_ACTION, pages=d) + leg(*refusal(400, enc(NO_SESSION))) + leg(h) + leg(h) + leg(h) + POLL,
        "detect-404-handshake": setup(LIST, pages=d) + leg(head_status(404, 5)) + leg(h) + leg(h) + leg(h) + POLL,
        "detect-405-probe": setup(PROBE, pages=d) + leg(head_status(405, 0)) + leg(h) + leg(h) + POLL,
        "detect-version-legacy": setup(CALL_ACTION, pages=d) + leg(*refusal(400, enc(M_VERSION_LEGACY))) + leg(h) + leg(h) + leg(h) + POLL,
        "detect-version-modern": setup(CALL_ACTION, pages=d) + leg(*refusal(400, enc(M_VERSION_MODERN))) + leg(h) + POLL,
        "detect-probe-method-not-found": setup(PROBE, pages=d) + leg(head(0, 1), raw(enc(M_NOT_FOUND)), END) + leg(h) + leg(h) + POLL,
        "detect-modern-error-stays": setup(CALL_ACTION, pages=d) + leg(*refusal(400, enc(M_MISSING_CAP))) + POLL,
        "detect-fallback-then-404": setup(CALL_ACTION, pages=d) + leg(head_status(400, 0)) + leg(h) + leg(h) + leg(head(176)) + leg(h) + leg(h) + leg(h) + POLL,
        "detect-fallback-budget": setup(CALL_ACTION, budget=1, pages=d) + leg(fwd(1500), head_status(400, 0)) + leg(fwd(400), h) + POLL + POLL,
        "detect-listen-after-fallback": setup(CALL_ACTION | LISTEN, pages=d) + leg(head_status(405, 0)) + leg(h) + leg(h) + leg(healthy(sse_=True, no_end=True)) + leg(h) + POLL,
        "detect-sse-refusal-reply": setup(CALL_ACTION | RESPONDERS, pages=d) + leg(head(0, 3), raw(ELICIT), POLL, POLL, h, raws(b"data: " + enc(M_VERSION_LEGACY) + b"\n\n")) + leg(h) + leg(h) + leg(h) + POLL,
        "detect-skill-fallback": setup(SKILL_LOAD, pages=d) + leg(head_status(400, 0)) + leg(h) + leg(h) + leg(h) + leg(h) + POLL,
        "legacy-server-live-call": setup(CALL_ACTION, pages=fl) + leg(h) + POLL,
        "legacy-server-becomes-modern": setup(CALL_ACTION, pages=fl) + leg(*refusal(400, enc(M_VERSION_MODERN))) + leg(h) + POLL,
        "legacy-server-modern-mismatch": setup(CALL_ACTION, pages=fl) + leg(*refusal(400, enc(M_MISMATCH))) + leg(h) + POLL,
        "legacy-server-listen": setup(CALL_ACTION | LISTEN, pages=fl) + leg(healthy(sse_=True, no_end=True)) + leg(h) + POLL,
        "legacy-server-resume": setup(CALL_ACTION, pages=fl) + leg(head(0, 3), frag(26), END) + POLL + fwd(1000) + TIMEOUT + leg(hs) + POLL,
        "legacy-read": setup(READ) + leg(h) + leg(h) + leg(h) + POLL,
        "legacy-skill-load": setup(SKILL_LOAD | LIVE) + leg(h) + leg(hs) + POLL,
        "legacy-prompt": setup(PROMPT | LIVE) + leg(hs) + POLL,
        "legacy-skills-list": setup(SKILLS | LIVE) + leg(healthy(more=True)) + leg(h) + POLL,
    }


def main():
    for target in ("sse", "answer", "operation"):
        shutil.rmtree(ROOT / target, ignore_errors=True)
    sse_seeds()
    answer_seeds()
    operation_seeds()
    files = list(ROOT.glob("*/*"))
    size = sum(f.stat().st_size for f in files)
    print(f"wrote {len(files)} seed files, {size} bytes, under {ROOT}")


if __name__ == "__main__":
    main()
