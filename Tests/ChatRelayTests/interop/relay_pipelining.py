"""HTTP/1.1 keep-alive and pipelining against a running chat-relay (docs/protocol.md,
"Connections"), from raw sockets only.

usage: relay_pipelining.py PORT TOKEN_ALICE RELAY_PID

Users 1 (Alice) and 2 (Bob) exist. The relay answers one request at a time per
connection: requests pipelined behind a pending one are refused by answering the pending
one with `Connection: close` and closing; they are never read, so resending them (same
requestId) on a new connection gives them their one message. Every wait is bounded; a
hang or a spin fails a check. Prints a JSON summary; any failed check raises (exit 1).
"""
import json
import socket
import sys
import time

TIMEOUT = 5  # any single wait; a bound against hangs

port, token, pid = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])


def connect():
    s = socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT)
    s.settimeout(TIMEOUT)
    return s


def post(request_id, content="pipelined", length=None):
    body = json.dumps({"requestId": request_id, "toUserId": 2, "content": content}).encode()
    n = len(body) if length is None else length
    return (b"POST /v2/messages HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer " + token.encode()
            + b"\r\nContent-Type: application/json\r\nContent-Length: " + str(n).encode() + b"\r\n\r\n", body)


def post_bytes(request_id, content="pipelined"):
    head, body = post(request_id, content)
    return head + body


def get(path):
    return b"GET " + path.encode() + b" HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer " + token.encode() + b"\r\n\r\n"


class Reader:
    """Reads HTTP responses (Content-Length bodies) off one socket."""

    def __init__(self, s):
        self.s, self.buffer, self.eof = s, b"", False

    def fill(self):
        data = self.s.recv(65536)  # raises socket.timeout after TIMEOUT
        if not data:
            self.eof = True
        self.buffer += data

    def response(self):
        """The next response as (status, headers, body)."""
        while b"\r\n\r\n" not in self.buffer:
            if self.eof:
                raise AssertionError("connection closed before a response: %r" % self.buffer)
            self.fill()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode().split("\r\n")
        status = int(lines[0].split()[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(self.buffer) < length:
            if self.eof:
                raise AssertionError("connection closed inside a body")
            self.fill()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return status, headers, body

    def closed(self):
        """True when the relay closes the connection with nothing more sent."""
        while not self.eof:
            self.fill()
        return self.buffer == b""


def cpu_seconds():
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0  # utime + stime, in clock ticks


def health_ok():
    s = connect()
    s.sendall(get("/v2/health"))
    status, _, _ = Reader(s).response()
    s.close()
    return status == 200


def refused_behind(first_status, payload, note):
    """Sends `payload` (several requests) in one write: the first is answered with
    `Connection: close`, then the relay closes; nothing else is answered."""
    s = connect()
    s.sendall(payload)
    assert health_ok(), note + ": another client is served meanwhile"
    r = Reader(s)
    status, headers, _ = r.response()
    assert status == first_status, "%s: first answer %d" % (note, status)
    assert headers.get("connection", "").lower() == "close", "%s: no Connection: close: %r" % (note, headers)
    assert r.closed(), note + ": more than one answer, or no close: %r" % r.buffer
    s.close()


def message_id(request_id, content="pipelined"):
    """POSTs on its own connection; the message id of the answer."""
    s = connect()
    s.sendall(post_bytes(request_id, content))
    status, _, body = Reader(s).response()
    s.close()
    assert status in (200, 201), "resend of %d: %d %r" % (request_id, status, body)
    return json.loads(body)["message"]["messageId"]


facts = {}
base = int(time.time()) % 100000 * 10

# Two POSTs in one write: the first answered (and committed), the second refused, not read.
refused_behind(201, post_bytes(base + 1) + post_bytes(base + 2), "two POSTs")
first = message_id(base + 1)
second = message_id(base + 2)
assert first != second
facts["twoPosts"] = "first answered with Connection: close, second refused"

# Three requests in one write.
refused_behind(201, post_bytes(base + 3) + post_bytes(base + 4) + post_bytes(base + 5), "three POSTs")
facts["threePosts"] = "first answered, two refused"

# A GET behind a POST, a POST behind a GET, a GET behind a GET.
refused_behind(201, post_bytes(base + 6) + get("/v2/health"), "GET behind POST")
refused_behind(200, get("/v2/health") + post_bytes(base + 7), "POST behind GET")
refused_behind(200, get("/v2/messages?limit=1") + get("/v2/health"), "GET behind GET")
# A POST with an explicitly empty body (refused by the relay) with another behind it.
refused_behind(400, b"POST /v2/messages HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer " + token.encode()
               + b"\r\nContent-Length: 0\r\n\r\n" + post_bytes(base + 8), "POST behind an empty POST")
facts["mixed"] = "GET behind POST, POST behind GET, GET behind GET, POST behind empty POST: first answered"

# A body in several pieces, then keep-alive: the next request on the same connection
# (sent after the answer) is answered too, and the connection stays open.
s = connect()
r = Reader(s)
head, body = post(base + 9, "in pieces")
s.sendall(head)
time.sleep(0.2)
s.sendall(body[:5])
time.sleep(0.2)
s.sendall(body[5:])
status, headers, _ = r.response()
assert status == 201 and headers.get("connection", "").lower() != "close", (status, headers)
s.sendall(post_bytes(base + 10, "kept alive"))
status, headers, _ = r.response()
assert status == 201 and headers.get("connection", "").lower() != "close", (status, headers)
s.sendall(get("/v2/health"))
status, _, _ = r.response()
assert status == 200
s.close()
facts["pieces"] = "answered; three requests on one kept-alive connection"

# Pipelined requests, then the client goes away at once (shut down, and closed).
for how in ("shutdown", "close"):
    s = connect()
    s.sendall(post_bytes(base + 11) + post_bytes(base + 12))
    if how == "shutdown":
        s.shutdown(socket.SHUT_WR)
        Reader(s).closed()
    s.close()
assert health_ok(), "served after clients that went away"
facts["clientGone"] = "relay still serving"

# No spin: idle, the relay uses (almost) no CPU.
time.sleep(0.3)
before = cpu_seconds()
time.sleep(1.0)
used = cpu_seconds() - before
assert used < 0.3, "relay used %.2f s of CPU in 1 s idle" % used
facts["idleCpuSeconds"] = used

print(json.dumps(facts))
