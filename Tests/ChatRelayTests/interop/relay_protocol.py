"""Checks a running chat-relay against docs/protocol.md with outside clients only:
urllib for HTTP and the `websockets` package for the socket.

usage: relay_protocol.py PORT TOKEN_ALICE TOKEN_BOB TOKEN_CAROL
Users 1 (Alice), 2 (Bob) and 3 (Carol) exist; Carol never connects a socket.
Prints one JSON object of facts for the caller; any failed check raises (exit 1).
"""
import asyncio
import json
import sys
import urllib.error
import urllib.request

import websockets

PORT, ALICE, BOB, CAROL = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
BASE = f"http://127.0.0.1:{PORT}"
WS = f"ws://127.0.0.1:{PORT}/v2/socket/updates"


def http(method, path, token=None, body=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(BASE + path, data=data, method=method)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, json.loads(error.read() or b"null")


def expect_error(result, status, code, field=None):
    got, _, body = result
    assert got == status, f"expected {status}, got {got}: {body}"
    assert body["error"]["code"] == code, body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"], body
    if field is not None:
        assert body["error"].get("field") == field, body


async def next_event(socket, kind, timeout=20):
    while True:
        event = json.loads(await asyncio.wait_for(socket.recv(), timeout))
        assert set(event) == {"type", "payload"}, event
        if event["type"] == kind:
            return event["payload"]


async def main():
    facts = {}
    status, _, body = http("GET", "/v2/health")
    assert status == 200 and body["ok"] is True, body

    # Authentication and bad input.
    expect_error(http("GET", "/v2/messages"), 401, "unauthorized")
    assert http("GET", "/v2/me", token="not-a-token")[1].get("www-authenticate", "").startswith("Bearer "), "a 401 names its scheme"
    expect_error(http("GET", "/v2/messages", token="not-a-token"), 401, "unauthorized")
    expect_error(http("GET", "/v2/nowhere", token=ALICE), 404, "not_found")
    expect_error(http("DELETE", "/v2/messages", token=ALICE), 405, "method_not_allowed")
    expect_error(http("POST", "/v2/messages", token=ALICE, raw=b"{not json"), 400, "bad_request")
    expect_error(http("POST", "/v2/messages", token=ALICE, body={"requestId": 1, "toUserId": 2}), 400, "bad_request", "content")
    expect_error(http("POST", "/v2/messages", token=ALICE, body={"requestId": "x", "toUserId": 2, "content": "a"}), 400, "bad_request", "requestId")
    expect_error(http("POST", "/v2/messages", token=ALICE, body={"requestId": 1, "toUserId": 99, "content": "a"}), 404, "not_found")
    expect_error(http("POST", "/v2/messages", token=ALICE, body={"requestId": 1, "toUserId": 1, "content": "a"}), 400, "bad_request")
    expect_error(http("GET", "/v2/messages?limit=0", token=ALICE), 400, "bad_request", "limit")
    expect_error(http("POST", "/v2/messages", token=ALICE, body={"requestId": 1, "toUserId": 2, "content": "x" * 65537}), 413, "too_large", "content")

    # A body that does not decode is told which field and what was expected, in the doc's
    # words (issue 28), never the JSON library's own text.
    def expect_bad(raw, field, words, path="/v2/messages"):
        status, _, body = http("POST", path, token=ALICE, raw=raw)
        assert status == 400 and body["error"]["code"] == "bad_request", (raw, status, body)
        assert body["error"].get("field") == field, (raw, body)
        message = body["error"]["message"]
        assert words in message and "Expected to decode" not in message and "Dictionary" not in message, (raw, message)
        assert "\n" not in message, (raw, message)
    expect_bad(b'{"requestId": "7", "toUserId": 2, "content": "a"}', "requestId", "expected an integer, got a string")
    expect_bad(b'{"requestId": 7, "toUserId": true, "content": "a"}', "toUserId", "expected an integer")
    expect_bad(b'{"requestId": 7, "toUserId": 2, "content": 5}', "content", "expected a string, got a number")
    expect_bad(b'{"requestId": 7, "toUserId": 2, "content": null}', "content", "expected a string, got null")
    expect_bad(b'[]', None, "expected a JSON object, got an array")
    expect_bad(b'null', None, "expected a JSON object, got null")
    expect_bad(b'{"requestId": 20.5, "toUserId": 2, "content": "a"}', "requestId", "expected an integer of at most 64 bits, got 20.5")
    expect_bad(b'{"requestId": 9223372036854775808, "toUserId": 2, "content": "a"}', "requestId", "at most 64 bits")
    expect_bad(b'{"requestId": 7, "toUserId": 2, "content": "\\ud800"}', "content", "lone surrogate")
    expect_bad(b'{"requestId": 7, "toUserId": 2, "content": "a\xff"}', "content", "valid UTF-8")
    expect_bad(b'{"requestId": 7,', None, "not valid JSON")
    expect_bad(b'{"messages": [{"requestId": 8, "toUserId": 2, "content": "a"}, {"requestId": 1.5, "toUserId": 2, "content": "b"}]}',
               "messages[1].requestId", "at most 64 bits", path="/v2/messages/batch")
    expect_bad(b'{"messages": [{"requestId": 8, "toUserId": 2, "content": "a"}, {"requestId": "x", "toUserId": 2, "content": "b"}]}',
               "messages[1].requestId", "expected an integer, got a string", path="/v2/messages/batch")

    async with websockets.connect(WS, extra_headers={"Authorization": f"Bearer {ALICE}"}) as alice, \
            websockets.connect(WS, extra_headers={"Authorization": f"Bearer {BOB}"}) as bob:
        # A message to an online recipient arrives as new_message; the POST is 201.
        status, headers, body = http("POST", "/v2/messages", token=ALICE,
                                     body={"requestId": 7, "toUserId": 2, "content": "Hi 👋 你好", "createdAt": "2026-01-31T12:00:00Z", "extra": 1})
        assert status == 201, body
        message = body["message"]
        assert body["fromMessageRequestId"] == 7
        # The sender's answer also names its device, request and place in its log (version 2).
        assert set(message) == {"messageId", "fromUserId", "toUserId", "content", "status", "createdAt",
                                "fromDeviceId", "requestId", "previousId"}, message
        assert (message["fromDeviceId"], message["requestId"], message["previousId"]) == (1, 7, 0), message
        assert (message["fromUserId"], message["toUserId"], message["content"], message["status"]) == (1, 2, "Hi 👋 你好", "SYNCED")
        assert message["createdAt"] == "2026-01-31T12:00:00.000Z", message
        received = await next_event(bob, "new_message")
        # The recipient's copy: no device or request id of the sender's, its place in Bob's log.
        assert received == {k: v for k, v in message.items() if k not in ("fromDeviceId", "requestId")}, (received, message)

        # A retry with the same requestId is the same message, marked replayed; a reuse for another message is 409.
        status, headers, again = http("POST", "/v2/messages", token=ALICE, body={"requestId": 7, "toUserId": 2, "content": "Hi 👋 你好"})
        assert status == 201 and again["message"]["messageId"] == message["messageId"], again
        assert headers.get("idempotent-replayed") == "true", headers
        expect_error(http("POST", "/v2/messages", token=ALICE, body={"requestId": 7, "toUserId": 2, "content": "other"}), 409, "conflict")

        # Ids rise.
        status, _, second = http("POST", "/v2/messages", token=ALICE, body={"requestId": 8, "toUserId": 2, "content": "second"})
        assert status == 201 and second["message"]["messageId"] > message["messageId"], second
        await next_event(bob, "new_message")


        # Until acknowledged, the messages stay and sync returns them in id order.
        status, _, sync = http("GET", "/v2/messages?lastSyncedMessage=0&limit=1", token=BOB)
        assert status == 200 and [m["messageId"] for m in sync["messages"]] == [message["messageId"]] and sync["hasMore"] is True, sync
        status, _, sync = http("GET", f"/v2/messages?lastSyncedMessage={message['messageId']}", token=BOB)
        assert [m["messageId"] for m in sync["messages"]] == [second["message"]["messageId"]] and sync["hasMore"] is False, sync
        # `after` fetches further on while naming a lower stored place; below it is a 400.
        status, _, ahead = http("GET", f"/v2/messages?lastSyncedMessage=0&after={message['messageId']}", token=BOB)
        assert status == 200 and [m["messageId"] for m in ahead["messages"]] == [second["message"]["messageId"]], ahead
        assert ahead["cursor"] == second["message"]["messageId"], ahead
        expect_error(http("GET", f"/v2/messages?lastSyncedMessage={message['messageId']}&after=1", token=BOB),
                     400, "bad_request", "after")

        # Delivery acknowledgement: delivered (it stays in both logs), the sender hears message_delivered.
        await bob.send(json.dumps({"type": "delivery_ack", "payload": {"messageIds": [message["messageId"], second["message"]["messageId"]]}}))
        delivered = await next_event(alice, "message_delivered")
        assert delivered["messageId"] in (message["messageId"], second["message"]["messageId"]) and delivered["conversationId"] == 2, delivered
        await next_event(alice, "message_delivered")
        status, _, sync = http("GET", "/v2/messages", token=BOB)
        assert [m["status"] for m in sync["messages"]] == ["DELIVERED", "DELIVERED"], sync
        assert sync["cursor"] == second["message"]["messageId"], sync

        # A retry after delivery still gets the same message.
        status, _, late = http("POST", "/v2/messages", token=ALICE, body={"requestId": 7, "toUserId": 2, "content": "Hi 👋 你好"})
        assert status == 201 and late["message"]["messageId"] == message["messageId"], late

        # Read receipts (forward only) and typing.
        await bob.send(json.dumps({"type": "read", "payload": {"conversationId": 1, "upTo": second["message"]["messageId"]}}))
        read = await next_event(alice, "message_read")
        assert read["messageId"] == second["message"]["messageId"] and read["conversationId"] == 2, read
        # The reader's own devices (this socket too) learn the conversation was read.
        mine = await next_event(bob, "conversation_read")
        assert mine["messageId"] == second["message"]["messageId"] and mine["conversationId"] == 1, mine
        status, _, sync = http("GET", "/v2/messages", token=BOB)
        assert [m["status"] for m in sync["messages"]] == ["READ", "READ"], sync
        await bob.send(json.dumps({"type": "typing", "payload": {"toUserId": 1, "typing": True}}))
        typing = await next_event(alice, "contact_status_update")
        while not typing["typing"]:
            typing = await next_event(alice, "contact_status_update")
        assert typing["userId"] == 2, typing

        # A bad event gets an error event and the socket stays open.
        await bob.send("not json")
        error = await next_event(bob, "error")
        assert error["code"] == "bad_request", error
        await bob.send(json.dumps({"type": "typing", "payload": {"toUserId": 1, "typing": False}}))

        # One rule for every client event: what the relay cannot use gets an `error` event
        # naming the field, and the socket stays open.
        for event, field in [({"type": "typing", "payload": {"toUserId": 3, "typing": True}}, "toUserId"),  # no conversation
                             ({"type": "typing", "payload": {"toUserId": 2, "typing": True}}, "toUserId"),  # oneself
                             ({"type": "read", "payload": {"conversationId": 3, "upTo": 1}}, "conversationId"),
                             ({"type": "read", "payload": {"conversationId": 1, "upTo": 0}}, "upTo"),
                             ({"type": "updates_ack", "payload": {"upTo": -1}}, "upTo"),
                             ({"type": "sync_ack", "payload": {"lastSyncedMessage": -5, "lastSyncedUpdate": 0}}, "lastSyncedMessage"),
                             ({"type": "typing", "payload": {"toUserId": "1", "typing": True}}, "toUserId"),
                             ({"type": "delivery_ack", "payload": {"messageIds": list(range(1, 502))}}, "messageIds")]:
            await bob.send(json.dumps(event))
            error = await next_event(bob, "error")
            assert error["code"] == "bad_request", (event, error)
            assert error["message"].startswith(f"field 'payload.{field}': "), (event, error)
        # delivery_acknowledged names only what was acknowledged (a message to Bob, though
        # delivered already); an unknown id, and a message Alice acknowledges as if it were
        # to her, come back in a `not_found` error with their ids.
        own = second["message"]["messageId"]
        await bob.send(json.dumps({"type": "delivery_ack", "payload": {"messageIds": [own, 77, -1]}}))
        acknowledged = await next_event(bob, "delivery_acknowledged")
        assert acknowledged["messageIds"] == [own], acknowledged
        error = await next_event(bob, "error")
        assert error["code"] == "not_found" and error["messageIds"] == [-1, 77], error
        await alice.send(json.dumps({"type": "delivery_ack", "payload": {"messageIds": [own]}}))
        error = await next_event(alice, "error")
        assert error["code"] == "not_found" and error["messageIds"] == [own], error
        await bob.send(json.dumps({"type": "updates_ack", "payload": {"upTo": 0}}))  # valid: no answer

        # Status updates wait in sync for a sender that was away, until acknowledged by cursor.
        status, _, sync = http("GET", "/v2/messages", token=ALICE)
        updates = sync["statusUpdates"]
        assert [u["type"] for u in updates].count("message_delivered") == 2 and any(u["type"] == "message_read" for u in updates), updates
        top = max(u["sequence"] for u in updates)
        status, _, sync = http("GET", f"/v2/messages?lastSyncedUpdate={top}", token=ALICE)
        assert sync["statusUpdates"] == [], sync

        # A batch: each message as its own POST would be, in order; a refused one does not stop the rest.
        batch = {"messages": [{"requestId": 20, "toUserId": 2, "content": "b1"},
                              {"requestId": 21, "toUserId": 99, "content": "nobody"},
                              {"requestId": 22, "toUserId": 2, "content": "b3"}]}
        status, _, answer = http("POST", "/v2/messages/batch", token=ALICE, body=batch)
        assert status == 200 and [r["fromMessageRequestId"] for r in answer["results"]] == [20, 21, 22], answer
        first, refused, third = answer["results"]
        assert first["replayed"] is False and first["message"]["content"] == "b1", first
        assert refused["error"]["code"] == "not_found" and "message" not in refused, refused
        assert third["message"]["messageId"] > first["message"]["messageId"], third
        assert third["message"]["previousId"] == first["message"]["messageId"], third
        for expected in (first, third):
            got = await next_event(bob, "new_message")
            assert got["messageId"] == expected["message"]["messageId"], (got, expected)
        status, _, again = http("POST", "/v2/messages/batch", token=ALICE, body=batch)
        assert [r.get("replayed") for r in again["results"]] == [True, None, True], again
        expect_error(http("POST", "/v2/messages/batch", token=ALICE, body={"messages": []}), 400, "bad_request")
        too_many = {"messages": [{"requestId": 100 + i, "toUserId": 2, "content": "x"} for i in range(501)]}
        expect_error(http("POST", "/v2/messages/batch", token=ALICE, body=too_many), 400, "bad_request")
        # `after`: a batch is tried only once the named request of this device is on the relay.
        later = {"messages": [{"requestId": 30, "toUserId": 2, "content": "after b3"}]}
        for missing in (29, 21):  # never sent; refused (no record)
            expect_error(http("POST", "/v2/messages/batch", token=ALICE, body={**later, "after": missing}),
                         409, "out_of_order", field="after")
        expect_error(http("POST", "/v2/messages/batch", token=ALICE, body={**later, "after": 0}),
                     400, "bad_request", field="after")
        status, _, ordered = http("POST", "/v2/messages/batch", token=ALICE, body={**later, "after": 22})
        assert status == 200 and ordered["results"][0]["replayed"] is False, ordered  # not tried before
        got = await next_event(bob, "new_message")
        assert got["messageId"] == ordered["results"][0]["message"]["messageId"], got

        # Edits and deletes (issue 29): the sender's versions reach the recipient's socket;
        # only the sender may change a message; a delete wins and the text is gone.
        target = ordered["results"][0]["message"]["messageId"]
        status, _, edited = http("POST", f"/v2/messages/{target}/edit", token=ALICE,
                                 body={"requestId": 40, "content": "after b3, edited"})
        assert status == 200 and edited["update"]["version"] == 1 and edited["replayed"] is False, edited
        got = await next_event(bob, "message_edited")
        assert got["messageId"] == target and got["version"] == 1 and got["content"] == "after b3, edited", got
        # A device that first sees the message in a catch-up page gets its edit history.
        status, _, page = http("GET", "/v2/messages", token=BOB)
        shown = [m for m in page["messages"] if m["messageId"] == target]
        assert shown and shown[0]["version"] == 1 and shown[0]["content"] == "after b3, edited", shown
        assert shown[0]["edits"] == [{"content": "after b3", "editedAt": shown[0]["createdAt"], "version": 0}], shown
        status, headers, again = http("POST", f"/v2/messages/{target}/edit", token=ALICE,
                                      body={"requestId": 40, "content": "after b3, edited"})
        assert status == 200 and again["replayed"] is True and headers.get("idempotent-replayed") == "true", again
        expect_error(http("POST", f"/v2/messages/{target}/edit", token=ALICE,
                          body={"requestId": 40, "content": "other text"}), 409, "conflict")
        expect_error(http("POST", f"/v2/messages/{target}/edit", token=ALICE,
                          body={"requestId": 22, "content": "a message's key"}), 409, "conflict")
        expect_error(http("POST", f"/v2/messages/{target}/edit", token=BOB,
                          body={"requestId": 41, "content": "not Bob's"}), 403, "forbidden")
        expect_error(http("POST", f"/v2/messages/{target}/edit", token=ALICE,
                          body={"requestId": 42, "content": ""}), 400, "bad_request")
        expect_error(http("POST", "/v2/messages/12345/delete", token=ALICE, body={"requestId": 43}), 404, "not_found")
        status, _, deleted = http("POST", f"/v2/messages/{target}/delete", token=ALICE, body={"requestId": 44})
        assert status == 200 and deleted["update"]["type"] == "message_deleted", deleted
        got = await next_event(bob, "message_deleted")
        assert got["messageId"] == target, got
        expect_error(http("POST", f"/v2/messages/{target}/edit", token=ALICE,
                          body={"requestId": 45, "content": "too late"}), 409, "conflict")
        status, _, page = http("GET", "/v2/messages", token=BOB)
        tombstone = [m for m in page["messages"] if m["messageId"] == target]
        assert tombstone and tombstone[0]["content"] == "" and "deletedAt" in tombstone[0], tombstone
        assert "edits" not in tombstone[0] and "editedAt" not in tombstone[0], tombstone
        kinds = [(u["type"], u.get("content")) for u in page["statusUpdates"] if u["messageId"] == target]
        assert kinds == [("message_edited", None), ("message_deleted", None)], kinds  # the edit's text is erased

        # Profiles: self and contacts only.
        status, _, profile = http("GET", "/v2/users/2", token=ALICE)
        assert status == 200 and profile["id"] == 2 and profile["name"] == "Bob" and "avatarUrl" in profile and "lastConnectedAt" in profile, profile
        expect_error(http("GET", "/v2/users/3", token=ALICE), 403, "forbidden")
        expect_error(http("GET", "/v2/users/99", token=ALICE), 404, "not_found")
        status, _, listed = http("GET", "/v2/users?ids=1,2,3", token=ALICE)
        assert sorted(u["id"] for u in listed["users"]) == [1, 2], listed

        # An offline recipient gets a push record instead.
        status, _, to_carol = http("POST", "/v2/messages", token=ALICE, body={"requestId": 9, "toUserId": 3, "content": "Carol?"})
        assert status == 201, to_carol
        facts["carolMessageId"] = to_carol["message"]["messageId"]
        facts["lastMessageId"] = to_carol["message"]["messageId"]

    # A version-1 client is told, not half served: every /v1/ path, the socket too, is 410.
    for method, path in (("GET", "/v1/messages"), ("POST", "/v1/messages"), ("GET", "/v1/me"), ("GET", "/v1/health")):
        expect_error(http(method, path, token=ALICE, body={} if method == "POST" else None), 410, "version_unsupported")
    try:
        async with websockets.connect(f"ws://127.0.0.1:{PORT}/v1/socket/updates",
                                      extra_headers={"Authorization": f"Bearer {ALICE}"}):
            raise AssertionError("a version-1 socket was accepted")
    except websockets.exceptions.InvalidStatusCode as refused:
        assert refused.status_code == 410, refused.status_code

    # A socket upgrade without a good token is refused with 401.
    try:
        async with websockets.connect(WS, extra_headers={"Authorization": "Bearer wrong"}):
            raise AssertionError("the upgrade with a bad token was accepted")
    except websockets.exceptions.InvalidStatusCode as refused:
        assert refused.status_code == 401, refused.status_code
    print(json.dumps(facts))


asyncio.run(asyncio.wait_for(main(), 120))
