"""A contact that goes silent (half-open TCP: upgraded, then never answers a ping)
is announced offline once the relay's pings go unanswered.

usage: relay_presence.py PORT TOKEN_ALICE TOKEN_BOB   (the relay runs with --ping-seconds 1)
"""
import asyncio
import base64
import json
import os
import socket
import sys
import urllib.request

import websockets

PORT, ALICE, BOB = int(sys.argv[1]), sys.argv[2], sys.argv[3]

# Alice and Bob exchange a message: they are contacts.
request = urllib.request.Request(f"http://127.0.0.1:{PORT}/v2/messages", method="POST",
                                 data=json.dumps({"requestId": 1, "toUserId": 2, "content": "hi"}).encode())
request.add_header("Authorization", f"Bearer {ALICE}")
assert urllib.request.urlopen(request, timeout=10).status == 201


async def main():
    async with websockets.connect(f"ws://127.0.0.1:{PORT}/v2/socket/updates",
                                  extra_headers={"Authorization": f"Bearer {ALICE}"}) as alice:
        # Bob upgrades by hand and then says nothing more: no pongs, no close.
        bob = socket.create_connection(("127.0.0.1", PORT), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        bob.sendall((f"GET /v2/socket/updates HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                     f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nAuthorization: Bearer {BOB}\r\n\r\n").encode())
        assert bob.recv(4096).startswith(b"HTTP/1.1 101"), "no upgrade"
        seen = []
        while True:
            event = json.loads(await asyncio.wait_for(alice.recv(), 30))
            if event["type"] == "contact_status_update" and event["payload"]["userId"] == 2:
                seen.append(event["payload"]["online"])
                if seen[-1] is False:
                    break
        assert seen == [True, False], seen
        bob.close()
    print("ok")


asyncio.run(asyncio.wait_for(main(), 60))
