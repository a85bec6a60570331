"""Behaviours of a running chat-relay beyond the happy path (docs/protocol.md), checked
by outside clients only: http.client, a raw socket, and the `websockets` package
(Debian's 10.4: run with /usr/bin/python3).

usage: relay_auth_faults.py auth PORT TOKEN_ALICE TOKEN_BOB TOKEN_CAROL
       relay_auth_faults.py post PORT TOKEN REQUEST_ID TO_USER   -> prints status, replayed, messageId, retryAfter, code
       relay_auth_faults.py drop PORT TOKEN REQUEST_ID TO_USER   -> the POST gets no answer
       relay_auth_faults.py inbox PORT TOKEN                      -> prints the ids of GET /v2/messages
       relay_auth_faults.py ack PORT TOKEN_SENDER TOKEN_RECIPIENT MESSAGE_ID
       relay_auth_faults.py frames PORT TOKEN_ALICE TOKEN_BOB
       relay_auth_faults.py slow PORT
       relay_auth_faults.py interop PORT TOKEN_ALICE TOKEN_BOB
       relay_auth_faults.py going-away PORT TOKEN RELAY_PID
Users 1 (Alice), 2 (Bob) and 3 (Carol). Every wait is bounded; no check is about time.
Any failed check raises (exit 1).
"""
import asyncio
import http.client
import json
import socket as raw
import sys
import threading
import time

import websockets

TIMEOUT = 10   # any single wait; a bound against hangs, never an assertion


def call(port, method, path, token=None, body=None, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    sent = {"Content-Type": "application/json"} if body is not None else {}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    sent.update(headers or {})
    connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=sent)
    response = connection.getresponse()
    data = response.read()
    result = response.status, {k.lower(): v for k, v in response.getheaders()}, json.loads(data or b"null")
    connection.close()
    return result


def expect_error(result, status, code, what):
    got, headers, body = result
    assert got == status, f"{what}: expected {status} {code}, got {got}: {body}"
    assert isinstance(body, dict) and isinstance(body.get("error"), dict), f"{what}: not an error body: {body}"
    assert body["error"]["code"] == code and isinstance(body["error"].get("message"), str), f"{what}: {body}"
    assert headers.get("content-type", "").startswith("application/json"), f"{what}: {headers}"


def socket_url(port):
    return f"ws://127.0.0.1:{port}/v2/socket/updates"


def connect(port, token):
    return websockets.connect(socket_url(port), extra_headers={"Authorization": f"Bearer {token}"},
                              open_timeout=TIMEOUT, close_timeout=TIMEOUT)


async def next_event(socket, kind):
    """The next event of that type, skipping others (presence updates come and go)."""
    while True:
        event = json.loads(await asyncio.wait_for(socket.recv(), TIMEOUT))
        assert set(event) == {"type", "payload"}, event
        if event["type"] == kind:
            return event["payload"]


async def closed(socket):
    """Reads until the relay closes the socket; its close code."""
    try:
        while True:
            await asyncio.wait_for(socket.recv(), TIMEOUT)
    except websockets.exceptions.ConnectionClosed:
        pass
    return socket.close_code


# MARK: - 1. The auth matrix

def auth(port, alice, bob, carol):
    endpoints = [
        ("POST", "/v2/messages", {"requestId": 1, "toUserId": 2, "content": "hi"}),
        ("GET", "/v2/messages", None),
        ("GET", "/v2/users/2", None),
        ("GET", "/v2/users?ids=1,2", None),
    ]
    refused = [({}, "no token"), ({"Authorization": "Bearer wrong-token"}, "wrong token"),
               ({"Authorization": f"Bearer {alice}x"}, "a token one byte off"), ({"Authorization": alice}, "no Bearer")]
    for method, path, body in endpoints:
        for headers, what in refused:
            expect_error(call(port, method, path, body=body, headers=headers), 401, "unauthorized", f"{method} {path} with {what}")
    # Nothing was posted by the refused POSTs.
    status, _, inbox = call(port, "GET", "/v2/messages", bob)
    assert status == 200 and inbox["messages"] == [], inbox

    # The socket: 401 with the JSON error body, no upgrade (seen raw, then by websockets).
    upgrade = {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
               "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}
    for headers, what in refused:
        expect_error(call(port, "GET", "/v2/socket/updates", headers={**upgrade, **headers}), 401, "unauthorized", f"upgrade with {what}")

    async def sockets():
        for headers, what in refused:
            try:
                async with websockets.connect(socket_url(port), extra_headers=headers, open_timeout=TIMEOUT):
                    raise AssertionError(f"upgrade accepted with {what}")
            except websockets.exceptions.InvalidStatusCode as refusal:
                assert refusal.status_code == 401, (what, refusal.status_code)
    asyncio.run(asyncio.wait_for(sockets(), 60))

    # Another user's token sees only its own data.
    status, _, me = call(port, "GET", "/v2/users/2", bob)
    assert status == 200 and me["id"] == 2 and me["name"] == "Bob", me
    expect_error(call(port, "GET", "/v2/users/1", bob), 403, "forbidden", "Bob reads Alice's profile before any message")
    status, _, listed = call(port, "GET", "/v2/users?ids=1,2,3", bob)
    assert status == 200 and [u["id"] for u in listed["users"]] == [2], listed

    async def exchange():
        # Bob's socket gets only Bob's messages: Alice writes Carol first, then Bob.
        async with connect(port, bob) as bobs:
            status, _, to_carol = call(port, "POST", "/v2/messages", alice, {"requestId": 4, "toUserId": 3, "content": "for Carol"})
            assert status == 201 and to_carol["message"]["fromUserId"] == 1, to_carol
            status, _, to_bob = call(port, "POST", "/v2/messages", alice, {"requestId": 5, "toUserId": 2, "content": "for Bob"})
            assert status == 201 and to_bob["message"]["fromUserId"] == 1, to_bob
            received = await next_event(bobs, "new_message")
            assert received["messageId"] == to_bob["message"]["messageId"] and received["toUserId"] == 2, received
            return to_carol["message"]["messageId"], to_bob["message"]["messageId"]
    carols, bobs = asyncio.run(asyncio.wait_for(exchange(), 60))

    status, _, mine = call(port, "GET", "/v2/messages", alice)
    # Alice's log holds what she sent (with her request ids), never others' inboxes.
    assert status == 200 and [(m["toUserId"], m["requestId"]) for m in mine["messages"]] == [(3, 4), (2, 5)], mine
    status, _, inbox = call(port, "GET", "/v2/messages", bob)
    assert [m["messageId"] for m in inbox["messages"]] == [bobs], inbox
    status, _, inbox = call(port, "GET", "/v2/messages", carol)
    assert [m["messageId"] for m in inbox["messages"]] == [carols], inbox
    # Now Bob and Alice exchange messages: her profile is visible to him, Carol's is not.
    status, _, profile = call(port, "GET", "/v2/users/1", bob)
    assert status == 200 and profile["id"] == 1, profile
    expect_error(call(port, "GET", "/v2/users/3", bob), 403, "forbidden", "Bob reads Carol's profile")
    status, _, listed = call(port, "GET", "/v2/users?ids=1,2,3", bob)
    assert sorted(u["id"] for u in listed["users"]) == [1, 2], listed
    # A token's user is the sender, whatever the body says.
    status, _, forged = call(port, "POST", "/v2/messages", bob, {"requestId": 6, "toUserId": 1, "content": "x", "fromUserId": 3})
    assert status == 201 and forged["message"]["fromUserId"] == 2, forged
    print("ok")


# MARK: - 2. Durability and idempotency

def post(port, token, request_id, to):
    status, headers, answer = call(port, "POST", "/v2/messages", token, {"requestId": request_id, "toUserId": to, "content": "durable"})
    message = answer.get("message", {}) if isinstance(answer, dict) else {}
    print(json.dumps({"status": status, "replayed": headers.get("idempotent-replayed") == "true",
                      "messageId": message.get("messageId"), "fromUserId": message.get("fromUserId"),
                      "retryAfter": headers.get("retry-after"),
                      "code": (answer.get("error") or {}).get("code") if isinstance(answer, dict) else None}))


def inbox(port, token):
    """The ids of the messages to the caller that no device of theirs stored yet."""
    status, _, answer = call(port, "GET", "/v2/messages", token)
    assert status == 200, (status, answer)
    me = call(port, "GET", "/v2/me", token)[2]["user"]["id"]
    print(json.dumps([m["messageId"] for m in answer["messages"] if m["toUserId"] == me and m["status"] == "SYNCED"]))


def ack(port, sender, recipient, message_id):
    """The recipient acknowledges on its socket; the sender's socket hears message_delivered."""
    async def main():
        async with connect(port, sender) as senders, connect(port, recipient) as recipients:
            await recipients.send(json.dumps({"type": "delivery_ack", "payload": {"messageIds": [message_id]}}))
            delivered = await next_event(senders, "message_delivered")
            assert delivered["messageId"] == message_id, delivered
    asyncio.run(asyncio.wait_for(main(), 60))
    print("ok")


# MARK: - 3. A slow client stalls nobody

def slow(port):
    """A client sends its request head one byte at a time (about 2 s in all); meanwhile
    another client's health check is answered, before the slow one is."""
    head = b"GET /v2/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    pause = 2.0 / len(head)
    started, finished = threading.Event(), threading.Event()
    result = {}

    def dribble():
        try:
            with raw.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as slow:
                for byte in head:
                    slow.sendall(bytes([byte]))
                    started.set()
                    time.sleep(pause)
                answer = b""
                while b"\r\n\r\n" not in answer:
                    chunk = slow.recv(4096)
                    if not chunk:
                        break
                    answer += chunk
                result["answer"] = answer
        except Exception as error:   # reported by the main thread
            result["error"] = repr(error)
        finally:
            started.set()
            finished.set()

    thread = threading.Thread(target=dribble, daemon=True)
    thread.start()
    assert started.wait(TIMEOUT), "the slow client never started"
    status, _, body = call(port, "GET", "/v2/health")
    slow_done_first = finished.is_set()
    assert status == 200 and body == {"ok": True, "version": 2}, (status, body)
    assert not slow_done_first, f"the health check was answered only after the slow client had finished: {result}"
    thread.join(TIMEOUT)
    assert finished.is_set(), "the slow client hung"
    assert "error" not in result, result
    assert result["answer"].startswith(b"HTTP/1.1 200"), result
    print("ok")


# MARK: - 4. Bad frames

def frames(port, alice, bob):
    async def main():
        async with connect(port, alice) as a, connect(port, bob) as b:
            await b.send(b"\x00\x01binary")           # a binary frame: that socket alone is closed, 1003
            assert await closed(b) == 1003, b.close_code
            await a.send("this is not JSON {")        # a text frame that is not JSON: an error event
            error = await next_event(a, "error")
            assert error["code"] == "bad_request" and isinstance(error["message"], str), error
            await a.send(json.dumps({"type": "nonsense", "payload": {}}))   # not a known event: an error event
            error = await next_event(a, "error")
            assert error["code"] == "bad_request", error
            # Alice's socket is still open and used: a message from Bob arrives on it.
            status, _, sent = call(port, "POST", "/v2/messages", bob, {"requestId": 1, "toUserId": 1, "content": "still there?"})
            assert status == 201, sent
            received = await next_event(a, "new_message")
            assert received["messageId"] == sent["message"]["messageId"], received
            await asyncio.wait_for(await a.ping(), TIMEOUT)
            assert a.close_code is None, a.close_code
    asyncio.run(asyncio.wait_for(main(), 60))
    print("ok")


# MARK: - 5. Interop with the websockets package

def interop(port, alice, bob):
    async def main():
        async with connect(port, alice) as a, connect(port, bob) as b:
            status, _, sent = call(port, "POST", "/v2/messages", bob, {"requestId": 1, "toUserId": 1, "content": "Hi 👋"})
            assert status == 201, sent
            received = await next_event(a, "new_message")
            mine = {k: v for k, v in sent["message"].items() if k not in ("fromDeviceId", "requestId")}
            assert received == mine, (received, sent)
            await a.send(json.dumps({"type": "delivery_ack", "payload": {"messageIds": [received["messageId"]]}}))
            delivered = await next_event(b, "message_delivered")
            assert delivered["messageId"] == received["messageId"] and delivered["conversationId"] == 1, delivered
            await asyncio.wait_for(await a.ping(b"are you there"), TIMEOUT)   # the pong arrived
            await a.close()
            assert a.close_code == 1000, a.close_code
        status, _, left = call(port, "GET", "/v2/messages", alice)
        # Acknowledged: delivered, and kept in the log for the retention window.
        assert status == 200 and [m["status"] for m in left["messages"]] == ["DELIVERED"], left
    asyncio.run(asyncio.wait_for(main(), 60))
    print("ok")


def going_away(port, token, pid):
    """SIGTERM to the relay closes an open socket with 1001."""
    import os
    import signal

    async def main():
        async with connect(port, token) as socket:
            await asyncio.wait_for(await socket.ping(), TIMEOUT)   # open and answered before the signal
            os.kill(pid, signal.SIGTERM)
            assert await closed(socket) == 1001, socket.close_code
    asyncio.run(asyncio.wait_for(main(), 30))
    print("ok")


# MARK: - 6. Faults

def drop(port, token, request_id, to):
    try:
        call(port, "POST", "/v2/messages", token, {"requestId": request_id, "toUserId": to, "content": "durable"})
    except (http.client.RemoteDisconnected, ConnectionResetError, http.client.BadStatusLine):
        print("dropped")
        return
    raise AssertionError("the response was not dropped")


command, port, rest = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
if command == "auth":
    auth(port, *rest)
elif command == "post":
    post(port, rest[0], int(rest[1]), int(rest[2]))
elif command == "drop":
    drop(port, rest[0], int(rest[1]), int(rest[2]))
elif command == "inbox":
    inbox(port, rest[0])
elif command == "ack":
    ack(port, rest[0], rest[1], int(rest[2]))
elif command == "slow":
    slow(port)
elif command == "frames":
    frames(port, *rest)
elif command == "interop":
    interop(port, *rest)
elif command == "going-away":
    going_away(port, rest[0], int(rest[1]))
else:
    raise SystemExit(f"unknown command {command}")
