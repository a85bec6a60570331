"""Devices against a running chat-relay: /v2/me, per-device idempotency, the upgrade.

    relay_devices.py PORT TOKEN...   -> prints one JSON object of facts, per token in order:
        me: [status, body] of GET /v2/me
        posts: [status, messageId, replayed] of POST requestId 5 to user 2, twice
        upgrade: the status line's code of a WebSocket upgrade
    relay_devices.py PORT --hold TOKEN -> opens a WebSocket, prints "open", then the
        close code the relay ends it with (waits up to 30 s)
"""
import base64
import json
import os
import socket
import sys
import urllib.error
import urllib.request

port = int(sys.argv[1])
tokens = sys.argv[2:]


def call(method, path, token, body=None):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=None if body is None else json.dumps(body).encode(),
        method=method,
    )
    request.add_header("Authorization", "Bearer " + token)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read()), response.headers.get("Idempotent-Replayed")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null"), None


def upgrade(token):
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        key = base64.b64encode(os.urandom(16)).decode()
        connection.sendall(
            (
                "GET /v2/socket/updates HTTP/1.1\r\n"
                f"Host: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                f"Authorization: Bearer {token}\r\n\r\n"
            ).encode()
        )
        data = b""
        while b"\r\n" not in data:
            chunk = connection.recv(4096)
            if not chunk:
                break
            data += chunk
    return int(data.split(b" ")[1]) if data else 0


def hold(token):
    import asyncio

    import websockets

    async def main():
        async with websockets.connect(
            f"ws://127.0.0.1:{port}/v2/socket/updates",
            extra_headers={"Authorization": f"Bearer {token}"},
            open_timeout=10,
            close_timeout=10,
        ) as socket:
            print("open", flush=True)
            try:
                while True:
                    await asyncio.wait_for(socket.recv(), 30)
            except websockets.exceptions.ConnectionClosed:
                pass
            print(socket.close_code, flush=True)

    asyncio.run(main())


if tokens[:1] == ["--hold"]:
    hold(tokens[1])
    sys.exit(0)

facts = []
for token in tokens:
    me = call("GET", "/v2/me", token)
    posts = []
    for _ in range(2):
        status, body, replayed = call(
            "POST", "/v2/messages", token, {"requestId": 5, "toUserId": 2, "content": "same request, each device"}
        )
        posts.append([status, (body.get("message") or {}).get("messageId"), replayed == "true"])
    facts.append({"me": [me[0], me[1]], "posts": posts, "upgrade": upgrade(token)})
print(json.dumps(facts))
