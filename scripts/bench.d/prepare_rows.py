#!/usr/bin/env python3
"""Turns a chatdb NDJSON history into rows.bin, the input of raw_insert.c (untimed).

  prepare_rows.py HISTORY.ndjson OWNER rows.bin

The rows are the ones `chatdb import` stores: users, and messages with
conversation_id = the other user and request_id only on the owner's messages.
Outbox requests (a few dozen) are left out. The record layout is described in
raw_insert.c.
"""
import json, struct, sys

src, owner, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
head = struct.Struct("<cqqqqq")  # 'm', id, from, to, conversation, request (-1 = NULL)
uhead = struct.Struct("<cq")      # 'u', id
length = struct.Struct("<i").pack
NULL = length(-1)

def text(s):
    if s is None:
        return NULL
    b = s.encode()
    return length(len(b)) + b

users = messages = 0
loads = json.loads
with open(src, "rb") as f, open(out, "wb", buffering=1 << 20) as raw:
    write = raw.write
    for line in f:
        r = loads(line)
        t = r["type"]
        if t == "message":
            messages += 1
            fr, to = r["fromUserId"], r["toUserId"]
            mine = fr == owner
            req = r.get("requestId") if mine else None
            write(head.pack(b"m", r["id"], fr, to, to if mine else fr, -1 if req is None else req)
                  + text(r["content"]) + text(r["status"]) + text(r["createdAt"]))
        elif t == "user":
            users += 1
            write(uhead.pack(b"u", r["id"]) + text(r["name"]) + text(r.get("avatarUrl"))
                  + text(r.get("lastConnectedAt")))
print(f"{users:,} users and {messages:,} messages")
