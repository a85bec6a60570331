"""Checks a running chat-relay's uploads (tus 1.0) and media downloads with outside
clients only: `tuspy` (PyPI) for a whole upload, http.client for everything a tus
client must not do, and urllib for downloads with Range.

usage: relay_uploads.py tus PORT TOKEN
       relay_uploads.py hostile PORT TOKEN OTHER_TOKEN MAX_MEDIA_SIZE
       relay_uploads.py attachments PORT TOKEN_ALICE TOKEN_BOB TOKEN_CAROL
TOKEN and OTHER_TOKEN are two users' tokens; Alice, Bob and Carol are users 1, 2 and 3. Prints one JSON object of facts for the
caller; any failed check raises (exit 1).
"""
import base64
import hashlib
import http.client
import json
import os
import socket
import sys
import urllib.error
import urllib.request

MODE, PORT, TOKEN = sys.argv[1], int(sys.argv[2]), sys.argv[3]
BASE = f"http://127.0.0.1:{PORT}"
TUS = {"Tus-Resumable": "1.0.0"}


def request(method, path, token=TOKEN, headers=None, body=b""):
    """One request on a new connection: (status, headers with lowercased names, body)."""
    connection = http.client.HTTPConnection("127.0.0.1", PORT, timeout=20)
    all_headers = dict(headers or {})
    if token:
        all_headers["Authorization"] = f"Bearer {token}"
    if method in ("POST", "PATCH"):
        all_headers.setdefault("Content-Length", str(len(body)))
    connection.request(method, path, body=body or None, headers=all_headers)
    response = connection.getresponse()
    data = response.read()
    connection.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, data


def expect_error(result, status, code):
    got, headers, data = result
    assert got == status, f"expected {status}, got {got}: {data[:200]}"
    body = json.loads(data)
    assert body["error"]["code"] == code, body
    assert body["error"]["message"], body
    return headers


def metadata(**values):
    return ",".join(f"{k} {base64.b64encode(v.encode()).decode()}" for k, v in values.items())


def create(content, token=TOKEN, sha=None, mime="application/octet-stream"):
    status, headers, data = request(
        "POST", "/v2/uploads", token,
        {**TUS, "Upload-Length": str(len(content)),
         "Upload-Metadata": metadata(sha256=sha or hashlib.sha256(content).hexdigest(), mime=mime)})
    assert status == 201, (status, data)
    assert headers["tus-resumable"] == "1.0.0" and headers["upload-offset"] == "0", headers
    assert headers["upload-expires"].endswith(" GMT"), headers
    return headers["location"]


def patch(location, offset, piece, token=TOKEN, checksum=None, content_type="application/offset+octet-stream"):
    headers = {**TUS, "Upload-Offset": str(offset), "Content-Type": content_type}
    if checksum is not None:
        headers["Upload-Checksum"] = "sha256 " + base64.b64encode(checksum).decode()
    return request("PATCH", location, token, headers, piece)


def offset(location, token=TOKEN):
    status, headers, _ = request("HEAD", location, token, TUS)
    assert status == 200, status
    assert headers["cache-control"] == "no-store", headers
    return int(headers["upload-offset"]), headers.get("chat-media-id")


def download(media, token=TOKEN, range_header=None):
    req = urllib.request.Request(f"{BASE}/v2/media/{media}", headers={"Authorization": f"Bearer {token}"})
    if range_header:
        req.add_header("Range", range_header)
    try:
        with urllib.request.urlopen(req, timeout=20) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as error:
        return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()


def tus():
    from tusclient import client

    content = os.urandom(3 * 1024 * 1024 + 12345)
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"upload-{os.getpid()}.bin")
    with open(path, "wb") as f:
        f.write(content)
    try:
        digest = hashlib.sha256(content).hexdigest()
        tus_client = client.TusClient(f"{BASE}/v2/uploads", headers={"Authorization": f"Bearer {TOKEN}"})
        uploader = tus_client.uploader(
            path, chunk_size=1024 * 1024, metadata={"sha256": digest, "filetype": "video/mp4"})
        uploader.upload()
        location = uploader.url.replace(BASE, "")
        held, media = offset(location)
        assert held == len(content) and media is not None, (held, media)
        status, headers, body = download(media)
        assert status == 200 and headers["content-type"] == "video/mp4", (status, headers)
        assert hashlib.sha256(body).hexdigest() == digest
        assert headers["etag"] == f'"{digest}"', headers
        status, headers, body = download(media, range_header="bytes=1048570-1048589")
        assert status == 206 and body == content[1048570:1048590], (status, headers)
        assert headers["content-range"] == f"bytes 1048570-1048589/{len(content)}", headers
        print(json.dumps({"media": int(media), "bytes": len(content), "chunks": 4}))
    finally:
        os.unlink(path)


def interrupted_patch(location, start, piece, send):
    """A PATCH that declares `piece` but sends only its first `send` bytes, then closes."""
    s = socket.create_connection(("127.0.0.1", PORT), timeout=20)
    head = (f"PATCH {location} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
            f"Tus-Resumable: 1.0.0\r\nUpload-Offset: {start}\r\n"
            f"Content-Type: application/offset+octet-stream\r\nContent-Length: {len(piece)}\r\n\r\n")
    s.sendall(head.encode() + piece[:send])
    s.shutdown(socket.SHUT_WR)
    s.settimeout(20)
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass
    s.close()


def hostile():
    other, max_size = sys.argv[4], int(sys.argv[5])
    facts = {}
    content = os.urandom(200_000)

    # Discovery needs no token; every other request needs one and Tus-Resumable.
    status, headers, _ = request("OPTIONS", "/v2/uploads", token=None)
    assert status == 204 and headers["tus-version"] == "1.0.0", (status, headers)
    assert "checksum" in headers["tus-extension"] and headers["tus-checksum-algorithm"] == "sha256", headers
    assert int(headers["tus-max-size"]) == max_size, headers
    expect_error(request("POST", "/v2/uploads", None, {**TUS, "Upload-Length": "1"}), 401, "unauthorized")
    headers = expect_error(request("POST", "/v2/uploads", TOKEN, {"Upload-Length": "1"}), 412, "tus_version")
    assert headers["tus-version"] == "1.0.0", headers

    # Creation: the length within the cap, the metadata well formed with a sha256.
    expect_error(request("POST", "/v2/uploads", TOKEN, {**TUS, "Upload-Length": str(max_size + 1),
                 "Upload-Metadata": metadata(sha256="0" * 64)}), 413, "too_large")
    expect_error(request("POST", "/v2/uploads", TOKEN, {**TUS, "Upload-Length": "-1"}), 400, "bad_request")
    expect_error(request("POST", "/v2/uploads", TOKEN, {**TUS, "Upload-Length": "10"}), 400, "bad_request")
    expect_error(request("POST", "/v2/uploads", TOKEN, {**TUS, "Upload-Length": "10",
                 "Upload-Metadata": "sha256 !!!"}), 400, "bad_request")
    expect_error(request("POST", "/v2/uploads", TOKEN, {**TUS, "Upload-Length": "10",
                 "Upload-Metadata": metadata(sha256="0" * 64, mime="not a type")}), 400, "bad_request")
    expect_error(request("POST", "/v2/uploads", TOKEN, {**TUS, "Upload-Defer-Length": "1",
                 "Upload-Metadata": metadata(sha256="0" * 64)}), 400, "bad_request")

    location = create(content, mime="image/jpeg")
    # Wrong type, wrong offsets, a piece past the length, a bad checksum header.
    expect_error(patch(location, 0, content[:10], content_type="application/octet-stream"), 415, "content_type")
    expect_error(patch(location, 5, content[:10]), 409, "offset_mismatch")
    expect_error(request("PATCH", location, TOKEN, {**TUS, "Content-Type": "application/offset+octet-stream"},
                         content[:10]), 400, "bad_request")
    expect_error(patch(location, 0, content + b"x"), 413, "too_large")
    expect_error(request("PATCH", location, TOKEN, {**TUS, "Upload-Offset": "0",
                 "Content-Type": "application/offset+octet-stream", "Upload-Checksum": "md5 AAAA"},
                 content[:10]), 400, "bad_request")
    assert offset(location) == (0, None)

    # A piece whose checksum does not match is dropped whole.
    status, headers, _ = patch(location, 0, content[:50_000], checksum=hashlib.sha256(content[:50_000]).digest())
    assert status == 204 and headers["upload-offset"] == "50000", (status, headers)
    expect_error(patch(location, 50_000, content[50_000:100_000], checksum=hashlib.sha256(b"other").digest()),
                 460, "checksum_mismatch")
    assert offset(location) == (50_000, None)

    # Overlapping the bytes already held is refused: the offset is the relay's.
    expect_error(patch(location, 40_000, content[40_000:60_000]), 409, "offset_mismatch")

    # Another user sees none of it.
    for method in ("HEAD", "DELETE"):
        got = request(method, location, other, TUS)
        assert got[0] == 404, got
    expect_error(patch(location, 50_000, content[50_000:60_000], token=other), 404, "not_found")

    # A PATCH cut off half-way keeps what arrived; the client resumes from there.
    interrupted_patch(location, 50_000, content[50_000:150_000], 30_000)
    held, _ = offset(location)
    assert held == 80_000, held
    facts["kept after an interrupted PATCH"] = held
    status, headers, _ = patch(location, held, content[held:])
    assert status == 204 and headers["upload-offset"] == str(len(content)), (status, headers)
    media = headers["chat-media-id"]
    assert offset(location) == (len(content), media)

    # The media: the uploader fetches it whole and in ranges, another user cannot.
    status, headers, body = download(media)
    assert status == 200 and body == content and headers["content-type"] == "image/jpeg", (status, headers)
    assert headers["accept-ranges"] == "bytes"
    for header, part in (("bytes=0-0", content[:1]), ("bytes=199990-", content[199_990:]),
                         ("bytes=-5", content[-5:]), ("bytes=100-999999", content[100:])):
        status, headers, body = download(media, range_header=header)
        assert status == 206 and body == part, (header, status, headers)
    status, headers, _ = download(media, range_header="bytes=200000-")
    assert status == 416 and headers["content-range"] == "bytes */200000", (status, headers)
    status, headers, body = download(media, range_header="bytes=0-1,5-6")
    assert status == 200 and body == content, status  # several ranges: served whole
    for token, path in ((other, f"/v2/media/{media}"), (TOKEN, "/v2/media/999999"), (TOKEN, "/v2/media/x")):
        got = request("GET", path, token)
        assert got[0] == 404, (path, got[0])

    # The same bytes uploaded again name the same media (content-addressed).
    again = create(content)
    status, headers, _ = patch(again, 0, content)
    assert status == 204 and headers["chat-media-id"] == media, headers

    # Bytes that do not hash to the declared sha256 are dropped at the last PATCH.
    liar = create(content, sha=hashlib.sha256(b"something else").hexdigest())
    expect_error(patch(liar, 0, content), 460, "checksum_mismatch")
    assert offset(liar) == (0, None)

    # An empty upload is complete at once.
    status, headers, _ = request("POST", "/v2/uploads", TOKEN, {**TUS, "Upload-Length": "0",
                                 "Upload-Metadata": metadata(sha256=hashlib.sha256(b"").hexdigest())})
    assert status == 201 and "chat-media-id" in headers, (status, headers)

    # Termination: the upload is gone; a new one goes on working.
    status, headers, _ = request("DELETE", liar, TOKEN, TUS)
    assert status == 204 and headers["tus-resumable"] == "1.0.0", status
    assert request("HEAD", liar, TOKEN, TUS)[0] == 404
    assert request("DELETE", liar, TOKEN, TUS)[0] == 404
    facts["media"] = int(media)
    print(json.dumps(facts))


def post_message(token, body):
    status, _, data = request("POST", "/v2/messages", token, {"Content-Type": "application/json"},
                              json.dumps(body).encode())
    return status, json.loads(data)


def log(token):
    status, _, data = request("GET", "/v2/messages?lastSyncedMessage=0&limit=100", token)
    assert status == 200, (status, data)
    return json.loads(data)["messages"]


def attachments():
    bob, carol = sys.argv[4], sys.argv[5]
    photo = os.urandom(50_000)
    location = create(photo, mime="image/jpeg")
    status, headers, _ = patch(location, 0, photo)
    media = int(headers["chat-media-id"])
    thumbnail = base64.b64encode(os.urandom(1000)).decode()
    sha = hashlib.sha256(photo).hexdigest()

    # A photo without a caption, from Alice to Bob: the relay adds mime, size and sha256.
    status, answer = post_message(TOKEN, {"requestId": 1, "toUserId": 2, "content": "", "attachments": [
        {"mediaId": media, "width": 4000, "height": 3000, "thumbnail": thumbnail}]})
    assert status == 201, answer
    sent = answer["message"]
    assert sent["attachments"] == [{"height": 3000, "mediaId": media, "mime": "image/jpeg", "sha256": sha,
                                    "size": 50_000, "thumbnail": thumbnail, "width": 4000}], sent
    # A retry replays it; the same request id with other attachments is a conflict.
    status, again = post_message(TOKEN, {"requestId": 1, "toUserId": 2, "content": "", "attachments": [
        {"mediaId": media, "width": 4000, "height": 3000, "thumbnail": thumbnail}]})
    assert status == 201 and again["message"]["messageId"] == sent["messageId"], again
    status, body = post_message(TOKEN, {"requestId": 1, "toUserId": 2, "content": ""})
    assert status == 400, body  # no text and nothing attached
    status, body = post_message(TOKEN, {"requestId": 1, "toUserId": 2, "content": "x"})
    assert status == 409 and body["error"]["code"] == "conflict", body

    # Bob's log carries it; Bob may fetch the media now, Carol may not.
    received = [m for m in log(bob) if m["messageId"] == sent["messageId"]]
    assert received and received[0]["attachments"] == sent["attachments"], received
    status, _, body = download(media, token=bob)
    assert status == 200 and body == photo, status
    assert download(media, token=carol)[0] == 404

    # Nobody attaches a media they may not fetch: Carol cannot send Alice's photo on.
    status, body = post_message(carol, {"requestId": 1, "toUserId": 1, "content": "look", "attachments": [
        {"mediaId": media}]})
    assert status == 404 and "mediaId" in body["error"]["message"], body
    # Bob may forward what he received.
    status, body = post_message(bob, {"requestId": 1, "toUserId": 3, "content": "fwd", "attachments": [
        {"mediaId": media}]})
    assert status == 201, body
    assert download(media, token=carol)[0] == 200

    # Bad attachments: too many, a thumbnail too large or not base64, negative sizes.
    for bad in ([{"mediaId": media}] * 11, [{"mediaId": media, "thumbnail": base64.b64encode(b"x" * 20_481).decode()}],
                [{"mediaId": media, "thumbnail": "***"}], [{"mediaId": media, "width": -1}],
                [{"mediaId": "one"}]):
        status, body = post_message(TOKEN, {"requestId": 2, "toUserId": 2, "content": "bad", "attachments": bad})
        assert status == 400, (status, body)

    # Deleted for everyone: the attachment goes with the text.
    status, _, data = request("POST", f"/v2/messages/{sent['messageId']}/delete", TOKEN,
                              {"Content-Type": "application/json"}, json.dumps({"requestId": 3}).encode())
    assert status == 200, data
    tomb = [m for m in log(bob) if m["messageId"] == sent["messageId"]][0]
    assert "attachments" not in tomb and tomb["content"] == "", tomb
    print(json.dumps({"media": media, "message": sent["messageId"]}))


{"tus": tus, "hostile": hostile, "attachments": attachments}[MODE]()
