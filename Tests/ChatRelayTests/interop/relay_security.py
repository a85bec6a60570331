"""Security checks of a running chat-relay (issue 14), by outside clients only: http.client
and raw sockets (Debian's /usr/bin/python3).

usage: relay_security.py matrix PORT TOKEN_ALICE TOKEN_BOB TOKEN_CAROL
       relay_security.py limits PORT TOKEN_ALICE
       relay_security.py inject PORT TOKEN_ALICE TOKEN_BOB
       relay_security.py slowloris PORT TOKEN_ALICE TOKEN_BOB
       relay_security.py wire PORT TOKEN_ALICE
       relay_security.py logins PORT TOKEN_BOB [FAILED]  -> prints the latency figures as JSON
Users 1 (Alice), 2 (Bob) and 3 (Carol), none of them with messages yet. Every wait is
bounded; no check is about time (timings are printed, never asserted). Any failed check
raises (exit 1); success prints "ok" (logins: one JSON line).
"""
import http.client
import json
import socket as raw
import sys
import threading
import time

TIMEOUT = 10   # any single wait; a bound against hangs, never an assertion


def call(port, method, path, token=None, body=None, headers=None, raw_body=None, connection=None):
    own = connection is None
    connection = connection or http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    sent = {"Content-Type": "application/json"} if body is not None or raw_body is not None else {}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    sent.update(headers or {})
    data = raw_body if raw_body is not None else (json.dumps(body).encode() if body is not None else None)
    connection.request(method, path, body=data, headers=sent)
    response = connection.getresponse()
    answer = response.read()
    try:
        parsed = json.loads(answer or b"null")
    except ValueError:
        parsed = answer
    result = response.status, {k.lower(): v for k, v in response.getheaders()}, parsed
    if own:
        connection.close()
    return result


def expect_error(result, status, code, what, field=None):
    got, headers, body = result
    assert got == status, f"{what}: expected {status} {code}, got {got}: {str(body)[:300]}"
    assert isinstance(body, dict) and isinstance(body.get("error"), dict), f"{what}: not an error body: {str(body)[:300]}"
    assert body["error"]["code"] == code, f"{what}: {body}"
    message = body["error"].get("message")
    assert isinstance(message, str) and "\n" not in message and len(message) < 500, f"{what}: message {message!r}"
    if field is not None:
        assert field in message, f"{what}: the error does not name {field}: {message}"


def healthy(port):
    status, _, body = call(port, "GET", "/v2/health")
    assert status == 200 and body == {"ok": True, "version": 2}, (status, body)


def raw_exchange(port, data, read=True):
    """Sends raw bytes; returns the answer's status line (b"" when the relay closed)."""
    with raw.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as s:
        s.sendall(data)
        if not read:
            return b""
        answer = b""
        try:
            while b"\r\n" not in answer:
                chunk = s.recv(4096)
                if not chunk:
                    break
                answer += chunk
        except ConnectionResetError:
            pass
        return answer.split(b"\r\n")[0]


# MARK: - 1. The auth matrix: every endpoint x no token, a bad token, another user's, the right one

def matrix(port, alice, bob, carol):
    # Alice writes Bob, so Bob's inbox holds one message and Alice and Bob know each other.
    status, _, sent = call(port, "POST", "/v2/messages", alice, {"requestId": 1, "toUserId": 2, "content": "for Bob only"})
    assert status == 201 and sent["message"]["fromUserId"] == 1, sent
    message = sent["message"]["messageId"]
    bad_tokens = {
        "no token": {},
        "an empty bearer": {"Authorization": "Bearer "},
        "a wrong token": {"Authorization": "Bearer " + "A" * 43},
        "a token one byte off": {"Authorization": "Bearer " + bob[:-1] + ("A" if bob[-1] != "A" else "B")},
        "a token with a byte added": {"Authorization": "Bearer " + bob + "x"},
        "a prefix of the token": {"Authorization": "Bearer " + bob[:20]},
        "the token without Bearer": {"Authorization": bob},
        "lower-case bearer": {"Authorization": "bearer " + bob},
        "Basic auth": {"Authorization": "Basic " + bob},
        "a 4 KiB token": {"Authorization": "Bearer " + "x" * 4096},
        "SQL in the token": {"Authorization": "Bearer ' OR '1'='1"},
    }
    # (method, path, body, answer for Bob's own token, answer for Carol's: another user)
    endpoints = [
        ("GET", "/v2/messages", None, 200, 200),
        ("GET", "/v2/users/2", None, 200, 403),
        ("GET", "/v2/users/1", None, 200, 403),
        ("GET", "/v2/users?ids=1,2", None, 200, 200),
        # Last: Carol's message makes her and Bob known to each other.
        ("POST", "/v2/messages", {"requestId": 7, "toUserId": 1, "content": "x"}, 201, 201),
        ("GET", "/v2/nothing-here", None, 404, 404),
        ("DELETE", "/v2/messages", None, 405, 405),
    ]
    for method, path, body, _, _ in endpoints:
        for what, headers in bad_tokens.items():
            expect_error(call(port, method, path, body=body, headers=headers), 401, "unauthorized", f"{method} {path} with {what}")
        # The token in the query string is not a way in either.
        expect_error(call(port, method, path.split("?")[0] + f"?access_token={bob}", body=body), 401, "unauthorized",
                     f"{method} {path} with the token in the query")
    upgrade = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
               "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    for what, headers in bad_tokens.items():
        expect_error(call(port, "GET", "/v2/socket/updates", headers={**upgrade, **headers}), 401, "unauthorized",
                     f"socket upgrade with {what}")
    # Nothing a refused request did is visible.
    status, _, inbox = call(port, "GET", "/v2/messages", alice)
    assert status == 200 and [m for m in inbox["messages"] if m["toUserId"] == 1] == [], inbox

    # The right token and another user's: each sees exactly its own.
    for method, path, body, own, other in endpoints:
        got, _, answer = call(port, method, path, bob, body=body)
        assert got == own, f"{method} {path} with Bob's token: {got} {answer}"
        got, _, answer = call(port, method, path, carol, body=dict(body, requestId=8, toUserId=2) if body else None)
        assert got == other, f"{method} {path} with Carol's token: {got} {answer}"
    status, _, inbox = call(port, "GET", "/v2/messages", bob)
    assert [m["messageId"] for m in inbox["messages"]][:1] == [message], inbox
    status, _, inbox = call(port, "GET", "/v2/messages", carol)
    # Carol's log holds only what she sent herself (her request 8 to Bob), nobody else's messages.
    assert status == 200 and all(m["fromUserId"] == 3 for m in inbox["messages"]), f"Carol sees someone else's messages: {inbox}"
    status, _, listed = call(port, "GET", "/v2/users?ids=1,2,3", carol)
    assert sorted(u["id"] for u in listed["users"]) == [2, 3], f"Carol lists profiles she may not see: {listed}"
    # Health needs no token and tells nothing about users.
    healthy(port)
    print("ok")


# MARK: - 2. Size limits

def limits(port, alice):
    mib = 1 << 20
    content = lambda n: {"requestId": n, "toUserId": 2, "content": "x" * n}
    status, _, answer = call(port, "POST", "/v2/messages", alice, content(65536))
    assert status == 201, f"64 KiB of content: {status} {str(answer)[:200]}"
    expect_error(call(port, "POST", "/v2/messages", alice, content(65537)), 413, "too_large", "64 KiB + 1 of content", "content")
    # A body over 1 MiB: 413 whether it is read (a little over) or refused unread (far over).
    expect_error(call(port, "POST", "/v2/messages", alice, raw_body=b"{" + b" " * mib + b"}"), 413, "too_large", "1 MiB + 2 body")
    expect_error(call(port, "POST", "/v2/messages", alice, content(10 * mib)), 413, "too_large", "10 MB content")
    # A declared 100 MB body is refused without waiting for it.
    line = raw_exchange(port, f"POST /v2/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {alice}\r\n"
                              f"Content-Type: application/json\r\nContent-Length: {100 * mib}\r\n\r\n{{".encode())
    assert line.startswith(b"HTTP/1.1 413"), line
    # A 10,000-digit Content-Length, a negative one: refused, never a crash.
    for length in ["9" * 10000, "-1", "1e9"]:
        line = raw_exchange(port, f"POST /v2/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {alice}\r\n"
                                  f"Content-Length: {length}\r\n\r\n{{}}".encode())
        assert line == b"" or line.split(b" ")[1][:1] in (b"4",), (length[:20], line)
        healthy(port)
    # Headers over 8 KiB: refused or cut, never a crash.
    line = raw_exchange(port, b"GET /v2/health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 20000 + b"\r\n\r\n")
    assert line == b"" or not line.startswith(b"HTTP/1.1 5"), line
    # A 100 KiB path.
    line = raw_exchange(port, b"GET /v2/users/" + b"1" * 100000 + b" HTTP/1.1\r\nHost: x\r\n\r\n")
    assert line == b"" or not line.startswith(b"HTTP/1.1 5"), line
    healthy(port)
    print("ok")


# MARK: - 3. Hostile fields in requests

HOSTILE_TEXT = ["'; DROP TABLE Messages; --", "Robert'); DELETE FROM Users WHERE ('1'='1", "\" OR 1=1 --",
                "nul\u0000inside", "\u0000", "emoji 👋 and ‮RTL", "%s%n%x", "\\x00\\'", "a" * 65536]


def inject(port, alice, bob):
    sent = []
    request = 100
    for text in HOSTILE_TEXT:
        request += 1
        status, _, answer = call(port, "POST", "/v2/messages", alice, {"requestId": request, "toUserId": 2, "content": text})
        if status == 201:
            sent.append((answer["message"]["messageId"], text))
        else:
            expect_error((status, _, answer), 400, "bad_request", f"content {text[:30]!r}", "content")
    # Kept exactly as given: what Bob receives is byte for byte what Alice sent.
    status, _, inbox = call(port, "GET", "/v2/messages?limit=100", bob)
    got = {m["messageId"]: m["content"] for m in inbox["messages"]}
    for message, text in sent:
        assert got.get(message) == text, f"stored {got.get(message)!r:.60} for {text!r:.60}"
    assert len(sent) == len(HOSTILE_TEXT), f"some hostile texts were refused: {len(sent)} of {len(HOSTILE_TEXT)}"

    # Invalid UTF-8 and lone surrogates: refused, naming the field or the body.
    for body, what in [(b'{"requestId":1,"toUserId":2,"content":"\xff\xfe"}', "invalid UTF-8 in content"),
                       (b'{"requestId":1,"toUserId":2,"content":"\xc3"}', "a cut UTF-8 sequence"),
                       (b'{"requestId":1,"toUserId":2,"content":"\\ud800"}', "a lone surrogate"),
                       (b'{"requestId":1,"toUserId":2,"content":"a\x00b"}', "a raw NUL byte in a string"),
                       (b"\x00\x00\x00", "NUL bytes for a body"),
                       (b'{"requestId":1,"toUserId":2,"content":"x"', "a cut body"),
                       (b'[' * 100000, "100,000 nested arrays")]:
        status, headers, answer = call(port, "POST", "/v2/messages", alice, raw_body=body)
        expect_error((status, headers, answer), 400, "bad_request", what)

    # Numbers: negative, zero, 10,000 digits, fractions, strings, SQL.
    for field in ["requestId", "toUserId"]:
        for value in [-1, 0, -9223372036854775808, "9" * 10000, 1.5, 1e300, "1", "1; DROP TABLE Messages", None, True, [1]]:
            body = {"requestId": 900, "toUserId": 2, "content": "x", field: value}
            raw_body = json.dumps(body).encode()
            if isinstance(value, str) and value.isdigit() and len(value) > 18:
                raw_body = raw_body.replace(f'"{value}"'.encode(), value.encode())   # a bare 10,000-digit number
            # A number JSON cannot hold in 64 bits fails the whole body's decoding: its
            # one-line error names the body, not the field.
            got = call(port, "POST", "/v2/messages", alice, raw_body=raw_body)
            expect_error(got, 400, "bad_request", f"{field} = {str(value)[:20]}")
            message = got[2]["error"]["message"]
            assert field in message or "body" in message, f"{field} = {str(value)[:20]}: {message}"
    # An unknown recipient.
    got = call(port, "POST", "/v2/messages", alice, {"requestId": 901, "toUserId": 999, "content": "x"})
    assert got[0] in (400, 404), got
    # createdAt with SQL or nonsense: refused naming it, or ignored; never stored as SQL.
    got = call(port, "POST", "/v2/messages", alice, {"requestId": 902, "toUserId": 2, "content": "x", "createdAt": "'); DROP TABLE Messages; --"})
    assert got[0] in (201, 400), got
    if got[0] == 400:
        expect_error(got, 400, "bad_request", "createdAt with SQL", "createdAt")

    # Query strings and paths.
    for path in ["/v2/messages?lastSyncedMessage=-1", "/v2/messages?lastSyncedMessage=" + "9" * 10000,
                 "/v2/messages?lastSyncedMessage=1%27%3B%20DROP%20TABLE%20Messages", "/v2/messages?limit=-5",
                 "/v2/messages?limit=" + "9" * 10000, "/v2/messages?limit=%00", "/v2/users?ids=1,2)%3BDROP%20TABLE%20Users",
                 "/v2/users?ids=-1", "/v2/users?ids=" + "9" * 10000, "/v2/users/1%27%20OR%201=1", "/v2/users/-1",
                 "/v2/users/" + "9" * 10000, "/v2/users/%00", "/v2/users/%ff"]:
        try:
            status, _, answer = call(port, "GET", path, bob)
        except http.client.RemoteDisconnected:
            # lws closes a request line over its 8 KiB of header space, or with an escaped NUL, unanswered.
            assert len(path) > 8000 or "%00" in path, f"{path[:80]}: closed without an answer"
            healthy(port)
            continue
        assert status in (400, 403, 404), f"{path[:80]}: {status} {str(answer)[:200]}"
        assert isinstance(answer, dict) and "error" in answer, f"{path[:80]}: {answer}"
    # Everything is still there and works.
    status, _, inbox = call(port, "GET", "/v2/messages?limit=100", bob)
    assert status == 200 and len(inbox["messages"]) >= len(sent), inbox
    status, _, listed = call(port, "GET", "/v2/users?ids=1,2", bob)
    assert status == 200 and sorted(u["id"] for u in listed["users"]) == [1, 2], listed
    print("ok")


# MARK: - 4. Slowloris: a head or a body sent a byte a second

def slowloris(port, alice, bob):
    """Three slow clients (a head a byte a second, a body a byte a second, a connection
    that sends nothing); meanwhile another client's requests are all answered, and the
    relay closes each slow one (the head within about 10 s, the body within about 20 s)."""
    results = {}

    def dribble(name, prefix, slow_part):
        started = time.monotonic()
        try:
            with raw.create_connection(("127.0.0.1", port), timeout=1.5) as s:
                s.sendall(prefix)
                for byte in slow_part:
                    try:
                        s.sendall(bytes([byte]))
                    except (BrokenPipeError, ConnectionResetError):
                        break
                    try:
                        if s.recv(4096) == b"":
                            break
                    except raw.timeout:
                        pass
                    except ConnectionResetError:
                        break
                    if time.monotonic() - started > 45:
                        results[name] = ("still open", time.monotonic() - started)
                        return
                else:
                    # Everything sent: wait for the answer or the close.
                    while time.monotonic() - started < 45:
                        try:
                            if s.recv(4096) == b"":
                                break
                        except raw.timeout:
                            continue
                        except ConnectionResetError:
                            break
                    else:
                        results[name] = ("still open", time.monotonic() - started)
                        return
                results[name] = ("closed", time.monotonic() - started)
        except Exception as error:   # reported below
            results[name] = ("error", repr(error))

    body = json.dumps({"requestId": 50, "toUserId": 2, "content": "x" * 100}).encode()
    slow = {
        "head": (b"", b"GET /v2/health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 200 + b"\r\n\r\n"),
        "body": (f"POST /v2/messages HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {alice}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\n\r\n".encode(), body),
        "silent": (b"", b""),
    }
    threads = [threading.Thread(target=dribble, args=(name, *parts), daemon=True) for name, parts in slow.items()]
    for thread in threads:
        thread.start()
    time.sleep(1)
    answered, latencies = 0, []
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline:
        started = time.monotonic()
        status, _, _ = call(port, "GET", "/v2/messages", bob)
        latencies.append(time.monotonic() - started)
        assert status == 200, status
        answered += 1
        time.sleep(0.05)
    for thread in threads:
        thread.join(50)
    for name in slow:
        state = results.get(name)
        assert state is not None and state[0] == "closed", f"slow {name}: {state}"
    # The slow body was never stored.
    status, _, inbox = call(port, "GET", "/v2/messages", bob)
    assert all(m["content"] != "x" * 100 for m in inbox["messages"]), "a body cut off by the timeout was stored"
    latencies.sort()
    print(json.dumps({"answered": answered, "p50": latencies[len(latencies) // 2] * 1000,
                      "closedAfter": {name: round(results[name][1], 1) for name in slow}}))


# MARK: - 5. Malformed requests: each answer as docs/protocol.md ("Malformed requests") says

def whole_answer(port, data, shut=False):
    """Sends raw bytes; returns (status line, headers, body bytes) of the one answer, or
    None when the relay closed without one. Reads until the close or Content-Length."""
    with raw.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as s:
        s.sendall(data)
        if shut:
            s.shutdown(raw.SHUT_WR)
        answer = b""
        try:
            while True:
                head, sep, rest = answer.partition(b"\r\n\r\n")
                if sep:
                    lines = head.split(b"\r\n")
                    if lines[0].split(b" ")[1:2] == [b"100"]:   # an interim answer: the real one follows
                        answer = rest
                        continue
                    headers = {name.lower(): value for name, value in (line.decode().split(": ", 1) for line in lines[1:])}
                    if len(rest) >= int(headers.get("content-length", "0")):
                        return lines[0].decode(), headers, rest[:int(headers.get("content-length", "0"))]
                chunk = s.recv(65536)
                if not chunk:
                    break
                answer += chunk
        except ConnectionResetError:
            pass
        return None if not answer else (answer.split(b"\r\n")[0].decode(errors="replace"), {}, b"")


def json_error(answer, status, code, what):
    assert answer is not None, f"{what}: no answer"
    line, headers, body = answer
    assert line.startswith(f"HTTP/1.1 {status} ") and len(line) > len(f"HTTP/1.1 {status} "), f"{what}: {line!r}"
    assert headers.get("content-type") == "application/json", f"{what}: {headers}"
    parsed = json.loads(body)
    assert parsed["error"]["code"] == code and "\n" not in parsed["error"]["message"], f"{what}: {parsed}"
    return headers


def wire(port, alice):
    auth = f"Authorization: Bearer {alice}\r\n".encode()
    post = lambda extra, body=b"": (b"POST /v2/messages HTTP/1.1\r\nHost: x\r\n" + auth + extra + b"\r\n" + body)
    # Not HTTP at all, an HTTP/2 preface, an unknown method: a JSON 400 over HTTP/1.1, and the connection ends.
    for data, what in [(b"garbage\r\n\r\n", "a garbage request line"), (b"\x16\x03\x01\x00\x05hello", "a TLS hello"),
                       (b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "an HTTP/2 preface"),
                       (b"BREW /v2/health HTTP/1.1\r\nHost: x\r\n\r\n", "an unknown method")]:
        headers = json_error(whole_answer(port, data), 400, "bad_request", what)
        assert headers.get("connection") == "close", f"{what}: {headers}"
    # A chunked body, a POST without Content-Length: 411, and the connection ends.
    for extra, body, what in [(b"Transfer-Encoding: chunked\r\n", b"5\r\n{\"a\":\r\n0\r\n\r\n", "a chunked body"),
                              (b"", b'{"requestId":1,"toUserId":2,"content":"x"}', "a POST without Content-Length")]:
        headers = json_error(whole_answer(port, post(extra, body)), 411, "length_required", what)
        assert headers.get("connection") == "close", f"{what}: {headers}"
    # Expect: 100-continue gets its interim answer at once (no client-side wait), then the 201.
    with raw.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as s:
        body = b'{"requestId":900,"toUserId":2,"content":"after 100"}'
        s.sendall(post(b"Content-Length: %d\r\nExpect: 100-continue\r\n" % len(body)))
        interim = s.recv(4096)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n", interim
        s.sendall(body)
        final = s.recv(65536)
        assert final.startswith(b"HTTP/1.1 201 Created\r\n"), final[:80]
    # ... and a body too large for it is refused before it is sent; another expectation is 417.
    json_error(whole_answer(port, post(b"Content-Length: 2000000\r\nExpect: 100-continue\r\n")), 413, "too_large",
               "Expect with 2 MB")
    json_error(whole_answer(port, post(b"Content-Length: 2\r\nExpect: tea\r\n", b"{}")), 417, "expectation_failed",
               "Expect: tea")
    # Every status line has its reason phrase; a 401 has its challenge.
    headers = json_error(whole_answer(port, b"GET /v2/messages HTTP/1.1\r\nHost: x\r\n\r\n"), 401, "unauthorized", "no token")
    assert headers.get("www-authenticate") == 'Bearer realm="chat-relay"', headers
    # Invalid UTF-8 and a very long path: a JSON answer (here 404: no such path).
    json_error(whole_answer(port, b"GET /v2/\xff\xfe HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n"), 404, "not_found",
               "an invalid UTF-8 path")
    # Heads libwebsockets cannot parse end the connection, as documented: no answer, or
    # (a % not followed by two hex digits) its own HTML 403; never a crash or a hang.
    for data, what in [(b"GET /v2/messages?limit=1%00 HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n", "%00 in the query"),
                       (b"GET /v2/he\x00alth HTTP/1.1\r\nHost: x\r\n\r\n", "a NUL byte in the path"),
                       (b"GET /v2/health HTTP/1.1\r\nHost: x\r\nX-Pad: " + b"a" * 9000 + b"\r\n\r\n", "9 KB of headers"),
                       (b"GET /v2/health HTTP/1.1\r\nHost: x\r\nHost: y\r\nGET / HTTP/1.1\r\n\r\n", "two request lines")]:
        assert whole_answer(port, data) is None, what
    answer = whole_answer(port, b"GET /v2/%zz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert answer is not None and answer[0].startswith("HTTP/1.0 403"), answer
    # A truncated head, then the client's end of the connection: closed without an answer.
    assert whole_answer(port, b"GET /v2/health HTTP/1.1\r\nHost: x\r\n", shut=True) is None
    healthy(port)
    print("ok")


# MARK: - 6. Failed logins: one client tries 1,000 bad tokens, another works

def percentile(values, fraction):
    values = sorted(values)
    return values[min(len(values) - 1, int(fraction * len(values)))] * 1000


def logins(port, bob, failed=1000):
    def measure(count, connection):
        latencies = []
        for _ in range(count):
            started = time.perf_counter()
            status, _, _ = call(port, "GET", "/v2/messages", bob, connection=connection)
            latencies.append(time.perf_counter() - started)
            assert status == 200, status
        return latencies

    good = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    measure(20, good)   # warm up
    before = measure(300, good)
    refused = []
    attempt_times = {"near": [], "far": []}

    def attacker():
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
        for n in range(failed):
            # Alternately a token one character off Bob's and an unrelated one: their
            # answer times are printed (the comparison is constant-time), never asserted.
            kind = "near" if n % 2 == 0 else "far"
            token = bob[:-1] + ("A" if bob[-1] != "A" else "B") if kind == "near" else "Z" * len(bob)
            started = time.perf_counter()
            status, _, body = call(port, "GET", "/v2/messages", token, connection=connection)
            attempt_times[kind].append(time.perf_counter() - started)
            refused.append(status == 401 and body["error"]["code"] == "unauthorized")
        connection.close()

    thread = threading.Thread(target=attacker, daemon=True)
    thread.start()
    during = []
    while thread.is_alive():
        during += measure(10, good)
    thread.join(120)
    after = measure(100, good)
    good.close()
    assert len(refused) == failed and all(refused), f"{refused.count(True)} of {failed} bad tokens refused"
    figures = {
        "failedLogins": failed,
        "before": {"n": len(before), "p50": percentile(before, 0.5), "p99": percentile(before, 0.99)},
        "during": {"n": len(during), "p50": percentile(during, 0.5), "p99": percentile(during, 0.99)},
        "after": {"n": len(after), "p50": percentile(after, 0.5), "p99": percentile(after, 0.99)},
        "refusal": {"nearTokenP50": percentile(attempt_times["near"], 0.5),
                    "farTokenP50": percentile(attempt_times["far"], 0.5)},
    }
    print(json.dumps(figures))


command, port = sys.argv[1], int(sys.argv[2])
if command == "matrix":
    matrix(port, *sys.argv[3:6])
elif command == "limits":
    limits(port, sys.argv[3])
elif command == "inject":
    inject(port, sys.argv[3], sys.argv[4])
elif command == "slowloris":
    slowloris(port, sys.argv[3], sys.argv[4])
elif command == "logins":
    logins(port, sys.argv[3], int(sys.argv[4]) if len(sys.argv) > 4 else 1000)
elif command == "wire":
    wire(port, sys.argv[3])
else:
    sys.exit(f"unknown command {command}")
