"""The auth matrix and injected faults of a running chat-relay (docs/protocol.md).

usage: relay_auth_faults.py auth PORT TOKEN_ALICE TOKEN_BOB
       relay_auth_faults.py post PORT TOKEN REQUEST_ID TO_USER   -> prints status, replayed, messageId
       relay_auth_faults.py drop PORT TOKEN REQUEST_ID TO_USER   -> the POST gets no answer
Any failed check raises (exit 1).
"""
import asyncio
import http.client
import json
import sys
import time

import websockets


def call(port, method, path, token=None, body=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    response = connection.getresponse()
    data = response.read()
    result = response.status, {k.lower(): v for k, v in response.getheaders()}, json.loads(data or b"null")
    connection.close()
    return result


def auth(port, alice, bob):
    endpoints = [
        ("POST", "/v1/messages", {"requestId": 1, "toUserId": 2, "content": "hi"}),
        ("GET", "/v1/messages", None),
        ("GET", "/v1/users/2", None),
        ("GET", "/v1/users?ids=1,2", None),
    ]
    for method, path, body in endpoints:
        for token in (None, "wrong-token", alice + "x"):
            status, _, answer = call(port, method, path, token, body)
            assert status == 401 and answer["error"]["code"] == "unauthorized", (method, path, token, status, answer)

    async def sockets():
        for header in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "Basic " + alice}):
            try:
                async with websockets.connect(f"ws://127.0.0.1:{port}/v1/socket/updates", extra_headers=header, open_timeout=5):
                    raise AssertionError(f"upgrade accepted with {header}")
            except websockets.exceptions.InvalidStatusCode as refused:
                assert refused.status_code == 401, refused.status_code
    asyncio.run(asyncio.wait_for(sockets(), 30))

    # Another user's token sees only its own data.
    status, _, _ = call(port, "GET", "/v1/users/1", alice)
    assert status == 200
    status, _, answer = call(port, "GET", "/v1/users/1", bob)   # no exchange yet
    assert status == 403 and answer["error"]["code"] == "forbidden", answer
    status, _, sent = call(port, "POST", "/v1/messages", alice, {"requestId": 5, "toUserId": 2, "content": "for Bob"})
    assert status == 201 and sent["message"]["fromUserId"] == 1, sent
    status, _, mine = call(port, "GET", "/v1/messages", alice)
    assert status == 200 and mine["messages"] == [], mine      # Alice never sees Bob's inbox
    status, _, bobs = call(port, "GET", "/v1/messages", bob)
    assert [m["messageId"] for m in bobs["messages"]] == [sent["message"]["messageId"]], bobs
    status, _, _ = call(port, "GET", "/v1/users/1", bob)       # now they exchange messages
    assert status == 200
    # A token's user is the sender, whatever the body says.
    status, _, forged = call(port, "POST", "/v1/messages", bob, {"requestId": 6, "toUserId": 1, "content": "x", "fromUserId": 1})
    assert status == 201 and forged["message"]["fromUserId"] == 2, forged
    print("ok")


def post(port, token, request_id, to):
    status, headers, answer = call(port, "POST", "/v1/messages", token, {"requestId": request_id, "toUserId": to, "content": "durable"})
    message = answer.get("message", {}) if isinstance(answer, dict) else {}
    print(json.dumps({"status": status, "replayed": headers.get("idempotent-replayed") == "true",
                      "messageId": message.get("messageId"), "retryAfter": headers.get("retry-after"),
                      "code": (answer.get("error") or {}).get("code") if isinstance(answer, dict) else None}))


def drop(port, token, request_id, to):
    try:
        call(port, "POST", "/v1/messages", token, {"requestId": request_id, "toUserId": to, "content": "durable"})
    except (http.client.RemoteDisconnected, ConnectionResetError, http.client.BadStatusLine):
        print("dropped")
        return
    raise AssertionError("the response was not dropped")


def sockets(port, alice, bob):
    """Bad frames close only their socket; ping/pong; a normal close is 1000."""
    import socket as raw
    url = f"ws://127.0.0.1:{port}/v1/socket/updates"

    async def main():
        async with websockets.connect(url, extra_headers={"Authorization": f"Bearer {alice}"}) as a, \
                websockets.connect(url, extra_headers={"Authorization": f"Bearer {bob}"}) as b:
            pong = await a.ping()
            await asyncio.wait_for(pong, 10)
            await b.send(b"\x00\x01binary")           # a binary frame: that socket alone is closed, 1003
            try:
                while True:
                    await asyncio.wait_for(b.recv(), 10)
            except websockets.exceptions.ConnectionClosed:
                pass
            assert b.close_code == 1003, b.close_code
            await a.send(json.dumps({"type": "nonsense", "payload": {}}))   # a's socket still works
            event = json.loads(await asyncio.wait_for(a.recv(), 10))
            while event["type"] != "error":
                event = json.loads(await asyncio.wait_for(a.recv(), 10))
            assert event["payload"]["code"] == "bad_request", event
            await a.close()
            assert a.close_code == 1000, a.close_code
    asyncio.run(asyncio.wait_for(main(), 60))

    # A client dribbling its request head one byte at a time does not stall the others.
    slow = raw.create_connection(("127.0.0.1", port), timeout=10)
    head = b"GET /v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    for byte in head[:20]:
        slow.send(bytes([byte]))
        time.sleep(0.02)
    started = time.monotonic()
    status, _, body = call(port, "GET", "/v1/health")
    fast = time.monotonic() - started
    assert status == 200 and body["ok"] is True, body
    for byte in head[20:]:
        slow.send(bytes([byte]))
    slow.send(b"\r\n")
    answer = slow.recv(4096)
    assert answer.startswith(b"HTTP/1.1 200"), answer
    slow.close()
    assert fast < 5, f"the health check waited {fast:.1f} s behind the slow client"
    print("ok")


def going_away(port, token, pid):
    """SIGTERM to the relay closes an open socket with 1001."""
    import os
    import signal

    async def main():
        async with websockets.connect(f"ws://127.0.0.1:{port}/v1/socket/updates",
                                      extra_headers={"Authorization": f"Bearer {token}"}) as socket:
            os.kill(pid, signal.SIGTERM)
            try:
                while True:
                    await asyncio.wait_for(socket.recv(), 15)
            except websockets.exceptions.ConnectionClosed:
                pass
            assert socket.close_code == 1001, socket.close_code
    asyncio.run(asyncio.wait_for(main(), 30))
    print("ok")


command, port = sys.argv[1], int(sys.argv[2])
if command == "auth":
    auth(port, sys.argv[3], sys.argv[4])
elif command == "post":
    post(port, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
elif command == "drop":
    drop(port, sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
elif command == "sockets":
    sockets(port, sys.argv[3], sys.argv[4])
elif command == "going-away":
    going_away(port, sys.argv[3], int(sys.argv[4]))
