#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target into fuzz/corpus/<target>/.

The seeds are real answers (JSON results for each method, event streams with ids, priming
events, keep-alive comments, notifications before the answer, CRLF and CR line ends, errors
with null and string ids, a TypeScript-SDK-style stream...) and real driver sequences, laid
out in the byte formats documented in fuzz/harness/src/ (keep the two in step).

Run it from anywhere: `python3 fuzz/seeds.py`. It rewrites every target's seed directory
whole (TARGETS below), so the committed corpus is always exactly what this script writes.
"""

import json
import pathlib
import shutil
import struct

ROOT = pathlib.Path(__file__).resolve().parent / "corpus"
# Every target whose seeds this script writes (each directory is rewritten whole).
TARGETS = ("sse", "answer", "operation", "stdio", "auth", "connect", "servers", "credentials", "tasks", "bridge", "schema",
           "http_sse")
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


# ---------------------------------------------------------------------------------------------
# connect: [read ends][repeat][filler] then the proxy's answer (see `connect` in
# fuzz/harness/src/connect.rs)
# ---------------------------------------------------------------------------------------------

def connect_input(answer, ends=(), repeat=0, filler=b""):
    return bytes([len(ends)]) + b"".join(u16(e) for e in ends) + bytes([repeat, len(filler)]) + filler + answer


TLS_HELLO = bytes([0x16, 0x03, 0x03, 0x00, 0x2a, 0x02, 0x00, 0x00, 0x26, 0x03, 0x03])


def connect_seeds():
    established = b"HTTP/1.1 200 Connection established\r\n\r\n"
    squid_407 = (b"HTTP/1.1 407 Proxy Authentication Required\r\nServer: squid/6.10\r\n"
                 b"Mime-Version: 1.0\r\nContent-Type: text/html;charset=utf-8\r\nContent-Length: 3520\r\n"
                 b"X-Squid-Error: ERR_CACHE_ACCESS_DENIED 0\r\nVary: Accept-Language\r\n"
                 b"Proxy-Authenticate: Basic realm=\"Squid proxy\"\r\nConnection: keep-alive\r\n\r\n<html>")
    squid_403 = (b"HTTP/1.1 403 Forbidden\r\nServer: squid/6.10\r\nX-Squid-Error: ERR_ACCESS_DENIED 0\r\n"
                 b"Content-Length: 0\r\n\r\n")
    for name, data in {
        "squid-established": connect_input(established + TLS_HELLO, ends=(10, 38)),
        "established-one-read": connect_input(established),
        "http10-ok-headers": connect_input(b"HTTP/1.0 200 OK\r\nProxy-Agent: corp-gw/2.1\r\nVia: 1.1 gw\r\n\r\n" + TLS_HELLO, ends=(1, 2, 3, 60)),
        "squid-407": connect_input(squid_407, ends=(100, 200)),
        "squid-403": connect_input(squid_403),
        "status-no-reason": connect_input(b"HTTP/1.1 204\r\n\r\n"),
        "502-bad-gateway": connect_input(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 11\r\n\r\nBad Gateway"),
        "closed-mid-head": connect_input(b"HTTP/1.1 200 Connection est"),
        "ssh-banner": connect_input(b"SSH-2.0-OpenSSH_9.6\r\n"),
        "tls-to-a-tls-port": connect_input(TLS_HELLO),
        "lf-only": connect_input(b"HTTP/1.1 200 OK\n\n"),
        "bad-status": connect_input(b"HTTP/1.1 2x0 OK\r\n\r\n"),
        "long-headers-near-limit": connect_input(b"HTTP/1.1 200 OK\r\n" + b"\r\n", repeat=31, filler=b"X-Pad: " + b"a" * 23 + b"\r\n", ends=(4000, 8000)),
        "long-headers-past-limit": connect_input(b"HTTP/1.1 200 OK\r\n" + b"\r\n", repeat=33, filler=b"X-Pad: " + b"a" * 23 + b"\r\n", ends=(9000,)),
        "empty": connect_input(b""),
    }.items():
        write("connect", name, data)


# ---------------------------------------------------------------------------------------------
# servers: the whole --config file (see `servers` in fuzz/harness/src/files.rs)
# ---------------------------------------------------------------------------------------------

def servers_seeds():
    claude = {"mcpServers": {
        "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]},
        "github": {"command": "docker", "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
                   "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "<token>"}},
        "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer abc"}, "timeout": 30},
    }}
    vscode = {"servers": {"everything": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "cwd": "/tmp"},
                          "http": {"type": "http", "url": "http://127.0.0.1:3000/mcp"}}}
    for name, text in {
        "claude-desktop": json.dumps(claude, indent=2),
        "vscode": json.dumps(vscode, indent=4),
        "cursor-remote-only": '{\n  "mcpServers": {\n    "docs": { "url": "https://docs.example.org/mcp", "timeout": 2.5 }\n  }\n}\n',
        "trailing-comma": '{\n  "mcpServers": {\n    "a": {"command": "x"},\n  }\n}\n',
        "comment": '{\n  // my servers\n  "mcpServers": {}\n}\n',
        "timeout-string": '{"mcpServers": {"a": {"url": "https://a.example/mcp", "timeout": "30"}}}',
        "args-not-strings": '{"mcpServers": {"a": {"command": "node", "args": ["server.js", 8080]}}}',
        "neither": '{"mcpServers": {"a": {"type": "sse"}}}',
        "no-servers": '{"inputs": []}',
        "truncated": json.dumps(claude, indent=2)[:200],
    }.items():
        write("servers", name, text.encode())
    write("servers", "utf8-bom", b"\xef\xbb\xbf" + json.dumps(vscode).encode())
    write("servers", "latin1-name", '{"mcpServers": {"caf\xe9": {"command": "x"}}}'.encode("latin-1"))


# ---------------------------------------------------------------------------------------------
# credentials: [write] then the whole credentials file (see `credentials` in
# fuzz/harness/src/files.rs)
# ---------------------------------------------------------------------------------------------

def credentials_seeds():
    kept = {"issuers": {
        "https://auth.example.com": {
            "client": {"client_id": "c-1", "client_secret": "s-1", "auth_method": "client_secret_basic",
                       "redirect_uri": "http://127.0.0.1:8976/callback", "source": "registered"},
            "tokens": {"https://mcp.example.com/mcp": {"access_token": "at-1", "refresh_token": "rt-1",
                                                      "expires_at": 1893456000, "scope": "files:read offline_access",
                                                      "client_id": "c-1"}},
        },
        "http://localhost:4000": {
            "client": {"client_id": "c-2", "auth_method": "none", "redirect_uri": "http://127.0.0.1:8976/callback",
                       "source": "registered"},
            "tokens": {"http://localhost:3000": {"access_token": "at-2", "expires_at": 1000, "client_id": "c-2"},
                       "http://localhost:3000/other": {"access_token": "at-3", "client_id": "c-2"}},
        },
    }}
    text = json.dumps(kept, indent=2)
    for write_op in range(6):
        write("credentials", f"two-issuers-write-{write_op}", bytes([write_op]) + text.encode())
    for name, (op, data) in {
        "empty-object": (0, b"{}"),
        "empty-file": (1, b""),
        "truncated": (2, text[:300].encode()),
        "secret-in-wrong-type": (3, b'{"issuers": {"x": "secret-value"}}'),
        "pre-registered-only": (5, json.dumps({"issuers": {"https://corp.example": {"client": {
            "client_id": "corp", "auth_method": "private_key_jwt", "redirect_uri": "", "source": "pre-registered"}}}}).encode()),
        "far-expiry": (1, json.dumps({"issuers": {"https://a.example": {"tokens": {"https://a.example/mcp": {
            "access_token": "at", "expires_at": 253402300799, "client_id": "c"}}}}}).encode()),
    }.items():
        write("credentials", name, bytes([op]) + data)


# ---------------------------------------------------------------------------------------------
# stdio: [setup][budget][resolution], then per operation its action byte and the driver's
# choices (see `stdio` in fuzz/harness/src/stdio.rs)
# ---------------------------------------------------------------------------------------------

S_DETECT, S_LEGACY, S_MODERN = 0, 1, 2
S_SMALL_CAP, S_NOTICE, S_RESPONDERS, S_THREE_OPS = 0x04, 0x08, 0x10, 0x20
S_PROBE, S_LIST, S_READ, S_PROMPT, S_CLOSE, S_CALL = 0, 1, 2, 3, 5, 6
SPAWN = bytes([0, 0])          # the process starts at once
SPAWN_FAILS = bytes([7])
TAKEN = bytes([0])             # a line written at once
BLOCKED = bytes([14])          # the write blocks until the leg's end
GONE = bytes([15])             # the pipe is closed: the process is gone


def s_answer(flags=0, at=0):
    return bytes([2, flags, at])


def s_stdout(data, at=0):
    return bytes([1, at, len(data)]) + data


def s_exit(status, stderr, at=0):
    return bytes([4, status, len(stderr)]) + stderr + bytes([at])


S_WAIT_OUT = bytes([0])
S_CANCEL = bytes([5, 0])
S_LEGACY_PROBE = 0x02
S_MORE = 0x04
S_NOTE_FIRST = 0x08
S_SPLIT = 0x10


def stdio_input(setup, ops, budget=10, resolution=0):
    return bytes([setup, budget - 1, resolution]) + b"".join(ops)


def stdio_seeds():
    legacy_cold = bytes([S_CALL]) + SPAWN + TAKEN + s_answer(S_LEGACY_PROBE) + TAKEN + s_answer() + TAKEN + TAKEN + s_answer()
    warm_call = bytes([S_CALL]) + TAKEN + s_answer()
    for name, data in {
        "detect-legacy-call-then-call": stdio_input(S_DETECT, [legacy_cold, warm_call]),
        "detect-modern-call": stdio_input(S_DETECT, [bytes([S_CALL]) + SPAWN + TAKEN + s_answer() + TAKEN + s_answer(S_SPLIT), warm_call]),
        "modern-pinned-read-prompt": stdio_input(S_MODERN | S_THREE_OPS, [bytes([S_READ]) + SPAWN + TAKEN + s_answer(), bytes([S_PROMPT]) + TAKEN + s_answer(), bytes([S_CLOSE]) + bytes([0])]),
        "legacy-pinned-pages": stdio_input(S_LEGACY, [bytes([S_LIST]) + SPAWN + TAKEN + s_answer(0x20) + TAKEN + TAKEN + s_answer(S_MORE) + TAKEN + s_answer(S_NOTE_FIRST), bytes([S_PROBE])]),
        "exit-mid-answer-then-restart": stdio_input(S_DETECT, [
            bytes([S_CALL]) + SPAWN + TAKEN + s_answer(S_LEGACY_PROBE) + TAKEN + s_answer() + TAKEN + TAKEN
            + s_stdout(b'{"jsonrpc":"2.0","id":') + s_exit(1, b"Traceback (most recent call last):\n  KeyError: 'x'\n"),
            legacy_cold]),
        "noise-stray-and-server-requests": stdio_input(S_LEGACY | S_RESPONDERS, [
            bytes([S_CALL]) + SPAWN + TAKEN + bytes([8, 0, 0]) + s_answer() + TAKEN + TAKEN
            + bytes([8, 1, 0]) + bytes([3, 0, 0]) + bytes([6, 2, 0]) + TAKEN + bytes([6, 4, 0]) + TAKEN + bytes([6, 3, 0]) + TAKEN
            + bytes([6, 0, 0]) + bytes([8, 3, 0]) + bytes([8, 2, 0]) + s_answer(), warm_call]),
        "late-answer-next-call": stdio_input(S_LEGACY, [
            bytes([S_CALL]) + SPAWN + TAKEN + s_answer() + TAKEN + TAKEN + S_WAIT_OUT,
            bytes([S_CALL]) + TAKEN + bytes([3, 0, 0]) + s_answer()], budget=2),
        "silent-server-times-out": stdio_input(S_DETECT, [bytes([S_CALL]) + SPAWN + TAKEN], budget=3),
        "ms-budget-slow-spawn": stdio_input(S_DETECT, [bytes([S_PROBE]) + bytes([0, 200]) + TAKEN + s_answer(S_LEGACY_PROBE, 100) + TAKEN + s_answer(0, 250)], budget=245, resolution=2),
        "cancel-with-notice": stdio_input(S_LEGACY | S_NOTICE, [bytes([S_CALL]) + SPAWN + TAKEN + s_answer() + TAKEN + TAKEN + S_CANCEL + TAKEN, warm_call]),
        "close-after-call": stdio_input(S_LEGACY, [legacy_cold[:1] + SPAWN + TAKEN + s_answer() + TAKEN + TAKEN + s_answer(), bytes([S_CLOSE, 0, 0])]),
        "overlong-line-small-cap": stdio_input(S_MODERN | S_SMALL_CAP, [bytes([S_CALL]) + SPAWN + TAKEN + bytes([7, 0x84, 0]), warm_call]),
        "overlong-unended-then-answer": stdio_input(S_MODERN | S_SMALL_CAP, [bytes([S_CALL]) + SPAWN + TAKEN + bytes([7, 0x0c, 0]) + s_stdout(b"\n") + s_answer()]),
        "write-blocks": stdio_input(S_LEGACY, [bytes([S_CALL]) + SPAWN + BLOCKED, bytes([S_CALL]) + TAKEN + s_answer() + TAKEN + TAKEN + s_answer()], budget=4),
        "pipe-closed": stdio_input(S_LEGACY, [bytes([S_CALL]) + SPAWN + GONE, legacy_cold[:1] + SPAWN + TAKEN + s_answer() + TAKEN + TAKEN + s_answer()]),
        "spawn-fails": stdio_input(S_DETECT, [bytes([S_CALL]) + SPAWN_FAILS, bytes([S_CALL]) + SPAWN + TAKEN + s_answer()]),
        "error-answer": stdio_input(S_MODERN, [bytes([S_CALL]) + SPAWN + TAKEN + s_answer(0x01), warm_call]),
    }.items():
        write("stdio", name, data)


# ---------------------------------------------------------------------------------------------
# tasks: [setup][budget], then per tools/call or tasks/* leg a delay byte, a pick and, for a
# result, its status, flags and numbers bytes (see `tasks` in fuzz/harness/src/tasks.rs)
# ---------------------------------------------------------------------------------------------

T_MODERN, T_LEGACY = 0, 1
T_CALL, T_RESUME, T_CANCEL = 0, 2, 4
T_RESPONDER, T_SECOND = 0x08, 0x10
T_OPTIONAL, T_NO_TASKS = 0x20, 0x80
WORKING, INPUT, COMPLETED, FAILED, CANCELLED, BOGUS = range(6)
KEYS_A, KEYS_B, KEYS_AB, KEYS_AC = 0, 0x08, 0x10, 0x18
T_MESSAGE, T_ID_BASE64, T_ID_DASH = 0x20, 0x40, 0x80
T_OTHER_ID, T_NO_ID, T_NUMBER_ID = 1, 2, 3
T_TYPE_TASK, T_TYPE_COMPLETE, T_TYPE_NONE, T_TYPE_INPUT, T_TYPE_BOGUS = 3 << 2, 4 << 2, 5 << 2, 6 << 2, 7 << 2
T_MALFORMED, T_ABSENT, T_OTHER_SHAPE = 0x20, 0x40, 0x80
# Interval (low three bits) and TTL (next three) picks: absent, 0, -5, 1e300, 12.5, "100", 50, u64::MAX.
IV_50, IV_ZERO, IV_HUGE, IV_STRING, IV_FRACTION, IV_NEGATIVE = 6, 1, 3, 5, 4, 2
TTL_MAX = 7 << 3


def t_result(status, flags=0, numbers=IV_50, wait=10, cancel_after=False):
    return bytes([wait, 9 if cancel_after else 0, status, flags, numbers])


def t_error(code_pick=0, wait=10):
    return bytes([wait, 10, code_pick])


def t_transport(kind=0, wait=10):
    return bytes([wait, 11, kind])


def t_stall(wait=0):
    return bytes([wait, 12])


def t_junk(data, wait=10):
    return bytes([wait, 13, len(data)]) + data


def t_status(pick, wait=10):
    return bytes([wait, 14, pick])


def t_cancel(wait=10):
    return bytes([wait, 15])


def tasks_input(setup, budget_ms, *legs):
    return bytes([setup, (budget_ms - 200) // 20]) + b"".join(legs)


def tasks_seeds():
    created = t_result(WORKING | T_MESSAGE)
    working = t_result(WORKING)
    for name, data in {
        "modern-completes-after-polls": tasks_input(T_MODERN, 2000, created, working, working, t_result(COMPLETED | T_MESSAGE)),
        "modern-failed": tasks_input(T_MODERN, 2000, created, working, t_result(FAILED)),
        "modern-cancelled": tasks_input(T_MODERN, 2000, created, t_result(CANCELLED | T_MESSAGE)),
        "modern-input-then-completed": tasks_input(T_MODERN | T_RESPONDER, 3000, created, t_result(INPUT | KEYS_A),
                                                   t_result(WORKING), t_result(INPUT | KEYS_AB), t_result(WORKING),
                                                   t_result(INPUT | KEYS_AB), t_result(COMPLETED)),
        "modern-input-declined": tasks_input(T_MODERN, 2000, created, t_result(INPUT | KEYS_B), t_result(WORKING), t_result(COMPLETED)),
        "modern-input-sampling-unanswered": tasks_input(T_MODERN | T_RESPONDER, 2000, created, t_result(INPUT | KEYS_AC)),
        "modern-never-ends-small-budget": tasks_input(T_MODERN, 300, created, *[working] * 24),
        "modern-never-ends-second-resolution": tasks_input(T_MODERN | T_SECOND, 1000, t_result(WORKING, numbers=IV_ZERO | TTL_MAX),
                                                           *[t_result(WORKING, numbers=IV_HUGE)] * 12),
        "modern-poll-stalls": tasks_input(T_MODERN, 1000, created, working, t_stall()),
        "modern-cancel-while-waiting": tasks_input(T_MODERN, 2000, created, t_result(WORKING, cancel_after=True)),
        "modern-cancel-during-poll": tasks_input(T_MODERN, 2000, created, t_cancel()),
        "modern-base64-id": tasks_input(T_MODERN, 2000, t_result(WORKING | T_ID_BASE64), working, t_result(COMPLETED)),
        "modern-dash-id-odd-numbers": tasks_input(T_MODERN, 2000, t_result(WORKING | T_ID_DASH, numbers=IV_FRACTION | TTL_MAX),
                                                  t_result(WORKING, numbers=IV_NEGATIVE), t_result(COMPLETED)),
        "modern-poll-other-task": tasks_input(T_MODERN, 2000, created, t_result(COMPLETED, T_OTHER_ID)),
        "modern-poll-string-interval": tasks_input(T_MODERN, 2000, created, t_result(WORKING, numbers=IV_STRING)),
        "modern-poll-malformed": tasks_input(T_MODERN, 2000, created, working, t_result(COMPLETED, T_MALFORMED)),
        "modern-poll-junk": tasks_input(T_MODERN, 2000, created, t_junk(b'{"jsonrpc":"2.0","id":2,"result":{"taskId":')),
        "modern-poll-error": tasks_input(T_MODERN, 2000, created, working, t_error(1)),
        "modern-poll-transport": tasks_input(T_MODERN, 2000, created, t_transport(1)),
        "modern-poll-own-input-round": tasks_input(T_MODERN | T_RESPONDER, 2000, created, t_result(INPUT | KEYS_A, T_TYPE_INPUT),
                                                   t_result(INPUT | KEYS_A), t_result(WORKING), t_result(COMPLETED)),
        "modern-call-plain-result": tasks_input(T_MODERN, 2000, t_result(COMPLETED, T_TYPE_COMPLETE)),
        "modern-header-mismatch-relist": tasks_input(T_MODERN, 2000, t_error(4), created, t_result(COMPLETED)),
        "legacy-task-listed-polled-fetched": tasks_input(T_LEGACY, 2000, created, working, t_result(COMPLETED), t_result(COMPLETED)),
        "legacy-input-then-result": tasks_input(T_LEGACY | T_RESPONDER, 2000, created, t_result(INPUT | KEYS_A), t_result(COMPLETED)),
        "legacy-failed-result-error": tasks_input(T_LEGACY, 2000, created, t_result(FAILED), t_error(0)),
        "legacy-never-ends": tasks_input(T_LEGACY, 600, created, *[working] * 20),
        "legacy-optional-tool-no-task": tasks_input(T_LEGACY | T_OPTIONAL, 2000, t_result(COMPLETED, T_OTHER_SHAPE)),
        "legacy-no-tasks-declared": tasks_input(T_LEGACY | T_NO_TASKS, 2000, created),
        "legacy-session-lost-on-poll": tasks_input(T_LEGACY, 2000, created, t_status(0), working, t_result(COMPLETED), t_result(COMPLETED)),
        "legacy-cancel-while-waiting": tasks_input(T_LEGACY, 2000, created, t_result(WORKING, cancel_after=True)),
        "resume-modern-completes": tasks_input(T_RESUME, 2000, working, t_result(COMPLETED)),
        "resume-modern-never-ends": tasks_input(T_RESUME | T_SECOND, 1000, *[working] * 12),
        "resume-legacy-fetched": tasks_input(T_RESUME | T_LEGACY, 2000, t_result(COMPLETED), t_result(COMPLETED)),
        "resume-legacy-unknown-task": tasks_input(T_RESUME | T_LEGACY, 2000, t_error(1)),
        "cancel-modern-acknowledged": tasks_input(T_CANCEL, 1000, t_result(CANCELLED)),
        "cancel-modern-answered-with-task": tasks_input(T_CANCEL, 1000, t_result(CANCELLED, T_TYPE_TASK)),
        "cancel-legacy-acknowledged": tasks_input(T_CANCEL | T_LEGACY, 1000, t_result(CANCELLED)),
        "cancel-legacy-stalls": tasks_input(T_CANCEL | T_LEGACY | T_SECOND, 1000, t_stall()),
    }.items():
        write("tasks", name, data)


# ---------------------------------------------------------------------------------------------
# auth: [client][store][server][challenge] then one input per step of the flow (see `auth` in
# fuzz/harness/src/auth.rs)
# ---------------------------------------------------------------------------------------------

A_DCR, A_PRE, A_PRE_OTHER, A_CIMD, A_CC, A_CC_JWT, A_JWT_BEARER, A_ENTERPRISE = range(8)
A_DPOP_ADVERTISED, A_DPOP_ALWAYS, A_SCOPE, A_ANY_ISSUER = 0x08, 0x10, 0x20, 0x40
A_STORED_CLIENT, A_STORED_TOKENS, A_OTHER_CLIENT_ID, A_OTHER_REDIRECT, A_BASIC = 0x01, 0x02, 0x04, 0x08, 0x10
OK = bytes([0])                      # a healthy answer


def a_mutated(*pairs):
    """A healthy answer with up to three members replaced: (field, dictionary value) pairs."""
    return bytes([len(pairs) << 2]) + b"".join(bytes([f, v]) for f, v in pairs)


def a_error(status_index, error=0, description=0):
    return bytes([1, status_index, error, description])


def a_raw(status, body):
    return bytes([2, (status - 100) // 2]) + u16(len(body)) + body


NONCE_REFUSAL = bytes([3])
NOT_FOUND = a_error(3)
REDIRECT_OK = bytes([0])
STOP = bytes([0])
AGAIN = bytes([1])


def challenge(status403=False, metadata=1, scope=0, dpop=False):
    return bytes([int(status403) | metadata << 1 | scope << 4 | (0x40 if dpop else 0)])


def auth_input(client, store, server, first, steps):
    return bytes([client, store, server]) + first + b"".join(steps)


def auth_seeds():
    c = challenge()
    dcr = [OK, OK, OK, REDIRECT_OK, OK, STOP]
    for name, data in {
        "dcr-code-flow": auth_input(A_DCR, 0, 0, c, dcr),
        "dcr-path-server": auth_input(A_DCR, 0, 1, challenge(metadata=2, scope=2), dcr),
        "dcr-loopback-server": auth_input(A_DCR, 0, 2, challenge(metadata=0), [NOT_FOUND, OK, OK, OK, REDIRECT_OK, OK, STOP]),
        "stored-refresh": auth_input(A_DCR, A_STORED_CLIENT | A_STORED_TOKENS, 0, c, [OK, OK, OK, STOP]),
        "refresh-refused-then-code": auth_input(A_DCR, A_STORED_CLIENT | A_STORED_TOKENS | A_BASIC, 0, c,
                                                [OK, OK, a_error(0, 0), REDIRECT_OK, OK, STOP]),
        "refresh-invalid-client-registers": auth_input(A_DCR, A_STORED_CLIENT | A_STORED_TOKENS, 0, c,
                                                       [OK, OK, a_error(1, 1), OK, REDIRECT_OK, OK, STOP]),
        "stored-client-other-redirect": auth_input(A_DCR, A_STORED_CLIENT | A_OTHER_REDIRECT, 0, c, dcr),
        "stored-tokens-other-client": auth_input(A_DCR, A_STORED_CLIENT | A_STORED_TOKENS | A_OTHER_CLIENT_ID, 0, c,
                                                 [OK, OK, REDIRECT_OK, OK, STOP]),
        "preregistered": auth_input(A_PRE, 0, 0, c, [OK, OK, REDIRECT_OK, OK, STOP]),
        "preregistered-other-issuer": auth_input(A_PRE_OTHER, 0, 0, c, [a_mutated((1, 23)), a_mutated((0, 3)), REDIRECT_OK, OK, STOP]),
        "preregistered-any-issuer": auth_input(A_PRE | A_ANY_ISSUER, 0, 0, c, [OK, OK, REDIRECT_OK, OK, STOP]),
        "metadata-document": auth_input(A_CIMD, 0, 0, c, [OK, OK, REDIRECT_OK, OK, STOP]),
        "client-credentials": auth_input(A_CC, 0, 0, c, [OK, OK, OK, STOP]),
        "client-credentials-jwt-dpop": auth_input(A_CC_JWT | A_DPOP_ALWAYS, 0, 0, c, [OK, OK, NONCE_REFUSAL, OK, STOP]),
        "jwt-bearer-refused": auth_input(A_JWT_BEARER, 0, 0, c, [OK, OK, a_error(0, 0, 2), STOP]),
        "enterprise-managed": auth_input(A_ENTERPRISE, 0, 0, c, [OK, OK, OK, OK, STOP]),
        "dpop-advertised-nonce": auth_input(A_DCR | A_DPOP_ADVERTISED, 0, 0, c, [OK, OK, OK, REDIRECT_OK, NONCE_REFUSAL, OK, STOP]),
        "dpop-always-twice-refused": auth_input(A_DCR | A_DPOP_ALWAYS, 0, 0, c, [OK, OK, OK, REDIRECT_OK, NONCE_REFUSAL, NONCE_REFUSAL, STOP]),
        "legacy-2025-03-26": auth_input(A_DCR, 0, 0, challenge(metadata=0), [NOT_FOUND, NOT_FOUND, NOT_FOUND, NOT_FOUND, OK, REDIRECT_OK, OK, STOP]),
        "resource-another-host": auth_input(A_DCR, 0, 0, c, [a_mutated((0, 6)), STOP]),
        "resource-parent": auth_input(A_DCR, 0, 1, c, [a_mutated((0, 9)), OK, OK, REDIRECT_OK, OK, STOP]),
        "issuer-trailing-slash": auth_input(A_DCR, 0, 0, c, [OK, a_mutated((0, 2)), STOP]),
        "token-endpoint-elsewhere": auth_input(A_DCR, A_STORED_CLIENT | A_STORED_TOKENS, 0, c, [OK, a_mutated((2, 42)), OK, STOP]),
        "insecure-endpoints": auth_input(A_DCR, 0, 0, c, [OK, a_mutated((1, 7), (2, 7)), STOP]),
        "no-pkce": auth_input(A_DCR, 0, 0, c, [OK, a_mutated((4, 20)), STOP]),
        "token-type-mac": auth_input(A_DCR, 0, 0, c, [OK, OK, OK, REDIRECT_OK, a_mutated((1, 26)), STOP]),
        "token-huge-expiry": auth_input(A_DCR, 0, 0, c, [OK, OK, OK, REDIRECT_OK, a_mutated((2, 31), (4, 29)), STOP]),
        "registration-raw": auth_input(A_DCR, 0, 0, c, [OK, OK, a_raw(201, b'{"client_id":"c","client_secret":null}'), REDIRECT_OK, OK, STOP]),
        "metadata-not-json": auth_input(A_DCR, 0, 0, c, [OK, a_raw(200, b"<html>Sign in</html>"), STOP]),
        "metadata-redirect": auth_input(A_DCR, 0, 0, c, [OK, a_error(5), STOP]),
        "state-forged": auth_input(A_DCR, 0, 0, c, [OK, OK, OK, bytes([1]), STOP]),
        "iss-missing": auth_input(A_DCR, 0, 0, c, [OK, OK, OK, bytes([2]), STOP]),
        "iss-slash": auth_input(A_DCR, 0, 0, c, [OK, OK, OK, bytes([3]), STOP]),
        "access-denied": auth_input(A_DCR, 0, 0, c, [OK, OK, OK, bytes([4]), STOP]),
        "code-twice": auth_input(A_DCR, 0, 0, c, [OK, OK, OK, bytes([5]), STOP]),
        "other-port": auth_input(A_DCR, 0, 0, c, [OK, OK, OK, bytes([6]), STOP]),
        "raw-redirect": auth_input(A_DCR, 0, 0, c, [OK, OK, OK, bytes([7, 25]) + b"code=c&state={state}&iss=x", STOP]),
        "no-authorizer": auth_input(A_DCR, 0, 0, c, [OK, OK, OK, bytes([8]), STOP]),
        "step-up-chain": auth_input(A_DCR, 0, 0, c, dcr[:-1] + [AGAIN, challenge(True, 1, 2), OK, OK, REDIRECT_OK, OK,
                                                              AGAIN, challenge(True, 1, 3), OK, OK, REDIRECT_OK, OK,
                                                              AGAIN, challenge(True, 1, 1), STOP]),
        "raw-challenge": auth_input(A_DCR, 0, 0, bytes([0x80, 40]) + b'DPoP error="use_dpop_nonce", Bearer x=y', dcr),
        "challenge-other-origin": auth_input(A_DCR, 0, 0, challenge(metadata=3), [a_mutated((0, 4)), OK, OK, REDIRECT_OK, OK, STOP]),
    }.items():
        write("auth", name, data)


def bridge_seeds():
    """What hosts write to mcp-call bridge: each seed a host's session, one message a line."""
    def req(id_, method, params=None):
        message = {"jsonrpc": "2.0", "id": id_, "method": method}
        if params is not None:
            message["params"] = params
        return json.dumps(message, separators=(",", ":"))

    modern = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
              "io.modelcontextprotocol/clientCapabilities": {}}
    initialize = req(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {
        "elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {"listChanged": True}},
        "clientInfo": {"name": "claude-ai", "version": "0.1.0"}})
    sessions = {
        "legacy-host": [initialize, '{"jsonrpc":"2.0","method":"notifications/initialized"}',
                        req(1, "tools/list"), req(2, "tools/call", {"name": "echo", "arguments": {"text": "hi"},
                                                                  "_meta": {"progressToken": 2}}),
                        '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user"}}',
                        '{"jsonrpc":"2.0","id":"mcp-call-bridge-1","result":{"action":"accept","content":{"name":"Ada"}}}',
                        '{"jsonrpc":"2.0","id":"mcp-call-bridge-2","error":{"code":-32601,"message":"no"}}',
                        req(3, "ping"), req("s-4", "resources/read", {"uri": "file:///a"}),
                        req(5, "prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}),
                        req(6, "completion/complete", {"ref": {"type": "ref/prompt", "name": "greet"},
                                                       "argument": {"name": "name", "value": "A"},
                                                       "context": {"arguments": {"x": "y"}}})],
        "modern-host": [req(0, "server/discover", {"_meta": modern}),
                        req(1, "tools/list", {"_meta": modern}), req(2, "ping", {"_meta": modern}),
                        req(3, "tools/call", {"name": "echo", "arguments": {}, "_meta": modern})],
        "broken-lines": ["{not json", "[1,2]", '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}',
                         '{"jsonrpc":"2.0","id":7}', '{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{}}',
                         '{"jsonrpc":"2.0","id":9,"method":"resources/subscribe","params":{"uri":"x"}}', "", "  "],
        "upstream-capabilities": [req(1, "initialize", {"tools": {"listChanged": True},
                                                        "resources": {"subscribe": True, "listChanged": "yes"},
                                                        "prompts": [], "completions": {}, "logging": {}})],
    }
    for name, lines in sessions.items():
        write("bridge", name, ("\n".join(lines) + "\n").encode())


def schema_seeds():
    """`schema`: the schema's JSON, a NUL, the instance's JSON (no NUL: the schema checks itself)."""
    def pair(schema, instance):
        return json.dumps(schema).encode() + b"\0" + json.dumps(instance).encode()

    weather = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
               "properties": {"temperature": {"type": "number"}, "conditions": {"type": "string"},
                              "humidity": {"type": "number"}},
               "required": ["temperature", "conditions", "humidity"], "additionalProperties": False}
    forecast = {"$defs": {"Day": {"properties": {"date": {"type": "string"}, "high": {"type": "number"},
                                                 "low": {"anyOf": [{"type": "number"}, {"type": "null"}]}},
                                  "required": ["date", "high"], "type": "object"}},
                "properties": {"city": {"type": "string"}, "days": {"items": {"$ref": "#/$defs/Day"}, "type": "array"}},
                "required": ["city", "days"], "type": "object"}
    tree = {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}},
            "unevaluatedProperties": False}
    deep = {}
    for _ in range(70):
        deep = {"not": deep}
    write("schema", "weather-ok", pair(weather, {"temperature": 22.5, "conditions": "Sunny", "humidity": 65}))
    write("schema", "weather-type", pair(weather, {"temperature": "hot", "conditions": "Sunny", "humidity": 65}))
    write("schema", "weather-missing", pair(weather, {"temperature": 1, "conditions": "x"}))
    write("schema", "weather-extra", pair(weather, {"temperature": 1, "conditions": "x", "humidity": 2, "wind/~": 3}))
    write("schema", "forecast-ok", pair(forecast, {"city": "Oslo", "days": [{"date": "d", "high": 3, "low": None}]}))
    write("schema", "forecast-deep-mismatch", pair(forecast, {"city": "Oslo", "days": [{"date": "d", "high": "x"}]}))
    write("schema", "tree-recursive", pair(tree, {"children": [{"children": [{"children": 3, "x": 1}]}]}))
    write("schema", "ref-network", pair({"properties": {"a": {"$ref": "https://example.com/s.json"}}}, {}))
    write("schema", "ref-relative", pair({"$id": "https://example.com/root", "$ref": "other.json"}, {}))
    write("schema", "ref-local-missing", pair({"$ref": "#/$defs/nowhere"}, 1))
    write("schema", "dialect-unknown", pair({"$schema": "https://example.com/mine"}, 1))
    write("schema", "dialect-draft-04", pair({"$schema": "http://json-schema.org/draft-04/schema#",
                                              "maximum": 5, "exclusiveMaximum": True}, 5))
    write("schema", "dialect-2019-09", pair({"$schema": "https://json-schema.org/draft/2019-09/schema",
                                             "$recursiveAnchor": True, "items": {"$recursiveRef": "#"}}, [[[1]]]))
    write("schema", "deep-schema", pair(deep, 1))
    write("schema", "enum-huge", pair({"enum": list(range(1001))}, 7))
    write("schema", "enum-ok", pair({"enum": ["a", 1, None, [1], {"k": "v"}]}, {"k": "w"}))
    write("schema", "pattern-catastrophic", pair({"type": "string", "pattern": "^(a+)+$"}, "a" * 30 + "b"))
    write("schema", "pattern-backreference", pair({"pattern": "(a)\\1"}, "aa"))
    write("schema", "pattern-properties", pair({"patternProperties": {"^x-": {"type": "integer"}, "\\d{3}": False}},
                                               {"x-a": 1, "x-b": "no", "123": 0}))
    write("schema", "combinators", pair({"oneOf": [{"type": "integer"}, {"minimum": 2}], "not": {"const": 9},
                                         "if": {"minimum": 5}, "then": {"multipleOf": 0.5}, "else": {"maximum": -1}}, 3))
    write("schema", "arrays", pair({"prefixItems": [{"type": "string"}], "items": False, "uniqueItems": True,
                                    "contains": {"type": "string"}, "minContains": 1, "maxItems": 3}, ["a", "b"]))
    write("schema", "strings", pair({"minLength": 2, "maxLength": 4, "format": "email",
                                     "contentEncoding": "base64", "contentMediaType": "application/json"}, "x\u0007y"))
    write("schema", "self-check", json.dumps(weather).encode())
    write("schema", "boolean-false", b"false\0{}")
    write("schema", "not-json", b"{\0{")


# ---------------------------------------------------------------------------------------------
# http_sse: [setup][budget][resolution], then per operation its action byte and the bytes its
# legs and waits consume (see `http_sse` in fuzz/harness/src/http_sse.rs)
# ---------------------------------------------------------------------------------------------

H_PINNED, H_AUTO, H_SMALL_CAP, H_ROOTS, H_NOTICE, H_TWO_OPS = 0, 0x01, 0x02, 0x04, 0x08, 0x10
H_CALL, H_LIST, H_PROBE = 0, 1, 2
H_STREAM_OK = bytes([0])        # the GET: 200 text/event-stream
H_STREAM_404 = bytes([13])
H_STREAM_HTML = bytes([11])     # 200 application/json
H_STREAM_REFUSED = bytes([15])  # no connection
H_ACCEPTED = bytes([0])         # a POST to the endpoint: 202
H_POST_500 = bytes([14])
H_POST_FAILS = bytes([15])
H_REFUSED = bytes([0])          # Streamable HTTP's POST to the URL: 405
H_REFUSED_404 = bytes([4])
H_REFUSED_400 = bytes([5])
# Indexes into ENDPOINTS.
EP_PATH, EP_RELATIVE, EP_ABSOLUTE, EP_SECOND, EP_EMPTY, EP_SPACES = 0, 1, 2, 3, 4, 5
EP_OTHER_HOST, EP_HTTPS, EP_OTHER_PORT, EP_SCHEME_RELATIVE, EP_BACKSLASHES, EP_USERINFO = 12, 13, 14, 16, 17, 18
H_ERROR, H_FIRST, H_MORE, H_NOTE_FIRST, H_TYPED, H_CRLF = 0x01, 0x02, 0x04, 0x08, 0x10, 0x80
WHOLE, BYTE_BY_BYTE, SEVENS = 0, 1, (6 << 2) | 1


def h_endpoint(index, at=0, split=WHOLE):
    return bytes([2, index, at, split])


def h_answer(flags=0, at=0, split=WHOLE):
    return bytes([3, flags, at, split])


def h_stray(flags, at=0, split=WHOLE):
    return bytes([4, flags, at, split])


def h_server(pick, at=0, split=WHOLE):
    return bytes([5, pick, at, split])


def h_huge(pick, at=0, split=WHOLE):
    return bytes([6, pick, at, split])


def h_not_utf8(pick, at=0, split=WHOLE):
    return bytes([7, pick, at, split])


def h_end(at=0):
    return bytes([8, 0, at])


def h_break(kind=0, at=0):
    return bytes([9, kind, at])


def h_noise(pick, at=0, split=WHOLE):
    return bytes([10, pick, at, split])


def h_cancel(at=0):
    return bytes([11, 0, at])


def h_raw_endpoint(data, at=0, split=WHOLE):
    return bytes([13, len(data)]) + data + bytes([at, split])


def h_split_answer(flags, cut, at=0, split=WHOLE):
    return bytes([14, flags, cut, at, split])


def h_pass(at):
    return bytes([15, 0, at])


def h_raw(data, at=0, split=WHOLE):
    return bytes([1, len(data)]) + data + bytes([at, split])


def h_input(setup, ops, budget=5, resolution=0):
    """budget: seconds, 1 to 5."""
    return bytes([setup, budget - 1, resolution]) + b"".join(ops)


def http_sse_seeds():
    # The stream, its endpoint, the handshake's two POSTs, then the work's POST and answer.
    handshake = H_STREAM_OK + h_endpoint(EP_PATH, 10) + H_ACCEPTED + h_answer(0, 10) + H_ACCEPTED
    call = bytes([H_CALL]) + handshake + H_ACCEPTED + h_answer(0, 10)
    auto_found = H_REFUSED + H_REFUSED
    for name, data in {
        "pinned-call": h_input(H_PINNED, [call]),
        "pinned-list-two-pages": h_input(H_PINNED, [bytes([H_LIST]) + handshake + H_ACCEPTED + h_answer(H_MORE, 5)
                                                    + H_ACCEPTED + h_answer(H_NOTE_FIRST, 5)]),
        "pinned-probe-crlf-typed": h_input(H_PINNED, [bytes([H_PROBE]) + H_STREAM_OK + h_endpoint(EP_ABSOLUTE | 0x80)
                                                      + H_ACCEPTED + h_answer(H_CRLF | H_TYPED) + H_ACCEPTED]),
        "auto-finds-sse-then-second-call": h_input(H_AUTO | H_TWO_OPS, [bytes([H_CALL]) + auto_found + call[1:], call]),
        "auto-404-and-400-refusals": h_input(H_AUTO, [bytes([H_CALL]) + H_REFUSED_404 + H_REFUSED_400 + call[1:]]),
        "auto-get-404-no-transport": h_input(H_AUTO | H_TWO_OPS, [bytes([H_CALL]) + auto_found + H_STREAM_404,
                                                                  bytes([H_PROBE]) + H_REFUSED + H_STREAM_HTML]),
        "endpoint-other-origin": h_input(H_PINNED, [bytes([H_CALL]) + H_STREAM_OK + h_endpoint(EP_OTHER_HOST, 30)]),
        "endpoint-userinfo-trick": h_input(H_PINNED | H_TWO_OPS, [bytes([H_CALL]) + H_STREAM_OK + h_endpoint(EP_USERINFO),
                                                                   bytes([H_CALL]) + H_STREAM_OK + h_endpoint(EP_BACKSLASHES)]),
        "endpoint-changes": h_input(H_PINNED, [bytes([H_CALL]) + H_STREAM_OK + h_endpoint(EP_PATH) + H_ACCEPTED
                                               + h_endpoint(EP_PATH) + h_endpoint(EP_SECOND) + h_answer()]),
        "endpoint-spaces-then-same-again": h_input(H_PINNED, [bytes([H_LIST]) + H_STREAM_OK + h_endpoint(EP_SPACES)
                                                           + H_ACCEPTED + h_endpoint(EP_PATH) + h_answer() + H_ACCEPTED
                                                           + H_ACCEPTED + h_answer()]),
        "endpoint-garbage-bytes": h_input(H_PINNED, [bytes([H_CALL]) + H_STREAM_OK + h_raw_endpoint(b"ht\xfftp://[::1")]),
        "endpoint-echoes-secret": h_input(H_PINNED, [bytes([H_CALL]) + H_STREAM_OK
                                                     + h_raw_endpoint(b"http://evil.example/?t=fuzz-secret-xyz")]),
        "stream-ends-before-endpoint": h_input(H_PINNED, [bytes([H_CALL]) + H_STREAM_OK + h_noise(0) + h_end(100)]),
        "stream-breaks-after-endpoint": h_input(H_PINNED, [bytes([H_CALL]) + handshake + H_ACCEPTED + h_break(0, 50)]),
        "stream-never-ends": h_input(H_PINNED, [bytes([H_CALL]) + handshake + H_ACCEPTED], budget=1),
        "stream-silent-never-names-endpoint": h_input(H_PINNED, [bytes([H_PROBE]) + H_STREAM_OK], budget=2, resolution=2),
        "unknown-ids-then-answer": h_input(H_PINNED, [bytes([H_CALL]) + handshake + H_ACCEPTED + h_stray(0) + h_stray(1)
                                                      + h_stray(2) + h_stray(3) + h_stray(4) + h_answer()]),
        "null-id-error": h_input(H_PINNED, [bytes([H_CALL]) + handshake + H_ACCEPTED + h_stray(5)]),
        "huge-event-small-cap": h_input(H_PINNED | H_SMALL_CAP, [bytes([H_CALL]) + handshake + H_ACCEPTED + h_huge(0x87, 0, SEVENS)]),
        "huge-endpoint-unended": h_input(H_PINNED | H_SMALL_CAP, [bytes([H_CALL]) + H_STREAM_OK + h_huge(0x45)]),
        "not-utf8": h_input(H_PINNED, [bytes([H_CALL]) + handshake + H_ACCEPTED + h_not_utf8(2) + h_not_utf8(0)]),
        "server-requests-answered": h_input(H_PINNED | H_ROOTS, [bytes([H_CALL]) + handshake + H_ACCEPTED
                                                                 + h_server(3) + H_ACCEPTED + h_server(2) + H_ACCEPTED
                                                                 + h_server(0) + h_server(5) + H_ACCEPTED + h_answer()]),
        "cancel-with-notice": h_input(H_PINNED | H_NOTICE, [bytes([H_CALL]) + handshake + H_ACCEPTED + h_cancel(20) + H_ACCEPTED]),
        "answer-byte-by-byte": h_input(H_PINNED, [bytes([H_CALL]) + H_STREAM_OK + h_endpoint(EP_PATH, 0, BYTE_BY_BYTE)
                                                  + H_ACCEPTED + h_answer(0, 0, SEVENS) + H_ACCEPTED + H_ACCEPTED
                                                  + h_answer(H_NOTE_FIRST, 0, BYTE_BY_BYTE)]),
        "answer-over-two-data-lines": h_input(H_PINNED, [bytes([H_CALL]) + handshake + H_ACCEPTED + h_split_answer(0, 8)]),
        "noise-then-answer": h_input(H_PINNED, [bytes([H_LIST]) + H_STREAM_OK + h_noise(0) + h_noise(1) + h_endpoint(EP_EMPTY)
                                                + H_ACCEPTED + h_noise(3) + h_noise(7) + h_answer() + H_ACCEPTED + H_ACCEPTED
                                                + h_pass(100) + h_answer(H_ERROR)]),
        "post-fails-and-500": h_input(H_PINNED | H_TWO_OPS, [bytes([H_CALL]) + H_STREAM_OK + h_endpoint(EP_PATH) + H_POST_500,
                                                              bytes([H_CALL]) + H_STREAM_OK + h_endpoint(EP_PATH) + H_POST_FAILS]),
        "stream-get-refused": h_input(H_PINNED, [bytes([H_CALL]) + H_STREAM_REFUSED]),
        "endpoint-relative-probe": h_input(H_PINNED, [bytes([H_PROBE]) + H_STREAM_OK + h_endpoint(EP_RELATIVE) + H_ACCEPTED
                                                      + h_answer(0x20) + H_ACCEPTED]),
        "raw-stream-ms-budget": h_input(H_PINNED, [bytes([H_CALL]) + H_STREAM_OK
                                                   + h_raw(b"event: endpoint\r\ndata: /m?x=1\r\n\r\n", 3, SEVENS) + H_ACCEPTED
                                                   + h_raw(b'data: {"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"r","version":"1"}}}\n\n', 40)
                                                   + H_ACCEPTED + H_ACCEPTED + h_answer(0, 200)], budget=5, resolution=3),
    }.items():
        write("http_sse", name, data)


def main():
    for target in TARGETS:
        shutil.rmtree(ROOT / target, ignore_errors=True)
    sse_seeds()
    answer_seeds()
    operation_seeds()
    stdio_seeds()
    tasks_seeds()
    auth_seeds()
    connect_seeds()
    servers_seeds()
    credentials_seeds()
    bridge_seeds()
    schema_seeds()
    http_sse_seeds()
    files = list(ROOT.glob("*/*"))
    size = sum(f.stat().st_size for f in files)
    print(f"wrote {len(files)} seed files, {size} bytes, under {ROOT}")


if __name__ == "__main__":
    main()
