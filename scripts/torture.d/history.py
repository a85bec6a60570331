#!/usr/bin/env python3
"""A history checker for chat-sync and chat-relay under faults (issue 14's torture suite).

  history.py --bin DIR --work DIR --seed N [--long] [--users K] [--messages M] [--devices D]
  history.py --self-test

K users (short: 4, --long: 10), each with several devices (--devices: N for every user
or a list cycled over the users; default 1,2,3,2, so 8 devices in the short mode and 19
in the long one). Every device has its own token (the first one `chat-relay user
add`'s, the others `device add`'s), its own data folder (`user<u>-device<d>`, its own
`chats-<u>.db` and outbox) and its own `chat-sync run` against a real `chat-relay
serve` started with `--faults`, through a loopback proxy of this script's own that
answers some catch-up requests (`GET /v2/messages`) and WebSocket upgrades with a 503
or drops them. Each user queues M messages (short: 20, --long: 200) with `chat-sync
send` on a random one of its devices to random others (unique contents
`h<seed>-u<from>-n<k>`), some while a `run` of the recipient is down, and runs
`chat-sync read --with` on a random device at random moments; it also edits a few of its
sent messages (`chat-sync edit`, every edit of one message from one device of the user, so
the relay numbers them in queue order; the text is the sent content, " /e" and the edit's
number) and deletes some for everyone (`chat-sync delete --for-everyone`, from any device
of the user that holds it). Meanwhile the relay and
the devices' runs are killed (SIGKILL or SIGTERM) and restarted, and another process
holds relay.db's write lock, every other time for 1 to 5 s, else for 10.5 to 13 s (the
relay's busy timeout is 5 s, and it serves one call at a time), with a run restarted
meanwhile so that it upgrades its socket while the lock is held. A sampler reads every
device's file read-only about once a second.

Then the faults stop (relay restarted without them, proxy faults and lock holder off),
the outboxes empty, every user reads every conversation on ONE of its devices (seeded)
until every device of every user has every message it sent or received, READ (the
other devices must follow through `conversation_read`), or nothing changes for 50 s
(at most 120 s; --long 300 s);
the runs stop with SIGTERM, and the checks run, all pure functions over what was
collected (`check_final`, `check_history`, `check_processes`), on every device:
  lost (a message the user sent from any device or received, missing from one of its
  devices), duplicated (in one device's file), misplaced (on a device of a third
  user), id_mismatch (the same content under different ids on the devices of the two
  users), misattributed (from/to not the queuing user and its recipient, or content
  nobody sent), reordered (on a device of the sender or of the recipient, the id order
  of one sending device's messages to one recipient is not that device's queue order;
  two devices of a user have no order between them), status_backwards and vanished
  (per device, in the samples), premature_delivered / premature_read (a device of the
  sender shows DELIVERED/READ while no device of the recipient had the message / had
  read it at or before its next sample), not_read_at_end and outbox_left (per device),
  relay_left (undelivered RelayMessages rows), edit_lost / edit_duplicated (on a device of
  either party an edited message does not show its last edit at version = the edits made),
  delete_lost (a message deleted for everyone is not a tombstone there), text_left (a
  deleted message's text, as sent or edited, in the bytes of any file, its -wal or
  relay.db), attachment_lost (every fourth message is sent with `--attach` of a file of
  its own: on a device of either party it lacks that attachment, names another file,
  or a message deleted for everyone still has it), check_failed (`chatdb check --full`,
  `PRAGMA integrity_check`, per file), client_exit / relay_exit (a device's `run` or
  the relay that exited without being told to, or a non-zero exit on SIGTERM).
Prints one summary line and the counts per kind; each anomaly (the first few of each
kind) on stderr. Exits 1 on any anomaly. `--self-test` plants every kind in synthetic
data with users of two devices and one (a message missing from a user's second device
only, a status seen on the sender's other device, ...) and exits 0 only when the same
checks catch each one and the clean data reports nothing.
"""
import argparse, hashlib, os, random, re, shutil, signal, socket, sqlite3, subprocess, sys, threading, time

RANK = {"SYNCED": 0, "DELIVERED": 1, "READ": 2}
NAME = {-1: "absent", 0: "SYNCED", 1: "DELIVERED", 2: "READ"}
KINDS = ["lost", "duplicated", "misplaced", "id_mismatch", "misattributed", "reordered", "status_backwards", "vanished",
         "edit_lost", "edit_duplicated", "delete_lost", "text_left", "attachment_lost",
         "premature_delivered", "premature_read", "not_read_at_end", "outbox_left", "relay_left", "check_failed",
         "client_exit", "relay_exit"]
MESSAGES_SQL = "SELECT id, from_user_id, to_user_id, content, status, deleted_at FROM Messages ORDER BY id"
# The outbox: new messages, and edits and deletes waiting to be sent (to: the message they change).
OUTBOX_SQL = ("SELECT request_id, to_user_id, content, status FROM MessageRequests UNION ALL "
              "SELECT request_id, message_id, coalesce(content, 'delete for everyone'), status FROM MessageChanges ORDER BY 1")
ATTACHMENTS_SQL = ("SELECT a.message_id, m.sha256 FROM Attachments a JOIN Media m ON m.id = a.media_id "
                   "ORDER BY a.message_id, a.position")
CHANGES_SQL = "SELECT id, version, content, deleted_at IS NOT NULL FROM Messages WHERE version > 0 OR deleted_at IS NOT NULL"
EDIT_MARK = " /e"  # an edit's text is the sent content, this mark and the edit's number
# id -> the content it was sent with, for messages the driver deletes for everyone: their
# tombstones hold no text, and the checks know a message by the content it was sent with.
TOMBSTONES = {}
RELAY_BUSY_TIMEOUT = 5.0  # Database.defaultBusyTimeout, used by RelayStore
DEFAULT_DEVICES = "1,2,3,2"  # devices per user, cycled over the users


def new_anomalies():
    return {k: [] for k in KINDS}


# --- Devices: a device is (user id, device number from 1); a file is a device's ----------


def dev(key):
    """How a device is named in the anomalies."""
    return f"user {key[0]}'s device {key[1]}"


def devices_by_user(keys):
    """{user: [its device keys, sorted]} of device keys (u, d)."""
    out = {}
    for k in sorted(keys):
        out.setdefault(k[0], []).append(k)
    return out


# --- The history of samples (compact: per file, per message, the status changes) -----


class History:
    """Rounds of samples. rounds[r] = (start, end) times; files[device] = {"sampled": [r…],
    "changes": {id: [(r, rank)…]} (rank -1: absent), "meta": {id: (from, to, content)},
    "state": {id: rank} (the last sample)}; a device is (user, device number)."""

    def __init__(self, devices):
        self.rounds = []
        self.files = {k: {"sampled": [], "changes": {}, "meta": {}, "state": {}} for k in devices}

    def begin(self):
        self.rounds.append([time.monotonic(), None])
        return len(self.rounds) - 1

    def end(self, r):
        self.rounds[r][1] = time.monotonic()

    def record(self, r, key, snapshot):
        """snapshot: {id: (from, to, content, status)} of one device's file at round r, or None (unreadable)."""
        if snapshot is None:
            return
        f = self.files[key]
        f["sampled"].append(r)
        state, changes = f["state"], f["changes"]
        for mid, (frm, to, content, status) in snapshot.items():
            rank = RANK.get(status, 99)
            f["meta"].setdefault(mid, (frm, to, content))
            if state.get(mid, -1) != rank:
                changes.setdefault(mid, []).append((r, rank))
                state[mid] = rank
        for mid in [m for m in state if m not in snapshot and state[m] != -1]:
            changes[mid].append((r, -1))
            state[mid] = -1


def rank_at(changes, r):
    """A message's rank in a file at round r (-1 when absent), from its change list."""
    rank = -1
    for cr, crank in changes or ():
        if cr > r:
            break
        rank = crank
    return rank


def next_sampled(sampled, r):
    for s in sampled:  # sorted; short enough to scan
        if s > r:
            return s
    return None


def recipient_lacks(h, rdevs, by_content, mid, content, r, want):
    """Whether no device of the recipient (rdevs) had the message at rank `want` or above
    at or before its first sample after round r: None when one had it, or when a device
    has no sample after r (no verdict); else [(device, that sample, its rank there)]."""
    seen = []
    for rk in rdevs:
        rf = h.files[rk]
        later = next_sampled(rf["sampled"], r)
        if later is None:
            return None
        rid = mid if mid in rf["meta"] else by_content[rk].get(content, mid)
        changes = rf["changes"].get(rid, ())
        if any(cr <= later and crank >= want for cr, crank in changes):
            return None
        seen.append((rk, later, rank_at(changes, later)))
    return seen


def check_history(h, anomalies):
    """status_backwards, vanished (per device), premature_delivered, premature_read (a
    device of the sender against every device of the recipient) over the samples."""
    for key, f in h.files.items():
        for mid, changes in f["changes"].items():
            last = None
            for r, rank in changes:
                if rank == -1:
                    anomalies["vanished"].append(f"{dev(key)}'s file: message {mid} {f['meta'][mid]} gone in round {r}")
                    break
                if last is not None and rank < last:
                    anomalies["status_backwards"].append(
                        f"{dev(key)}'s file: message {mid} went {NAME[last]} -> {NAME[rank]} in round {r}")
                    break
                last = rank
    devs = devices_by_user(h.files)
    by_content = {k: {meta[2]: mid for mid, meta in f["meta"].items()} for k, f in h.files.items()}

    def where(seen):
        return ", ".join(f"{NAME.get(rank, rank)} on {dev(rk)} in round {later}" for rk, later, rank in seen)

    for key, f in h.files.items():
        s = key[0]
        for mid, changes in f["changes"].items():
            frm, to, content = f["meta"][mid]
            if frm != s or to not in devs:
                continue
            first_delivered = next(((r, k) for r, k in changes if k >= 1), None)
            first_read = next((r for r, k in changes if k == 2), None)
            if first_delivered and first_delivered[1] == 1:
                r = first_delivered[0]
                seen = recipient_lacks(h, devs[to], by_content, mid, content, r, 0)
                if seen:
                    anomalies["premature_delivered"].append(
                        f"message {mid} ({content}, {frm}->{to}): DELIVERED on {dev(key)} in round {r}, "
                        f"on no device of the recipient at their next sample ({where(seen)})")
            if first_read is not None:
                seen = recipient_lacks(h, devs[to], by_content, mid, content, first_read, 2)
                if seen:
                    anomalies["premature_read"].append(
                        f"message {mid} ({content}, {frm}->{to}): READ on {dev(key)} in round {first_read}, "
                        f"read on no device of the recipient at their next sample ({where(seen)})")


# --- The end state ------------------------------------------------------------------


def check_final(sent, maybe, final, relay_left, failed_checks, anomalies):
    """sent: [(content, from, to, device number)] in queue order per sending device; maybe:
    contents whose send failed (they may or may not exist); final: {(user, device):
    {"messages": [(id, from, to, content, status)], "outbox": [(request_id, to, content,
    status)]}}; relay_left: undelivered RelayMessages rows; failed_checks: ["what failed"].
    Every device of the sender and of the recipient must hold each message once."""
    devs = devices_by_user(final)
    index = {k: {} for k in final}
    for k, f in final.items():
        for row in f["messages"]:
            index[k].setdefault(row[3], []).append(row)
    expected = {c: (s, r) for c, s, r, _ in sent}
    order = {}
    for c, s, r, d in sent:
        what = f"{c} ({s}->{r}, queued on {dev((s, d))})"
        ids = {}
        for u in dict.fromkeys((s, r)):
            who = "sender" if u == s else "recipient"
            if not devs.get(u):
                anomalies["lost"].append(f"{what}: the {who} (user {u}) has no device file")
            for k in devs.get(u, []):
                rows = index[k].get(c, [])
                if not rows:
                    anomalies["lost"].append(f"{what}: not in the {who}'s {dev(k)}'s file")
                elif len(rows) > 1:
                    anomalies["duplicated"].append(f"{what}: {len(rows)} times in the {who}'s {dev(k)}'s file, ids {[x[0] for x in rows]}")
                else:
                    ids[k] = rows[0][0]
                for row in rows:
                    if (row[1], row[2]) != (s, r):
                        anomalies["misattributed"].append(
                            f"{c}: queued by user {s} to {r}, stored on {dev(k)} as message {row[0]} from {row[1]} to {row[2]}")
        if len(set(ids.values())) > 1:
            anomalies["id_mismatch"].append(f"{what}: ids differ: " + ", ".join(f"{i} on {dev(k)}" for k, i in sorted(ids.items())))
        for k in final:
            if k[0] not in (s, r) and c in index[k]:
                anomalies["misplaced"].append(f"{what}: also on {dev(k)}, ids {[x[0] for x in index[k][c]]}")
        order.setdefault((s, d, r), []).append(c)
    for u_k, f in final.items():
        for row in f["messages"]:
            if row[3] not in expected and row[3] not in maybe:
                anomalies["misattributed"].append(f"{dev(u_k)}'s file: message {row[0]} from {row[1]} to {row[2]} ({row[3]!r}) was never sent")
            elif row[4] != "READ" and row[3] in expected:
                anomalies["not_read_at_end"].append(f"{dev(u_k)}'s file: message {row[0]} ({row[3]}, {row[1]}->{row[2]}) is {row[4]}")
        for row in f["outbox"]:
            anomalies["outbox_left"].append(f"{dev(u_k)}'s outbox: request {row[0]} to {row[1]} ({row[2]}) is {row[3]}")
    # One sending device's messages to one recipient keep that device's queue order, on
    # every device of both users; two devices of a user have no order between them.
    for (s, d, r), seq in order.items():
        for k in devs.get(s, []) + (devs.get(r, []) if r != s else []):
            have = [(c, index[k][c][0][0]) for c in seq if len(index[k].get(c, [])) == 1]
            for (c1, i1), (c2, i2) in zip(have, have[1:]):
                if i2 <= i1:
                    anomalies["reordered"].append(
                        f"{dev((s, d))} -> user {r}: {c1} queued before {c2}, but ids {i1} >= {i2} in {dev(k)}'s file")
    for row in relay_left:
        anomalies["relay_left"].append(f"relay.db: undelivered RelayMessages row {row}")
    for text in failed_checks:
        anomalies["check_failed"].append(text)


def check_processes(events, anomalies):
    """events: [(kind, text)] recorded while running: a process that ended untold."""
    for kind, text in events:
        anomalies[kind].append(text)


def report(anomalies, limit=5):
    for k in KINDS:
        for text in anomalies[k][:limit]:
            print(f"   {k}: {text}", file=sys.stderr)
        if len(anomalies[k]) > limit:
            print(f"   {k}: … and {len(anomalies[k]) - limit} more", file=sys.stderr)
    return " ".join(f"{k}={len(anomalies[k])}" for k in KINDS)


# --- Self-test: every kind planted, every kind caught ----------------------------------


def self_test():
    # Users 1 and 2 have two devices each, user 3 one. User 1's device 2 queues "e" after
    # its device 1 queued "a" and "b", and the relay gives "e" the smallest id: two
    # devices have no order between them, so the clean history must stay clean.
    keys = [(1, 1), (1, 2), (2, 1), (2, 2), (3, 1)]
    devs = devices_by_user(keys)
    sent = [("a", 1, 2, 1), ("b", 1, 2, 1), ("c", 2, 1, 2), ("d", 3, 1, 1), ("e", 1, 2, 2), ("f", 1, 2, 1)]
    ids = {"a": 101, "b": 102, "c": 103, "d": 104, "e": 100, "f": 106}

    def good_final():
        msgs = {k: [] for k in keys}
        for c, s, r, _ in sent:
            for k in devs[s] + devs[r]:
                msgs[k].append((ids[c], s, r, c, "READ"))
        return {k: {"messages": sorted(msgs[k]), "outbox": []} for k in keys}

    def snapshots_of(final_state):
        return {k: {row[0]: row[1:] for row in f["messages"]} for k, f in final_state.items()}

    def good_rounds():
        """Six rounds, per message: 0 queued; 1 stored SYNCED on the sending device; 2 on
        the recipient's last device DELIVERED; 3 on every device of the sender DELIVERED,
        read on the recipient's last device; 4 READ on the sender's devices, while the
        recipient's other devices still lack it; 5 those have it (DELIVERED). So one
        device of the recipient having it (having read it) suffices."""
        rounds = []
        for stage in range(6):
            snap = {k: {} for k in keys}
            for c, s, r, d in sent:
                row = lambda status: (s, r, c, status)
                for k in devs[s]:
                    if k == (s, d) and stage in (1, 2):
                        snap[k][ids[c]] = row("SYNCED")
                    elif stage >= 3:
                        snap[k][ids[c]] = row("DELIVERED" if stage == 3 else "READ")
                last = devs[r][-1]
                for k in devs[r]:
                    if k == last and stage >= 2:
                        snap[k][ids[c]] = row("DELIVERED" if stage == 2 else "READ")
                    elif k != last and stage >= 5:
                        snap[k][ids[c]] = row("DELIVERED")
            rounds.append(snap)
        return rounds

    def run(final=None, rounds=None, relay_left=(), failed=(), events=(), maybe=(), changes=None, attachments=None):
        """changes: (edits, deleted, {device: read_changes}, file_bytes) for check_changes."""
        final = final or good_final()
        rounds = rounds or good_rounds()
        h = History(keys)
        for snap in rounds + [snapshots_of(final)]:
            r = h.begin()
            for k in keys:
                h.record(r, k, snap.get(k))
            h.end(r)
        a = new_anomalies()
        check_final(sent, set(maybe), final, list(relay_left), list(failed), a)
        check_history(h, a)
        check_processes(list(events), a)
        edits, deleted, changed, file_bytes = changes or ({}, {}, {}, {})
        check_changes(edits, deleted, final, changed, file_bytes, a)
        # c (103, 2->1) was sent with a file; every device of users 1 and 2 has it.
        photo = "ab" * 32
        check_attachments({"c": photo}, deleted, final,
                          attachments if attachments is not None else {k: {103: [photo]} for k in keys if k[0] in (1, 2)}, a)
        return a

    # Edits and deletes: a (101, 1->2) edited twice, b (102, 1->2) deleted for everyone.
    def change_data(fn=None):
        edits, deleted = {"a": ["a /e1", "a /e2"]}, {"b": 102}
        changes = {k: {101: (2, "a /e2", False), 102: (0, "", True)} for k in keys if k[0] in (1, 2)}
        file_bytes = {"relay.db": b"", **{dev(k): b"" for k in keys}}
        data = [edits, deleted, changes, file_bytes]
        if fn:
            fn(data)
        edits, deleted, changes, file_bytes = data
        return (edits, deleted, changes, file_bytes)

    def plant(fn):
        f = good_final()
        fn(f)
        return f

    def rounds_with(fn):
        rs = good_rounds()
        fn(rs)
        return rs

    def drop(f, k, c):
        f[k]["messages"] = [m for m in f[k]["messages"] if m[3] != c]

    def swap_ids(f, k, c1, c2):
        m = {row[3]: row for row in f[k]["messages"]}
        a, b = m[c1], m[c2]
        f[k]["messages"] = sorted([row for row in f[k]["messages"] if row[3] not in (c1, c2)]
                                  + [(b[0],) + a[1:], (a[0],) + b[1:]])

    def set_id(f, k, c, new):
        f[k]["messages"] = sorted([(new,) + row[1:] if row[3] == c else row for row in f[k]["messages"]])

    def set_status(snap, k, mid, status):
        snap[k][mid] = snap[k][mid][:3] + (status,)

    def each(f, fn):
        for k in keys:
            fn(f, k)

    # (kind, what is planted, anomalies)
    cases = [
        ("lost", "a missing from the recipient's second device only", run(final=plant(lambda f: drop(f, (2, 2), "a")))),
        ("lost", "e (queued on user 1's device 2) missing from user 1's device 1 only",
         run(final=plant(lambda f: drop(f, (1, 1), "e")))),
        ("lost", "d missing from its sender, a user with one device", run(final=plant(lambda f: drop(f, (3, 1), "d")))),
        ("duplicated", "a twice on the recipient's second device", run(final=plant(lambda f: f[(2, 2)]["messages"].append((999, 1, 2, "a", "READ"))))),
        ("misplaced", "a on a third user's device", run(final=plant(lambda f: f[(3, 1)]["messages"].append((101, 1, 2, "a", "READ"))))),
        ("id_mismatch", "f under another id on the sender's other device",
         run(final=plant(lambda f: set_id(f, (1, 2), "f", 998)))),
        ("id_mismatch", "e under another id on both devices of the recipient (the sender's devices agree)",
         run(final=plant(lambda f: (set_id(f, (2, 1), "e", 997), set_id(f, (2, 2), "e", 997))))),
        ("misattributed", "d stored as from user 2 on user 1's second device",
         run(final=plant(lambda f: set_attr(f, (1, 2), "d", 2, 1)))),
        ("misattributed", "a message nobody sent on user 2's second device",
         run(final=plant(lambda f: f[(2, 2)]["messages"].append((996, 1, 2, "zz", "READ"))))),
        ("reordered", "a and b of user 1's device 1 in swapped order on every device",
         run(final=plant(lambda f: each(f, lambda f, k: swap_ids(f, k, "a", "b") if k[0] in (1, 2) else None)))),
        ("status_backwards", "a READ -> SYNCED on the recipient's second device", run(rounds=rounds_with(lambda rs: set_status(rs[5], (2, 2), 101, "SYNCED")))),
        ("vanished", "b gone from the recipient's second device for a round", run(rounds=rounds_with(lambda rs: rs[4][(2, 2)].pop(102)))),
        ("premature_delivered", "f DELIVERED on the sender's second device before any device of the recipient has it",
         run(rounds=rounds_with(lambda rs: (rs[1][(1, 2)].__setitem__(106, (1, 2, "f", "DELIVERED")),
                                            rs[2][(1, 2)].__setitem__(106, (1, 2, "f", "DELIVERED")), rs[2][(2, 2)].pop(106))))),
        ("premature_read", "a READ on the sender's second device while the recipient's devices have it unread",
         run(rounds=rounds_with(lambda rs: (rs[2][(1, 2)].__setitem__(101, (1, 2, "a", "READ")),
                                            rs[3][(1, 2)].__setitem__(101, (1, 2, "a", "READ")), set_status(rs[3], (2, 2), 101, "DELIVERED"))))),
        ("not_read_at_end", "a DELIVERED on the recipient's device 1 (the other device read it)",
         run(final=plant(lambda f: f[(2, 1)]["messages"].__setitem__(1, f[(2, 1)]["messages"][1][:4] + ("DELIVERED",))))),
        ("outbox_left", "a request left on user 1's second device", run(final=plant(lambda f: f[(1, 2)]["outbox"].append((7, 2, "g", "FAILED"))))),
        ("relay_left", "an undelivered relay row", run(relay_left=[(105, 1, 2)])),
        ("edit_lost", "a shows its first edit on the recipient's second device",
         run(changes=change_data(lambda d: d[2][(2, 2)].__setitem__(101, (1, "a /e1", False))))),
        ("edit_duplicated", "a at version 3 after two edits on the sender's first device",
         run(changes=change_data(lambda d: d[2][(1, 1)].__setitem__(101, (3, "a /e2", False))))),
        ("delete_lost", "b not a tombstone on the recipient's first device",
         run(changes=change_data(lambda d: d[2][(2, 1)].pop(102)))),
        ("text_left", "b's text in the bytes of relay.db",
         run(changes=change_data(lambda d: d[3].__setitem__("relay.db", b"xx b xx")))),
        ("attachment_lost", "c's file missing on the sender's first device",
         run(attachments={k: ({} if k == (2, 1) else {103: ["ab" * 32]}) for k in keys if k[0] in (1, 2)})),
        ("attachment_lost", "another file on d (sent without one) on the recipient's first device",
         run(attachments={k: ({103: ["ab" * 32], 104: ["cd" * 32]} if k == (1, 1) else {103: ["ab" * 32]})
                          for k in keys if k[0] in (1, 2)})),
        ("check_failed", "a failed check", run(failed=["chatdb check --full of user 2's device 2's file exited 4"])),
        ("client_exit", "a run that exited", run(events=[("client_exit", "chat-sync run on user 2's device 2 exited 77")])),
        ("relay_exit", "the relay that exited", run(events=[("relay_exit", "chat-relay serve exited 70")])),
    ]
    baseline = run()
    clean_changes = run(changes=change_data())
    if any(clean_changes.values()):
        baseline = clean_changes
    ok = True
    if any(baseline.values()):
        ok = False
        print(f"   self-test: the clean history reports {report(baseline)}", file=sys.stderr)
    else:
        print("   self-test: the clean history (two devices of a user interleaved, one device of the recipient "
              "having a message first) reports nothing")
    for kind in KINDS:
        if not any(k == kind for k, _, _ in cases):
            ok = False
            print(f"   self-test: {kind:20s} NOT PLANTED")
    for kind, what, got in cases:
        caught = len(got[kind]) > 0
        also = [k for k in KINDS if k != kind and got[k]]
        print(f"   self-test: {kind:20s} {'caught' if caught else 'MISSED'} ({what}): {got[kind][0] if caught else ''}"
              + (f" (also: {', '.join(also)})" if also else ""))
        ok &= caught
    # A message missing from the recipient while the sender shows it READ (bug 1's shape).
    both = run(final=plant(lambda f: (drop(f, (2, 1), "f"), drop(f, (2, 2), "f"))),
               rounds=rounds_with(lambda rs: [snap[k].pop(106, None) for snap in rs for k in devs[2]]))
    shape = bool(both["lost"]) and bool(both["premature_read"])
    print(f"   self-test: lost while READ at the sender: {'caught' if shape else 'MISSED'} (lost={len(both['lost'])}, premature_read={len(both['premature_read'])})")
    print(f"== History self-test: {'every planted anomaly caught' if ok and shape else 'FAILED'}")
    return 0 if ok and shape else 1


def set_attr(f, k, c, frm, to):
    f[k]["messages"] = [row[:1] + (frm, to) + row[3:] if row[3] == c else row for row in f[k]["messages"]]


# --- The loopback proxy ---------------------------------------------------------------


class Proxy:
    """Between the clients and the relay: parses requests (keep-alive, Content-Length,
    never pipelined), answers some `GET /v2/messages` and socket upgrades itself with a 503
    (Connection: close) or drops them; after an upgrade, pipes bytes both ways."""

    BODY_503 = b'{"error":{"code":"unavailable","message":"proxy fault"}}'

    def __init__(self, upstream_port, seed, sync_503, sync_drop, ws_503, ws_drop):
        self.upstream_port = upstream_port
        self.rng, self.rng_lock = random.Random(seed), threading.Lock()
        self.p = {"sync": (sync_503, sync_drop), "ws": (ws_503, ws_drop)}
        self.faults_on = True
        self.counts = {"sync 503": 0, "sync drop": 0, "upgrade 503": 0, "upgrade drop": 0}
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(256)
        self.port = self.listener.getsockname()[1]
        self.closed = False
        self.socks, self.socks_lock = set(), threading.Lock()
        threading.Thread(target=self.accept_loop, daemon=True).start()

    def close(self):
        self.closed = True
        try:
            self.listener.close()
        except OSError:
            pass
        with self.socks_lock:
            for s in list(self.socks):
                self.kill(s)

    def kill(self, s):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            s.close()
        except OSError:
            pass
        with self.socks_lock:
            self.socks.discard(s)

    def accept_loop(self):
        while not self.closed:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(c,), daemon=True).start()

    def decide(self, which):
        if not self.faults_on:
            return None
        p503, pdrop = self.p[which]
        with self.rng_lock:
            x = self.rng.random()
        return "503" if x < p503 else "drop" if x < p503 + pdrop else None

    def pump(self, src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        self.kill(src)
        self.kill(dst)

    def handle(self, c):
        try:
            u = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=2)
            u.settimeout(None)
        except OSError:
            c.close()
            return
        with self.socks_lock:
            self.socks.update((c, u))
        threading.Thread(target=self.pump, args=(u, c), daemon=True).start()
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    data = c.recv(65536)
                    if not data:
                        raise EOFError
                    buf += data
                    if len(buf) > 65536:  # not a request head this proxy understands: pipe it
                        u.sendall(buf)
                        return self.pump(c, u)
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, target = (lines[0].split(" ") + ["", ""])[:2]
                headers = {}
                for line in lines[1:]:
                    k, _, v = line.partition(":")
                    headers[k.strip().lower()] = v.strip()
                path = target.split("?")[0]
                upgrade = "websocket" in headers.get("upgrade", "").lower()
                which = "ws" if upgrade and path == "/v2/socket/updates" else "sync" if method == "GET" and path == "/v2/messages" else None
                fault = self.decide(which) if which else None
                if fault:
                    label = ("upgrade " if which == "ws" else "sync ") + fault
                    self.counts[label] += 1
                    if fault == "503":
                        c.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: "
                                  + str(len(self.BODY_503)).encode() + b"\r\nConnection: close\r\n\r\n" + self.BODY_503)
                    raise EOFError
                u.sendall(head + b"\r\n\r\n")
                if "transfer-encoding" in headers or upgrade:
                    u.sendall(buf)
                    return self.pump(c, u)
                need = int(headers.get("content-length", "0") or 0)
                while need > 0:
                    if not buf:
                        buf = c.recv(65536)
                        if not buf:
                            raise EOFError
                    part, buf = buf[:need], buf[need:]
                    u.sendall(part)
                    need -= len(part)
        except (EOFError, OSError, ValueError):
            pass
        self.kill(c)
        self.kill(u)


# --- The run --------------------------------------------------------------------------


class Proc:
    """A background process with its log: start, kill (SIGKILL or SIGTERM), exit status."""

    def __init__(self, label, argv, env, work):
        self.label, self.argv, self.env, self.work = label, argv, env, work
        self.proc, self.starts, self.expected_down, self.log = None, 0, True, None

    def start(self):
        self.starts += 1
        self.log = os.path.join(self.work, f"{self.label}-{self.starts}.log")
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(self.argv, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                         env={**os.environ, **self.env}, start_new_session=True)
        self.expected_down = False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=20):
        """Stops it (expected); returns the exit status."""
        self.expected_down = True
        if not self.alive():
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return f"{self.proc.returncode} (no exit within {timeout} s of {signal.Signals(sig).name}; killed)"

    def tail(self, n=2):
        """Its last lines, or the last line saying why it stopped."""
        try:
            lines = [l.strip() for l in open(self.log, errors="replace").read().splitlines()]
        except OSError:
            return ""
        why = [l for l in lines if "Error:" in l or "stopped:" in l]
        return why[-1] if why else " | ".join(lines[-n:])


def identity(mid, content, deleted):
    """The content a message was sent with: an edit's text starts with it; a tombstone's is known by id."""
    return TOMBSTONES.get(mid, content) if deleted else content.split(EDIT_MARK)[0]


def read_changes(db):
    """{id: (version, content, deleted)} of a client file's edited and deleted messages, read-only."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return {m[0]: m[1:] for m in con.execute(CHANGES_SQL).fetchall()}
        finally:
            con.close()
    except sqlite3.Error:
        return None


def check_changes(edits, deleted, final, changes, file_bytes, anomalies):
    """edits: {content: [edit texts, in queue order]} (all from one device of the sender);
    deleted: {content: id} deleted for everyone; final as check_final's; changes: {device:
    read_changes}; file_bytes: {name: bytes of a file and its -wal}. On every device of both
    parties an edited message shows its last edit as version len(edits) (fewer: edit_lost,
    more: edit_duplicated); a deleted one is a tombstone (delete_lost); no text of a deleted
    message (as sent or edited) is in any file's bytes (text_left)."""
    devs = devices_by_user(final)
    for c, texts in edits.items():
        if c in deleted:
            continue
        for k in final:
            rows = [row for row in final[k]["messages"] if row[3] == c]
            if len(rows) != 1 or k[0] not in (rows[0][1], rows[0][2]):
                continue  # lost or misplaced: check_final says so
            version, content, _ = (changes.get(k) or {}).get(rows[0][0], (0, c, False))
            if version > len(texts):
                anomalies["edit_duplicated"].append(f"{c} on {dev(k)}: version {version} after {len(texts)} edit(s)")
            elif version < len(texts) or content != texts[-1]:
                anomalies["edit_lost"].append(
                    f"{c} on {dev(k)}: shows {content!r} (version {version}); last edit {texts[-1]!r} (version {len(texts)})")
    for c, mid in deleted.items():
        for k in final:
            rows = [row for row in final[k]["messages"] if row[0] == mid]
            if rows and not (changes.get(k) or {}).get(mid, (0, "", False))[2]:
                anomalies["delete_lost"].append(f"{c} (message {mid}) on {dev(k)}: not a tombstone")
        for text in [c] + edits.get(c, []):
            # Not followed by a digit: h1-u1-n1 is not a piece of h1-u1-n12, nor /e1 of /e12.
            pattern = re.compile(re.escape(text.encode()) + rb"(?![0-9])")
            for name, data in file_bytes.items():
                if pattern.search(data):
                    anomalies["text_left"].append(f"{text!r} of deleted message {mid}: still in the bytes of {name}")


def read_attachments(db):
    """{message id: [sha256 of each attachment, in order]} of a client file, read-only; None when unreadable."""
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            out = {}
            for mid, sha in con.execute(ATTACHMENTS_SQL).fetchall():
                out.setdefault(mid, []).append(sha)
            return out
        finally:
            con.close()
    except sqlite3.Error:
        return None


def check_attachments(attached, deleted, final, attachments, anomalies):
    """attached: {content: sha256 of the file sent with it}; deleted as check_changes'; final
    as check_final's; attachments: {device: read_attachments}. On every device of both
    parties that holds the message, it has exactly that attachment (none once deleted for
    everyone), and a message sent without a file has none: else attachment_lost."""
    for k, f in final.items():
        for row in f["messages"]:
            mid, c = row[0], row[3]
            if k[0] not in (row[1], row[2]):
                continue  # misplaced: check_final says so
            want = [] if c in deleted or c not in attached else [attached[c]]
            got = (attachments.get(k) or {}).get(mid, [])
            if got != want:
                anomalies["attachment_lost"].append(
                    f"{c} (message {mid}) on {dev(k)}: attachments {[g[:12] for g in got]}, expected {[w[:12] for w in want]}")


def read_file(db):
    """(snapshot {id: (from, to, content, status)}, outbox rows) of a client file, read-only; None when unreadable.
    `content` is the content a message was sent with (`identity`), also once edited or deleted."""
    if not os.path.exists(db):
        return {}, []
    try:
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            con.execute("BEGIN")
            msgs = con.execute(MESSAGES_SQL).fetchall()
            outbox = con.execute(OUTBOX_SQL).fetchall()
            con.execute("COMMIT")
        finally:
            con.close()
    except sqlite3.Error:
        return None, None
    return {m[0]: (m[1], m[2], identity(m[0], m[3], m[5] is not None), m[4]) for m in msgs}, outbox


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--bin")
    p.add_argument("--work")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--long", action="store_true")
    p.add_argument("--users", type=int)
    p.add_argument("--messages", type=int)
    p.add_argument("--devices", default=DEFAULT_DEVICES,
                   help=f"devices per user: N for every user, or a list cycled over the users (default {DEFAULT_DEVICES})")
    p.add_argument("--self-test", action="store_true")
    a = p.parse_args()
    if a.self_test:
        return self_test()
    if not a.bin or not a.work:
        p.error("--bin and --work are needed (or --self-test)")
    try:
        pattern = [int(x) for x in a.devices.split(",")]
    except ValueError:
        pattern = []
    if not pattern or min(pattern) < 1:
        p.error("--devices takes a whole number from 1 or a comma-separated list of them")
    users = list(range(1, (a.users or (10 if a.long else 4)) + 1))
    ndev = {u: pattern[i % len(pattern)] for i, u in enumerate(users)}
    keys = [(u, d) for u in users for d in range(1, ndev[u] + 1)]
    user_devs = devices_by_user(keys)
    per_user = a.messages or (200 if a.long else 20)
    min_relay_kills, min_client_kills = (20, 30) if a.long else (3, 4)
    rng = random.Random(a.seed)
    BIN = {n: os.path.join(os.path.abspath(a.bin), n) for n in ("chatdb", "chat-sync", "chat-relay")}
    for n, f in BIN.items():
        if not os.access(f, os.X_OK):
            sys.exit(f"Error: no {n} in {a.bin}")
    work = os.path.abspath(a.work)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    started = time.monotonic()
    relay_db = os.path.join(work, "relay.db")
    events = []  # (kind, text): processes that ended untold
    procs = []
    transient, transient_lock = set(), threading.Lock()  # chat-sync send/read running now
    stop_all = threading.Event()
    threads = []
    proxy = None
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))

    def log(text):
        print(f"   [{time.monotonic() - started:6.1f} s] {text}", file=sys.stderr, flush=True)

    try:
        # --- relay, users, tokens
        tokens = {}
        for u, d in keys:
            # The first device's token comes from `user add`, the others' from `device add`.
            argv = (["user", "add", "--db", relay_db, "--id", str(u), "--name", f"User{u}"] if d == 1
                    else ["device", "add", "--db", relay_db, "--user", str(u), "--name", f"device{d}"])
            r = subprocess.run([BIN["chat-relay"]] + argv, capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                sys.exit(f"chat-relay {' '.join(argv[:2])}: {r.stderr}")
            tokens[(u, d)] = os.path.join(work, f"token-{u}-{d}")
            fd = os.open(tokens[(u, d)], os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.write(fd, r.stdout.strip().splitlines()[-1].encode() + b"\n")
            os.close(fd)
        faults = (f"drop-response={rng.uniform(0.05, 0.15):.2f},error-503={rng.uniform(0.05, 0.15):.2f},"
                  f"throttle-429={rng.uniform(0.02, 0.08):.2f},duplicate-event={rng.uniform(0.05, 0.2):.2f},"
                  f"close-socket={rng.choice([0.02, 0.05, 0.1, 0.2, 0.3])},delay-event={rng.choice([0, 5, 20])}ms")
        relay = Proc("relay", [], {}, work)
        procs.append(relay)
        port = [0]
        relay_kills = {"SIGKILL": 0, "SIGTERM": 0}

        def start_relay(with_faults):
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                relay.argv = [BIN["chat-relay"], "serve", "--db", relay_db, "--port", str(port[0]), "--ping-seconds", "5"]
                if with_faults:
                    relay.argv += ["--faults", faults, "--faults-seed", str(a.seed + relay.starts)]
                relay.start()
                t = time.monotonic()
                while time.monotonic() - t < 15:
                    text = open(relay.log, errors="replace").read()
                    if "listening on http://127.0.0.1:" in text:
                        port[0] = int(text.split("listening on http://127.0.0.1:")[1].split()[0].split("(")[0])
                        return
                    if not relay.alive():
                        break
                    time.sleep(0.02)
                relay.stop(signal.SIGKILL)
                time.sleep(0.3)
            raise RuntimeError(f"chat-relay did not start within 60 s: {relay.tail(3)}")

        start_relay(True)
        proxy = Proxy(port[0], a.seed * 7919 + 1, sync_503=0.2, sync_drop=0.15, ws_503=0.07, ws_drop=0.05)
        server = f"http://127.0.0.1:{proxy.port}"
        clients, dirs = {}, {}
        for k in keys:
            u, d = k
            dirs[k] = os.path.join(work, f"user{u}-device{d}")
            os.makedirs(dirs[k], mode=0o700)
            clients[k] = Proc(f"sync{u}d{d}", [BIN["chat-sync"], "run", "--data-dir", dirs[k], "--user", str(u),
                                               "--server", server, "--token-file", tokens[k]], {}, work)
            procs.append(clients[k])
            clients[k].start()
        dbs = {k: os.path.join(dirs[k], f"chats-{k[0]}.db") for k in keys}

        def client_cmd(k, args, timeout=60):
            """`chat-sync send/read` on device k; killed on timeout and when this script ends."""
            if stop_all.is_set() and args[0] != "read":
                raise SystemExit
            pr = subprocess.Popen([BIN["chat-sync"]] + args[:1] + ["--data-dir", dirs[k], "--user", str(k[0])] + args[1:],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
            with transient_lock:
                transient.add(pr)
            try:
                out, err = pr.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                pr.kill()
                out, err = pr.communicate()
            finally:
                with transient_lock:
                    transient.discard(pr)
            return subprocess.CompletedProcess(pr.args, pr.returncode, out, err)

        # --- sampler
        history = History(keys)
        latest = {}
        sample_lock = threading.Lock()

        def sample_round():
            with sample_lock:
                r = history.begin()
                for k in keys:
                    snap, outbox = read_file(dbs[k])
                    history.record(r, k, snap)
                    if snap is not None:
                        latest[k] = (snap, outbox)
                history.end(r)

        def sampler():
            while not stop_all.is_set():
                sample_round()
                stop_all.wait(1.0)

        # --- lock holder
        lock_stop = threading.Event()
        kick = threading.Event()
        holds = []

        def lock_holder():
            lrng = random.Random(a.seed * 31 + 7)
            while not lock_stop.wait(lrng.uniform(4, 12)):
                # Half the holds outlast the relay's busy timeout twice over (the relay serves
                # one call at a time: a call queued behind one that waited its 5 s still meets
                # the lock); during those a client is killed and restarted, so that it
                # upgrades while the lock is held.
                long_hold = len(holds) % 2 == 0
                hold = lrng.uniform(2 * RELAY_BUSY_TIMEOUT + 0.5, 2 * RELAY_BUSY_TIMEOUT + 3) if long_hold else lrng.uniform(1, RELAY_BUSY_TIMEOUT)
                try:
                    con = sqlite3.connect(relay_db, timeout=2, isolation_level=None)
                    try:
                        con.execute("BEGIN IMMEDIATE")
                        t = time.monotonic()
                        if long_hold:
                            time.sleep(0.3)
                            kick.set()
                        time.sleep(hold)
                        con.execute("COMMIT")
                        holds.append(time.monotonic() - t)
                    finally:
                        con.close()
                except sqlite3.Error:
                    pass

        # --- senders and readers
        client_kills = {"SIGKILL": 0, "SIGTERM": 0}
        downs = {}  # device -> time to restart its run
        sent_lock = threading.Lock()
        sent, maybe = [], set()
        sends_left = [len(users)]
        send_failures = []
        reads_off = threading.Event()

        def sender(u):
            srng = random.Random(a.seed * 1000 + u)
            try:
                for k in range(per_user):
                    if stop_all.is_set():
                        return
                    time.sleep(srng.uniform(0.2, 2.0) if a.long else srng.uniform(1.0, 5.0))
                    to = srng.choice([v for v in users if v != u])
                    away = sorted({v for v, _ in list(downs) if v != u})
                    if away and srng.random() < 0.6:  # a message for someone with a run down
                        to = srng.choice(away)
                    d = srng.randint(1, ndev[u])  # from a random device of the user
                    content = f"h{a.seed}-u{u}-n{k}"
                    attach = []
                    if k % 4 == 1:  # every fourth message carries a file of its own (issue 30)
                        path = os.path.join(work, f"{content}.bin")
                        data = srng.randbytes(srng.randint(2_000, 200_000))
                        with open(path, "wb") as fh:
                            fh.write(data)
                        attached[content] = hashlib.sha256(data).hexdigest()
                        attach = ["--attach", path]
                    for attempt in range(40):
                        r = client_cmd((u, d), ["send", "--server", server, "--token-file", tokens[(u, d)], "--to", str(to)]
                                       + attach + [content])
                        if r.returncode != 75:
                            break
                        time.sleep(0.25)
                    with sent_lock:
                        if r.returncode == 0:
                            sent.append((content, u, to, d))
                        else:
                            maybe.add(content)
                            send_failures.append(f"{dev((u, d))}: chat-sync send {content} exited {r.returncode}: {r.stderr.strip()[:200]}")
            finally:
                with sent_lock:
                    sends_left[0] -= 1

        # Edits and deletes (issue 29): each user edits a few of its sent messages, every edit
        # of one message from one device of theirs (so the relay numbers them in queue
        # order), and deletes one for everyone, from any device of theirs that holds it.
        edits, deleted, edit_dev, unsure = {}, {}, {}, set()
        attached = {}  # content -> the SHA-256 of the file sent with it

        def stored_id(k, c):
            snap = latest.get(k, ({}, []))[0]
            return next((mid for mid, v in snap.items() if v[2] == c and v[0] == k[0]), None)

        def changer(u):
            erng = random.Random(a.seed * 1000 + 900 + u)
            edit_targets, delete_targets = (4, 2) if a.long else (2, 1)
            while not stop_all.wait(erng.uniform(2.0, 6.0)) and not reads_off.is_set():
                with sent_lock:
                    mine = [c for c, s, _, _ in sent if s == u and c not in deleted and c not in unsure]
                if not mine:
                    continue
                if len(deleted) < delete_targets * len(users) and sum(1 for c in deleted if c.split("-")[1] == f"u{u}") < delete_targets and erng.random() < 0.3:
                    c = erng.choice(mine)
                    holders = [k for k in user_devs[u] if stored_id(k, c) is not None]
                    if not holders:
                        continue
                    k = erng.choice(holders)
                    mid = stored_id(k, c)
                    TOMBSTONES[mid] = c
                    r = client_cmd(k, ["delete", "--message", str(mid), "--for-everyone"])
                    with sent_lock:
                        if r.returncode == 0:
                            deleted[c] = mid
                        else:
                            unsure.add(c)
                            send_failures.append(f"{dev(k)}: chat-sync delete --message {mid} exited {r.returncode}: {r.stderr.strip()[:200]}")
                    continue
                targets = [c for c in mine if c in edits] if len([c for c in edits if f"-u{u}-" in c]) >= edit_targets else mine
                if not targets:
                    continue
                c = erng.choice(targets)
                k = edit_dev.setdefault(c, (u, erng.randint(1, ndev[u])))
                mid = stored_id(k, c)
                if mid is None:
                    continue
                text = f"{c}{EDIT_MARK}{len(edits.get(c, [])) + 1}"
                r = client_cmd(k, ["edit", "--message", str(mid), text])
                with sent_lock:
                    if r.returncode == 0:
                        edits.setdefault(c, []).append(text)
                    else:
                        unsure.add(c)
                        send_failures.append(f"{dev(k)}: chat-sync edit --message {mid} exited {r.returncode}: {r.stderr.strip()[:200]}")

        def reader(u):
            rrng = random.Random(a.seed * 1000 + 500 + u)
            while not stop_all.wait(rrng.uniform(0.5, 3.0)) and not reads_off.is_set():
                d = rrng.randint(1, ndev[u])  # on a random device of the user
                client_cmd((u, d), ["read", "--with", str(rrng.choice([v for v in users if v != u]))])

        def reap():
            """A process that ended untold is an anomaly; it is started again."""
            if not relay.expected_down and not relay.alive():
                events.append(("relay_exit", f"chat-relay serve exited {relay.proc.returncode} untold "
                                             f"({relay.log}: {relay.tail()})"))
                log(f"relay exited {relay.proc.returncode} untold; restarting")
                start_relay(proxy.faults_on)
            for k, c in clients.items():
                if not c.expected_down and not c.alive():
                    events.append(("client_exit", f"chat-sync run on {dev(k)} exited {c.proc.returncode} untold "
                                                  f"({c.log}: {c.tail()})"))
                    log(f"chat-sync run on {dev(k)} exited {c.proc.returncode} untold; restarting")
                    c.start()

        for target in ([sampler, lock_holder] + [lambda u=u: sender(u) for u in users] + [lambda u=u: reader(u) for u in users]
                       + [lambda u=u: changer(u) for u in users]):
            t = threading.Thread(target=target, daemon=True)
            t.start()
            threads.append(t)

        # --- chaos (this thread): kills and restarts
        crng = random.Random(a.seed * 17 + 3)
        relay_share = crng.uniform(0.2, 0.35) if a.long else crng.uniform(0.1, 0.35)  # of the kills, the relay's (fewer: sockets live longer)

        def wait(seconds):
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                reap()
                if kick.is_set():
                    kick.clear()
                    up = [k for k in keys if k not in downs]
                    if up and not lock_stop.is_set():
                        time.sleep(crng.uniform(0, 0.5))
                        k = crng.choice(up)
                        clients[k].stop(signal.SIGKILL)
                        client_kills["SIGKILL"] += 1
                        clients[k].start()
                for k, t in list(downs.items()):
                    if time.monotonic() >= t:
                        del downs[k]
                        clients[k].start()
                time.sleep(0.05)

        chaos_deadline = time.monotonic() + (3600 if a.long else 600)
        while time.monotonic() < chaos_deadline:
            with sent_lock:
                senders_done = sends_left[0] == 0
            if senders_done and sum(relay_kills.values()) >= min_relay_kills and sum(client_kills.values()) >= min_client_kills:
                break
            wait(crng.uniform(1.0, 4.0) if a.long else crng.uniform(1.0, 3.0))
            sig = crng.choice([signal.SIGKILL, signal.SIGTERM])
            if crng.random() < relay_share or len(downs) >= len(keys) - 1:
                relay.stop(sig)
                relay_kills[sig.name] += 1
                wait(crng.uniform(0, 1.0))
                start_relay(True)
            else:
                k = crng.choice([x for x in keys if x not in downs])
                status = clients[k].stop(sig)
                client_kills[sig.name] += 1
                # A run signalled before its handler exists (the first milliseconds of the
                # process, before it wrote anything) dies by the signal: that is no anomaly.
                unstarted = status == -signal.SIGTERM and not clients[k].tail().strip()
                if sig == signal.SIGTERM and status != 0 and not unstarted:
                    events.append(("client_exit", f"chat-sync run on {dev(k)} exited {status} on SIGTERM ({clients[k].log}: {clients[k].tail()})"))
                downs[k] = time.monotonic() + crng.uniform(0, 5.0)
        chaos_end = time.monotonic()
        log(f"chaos over: {len(sent)} messages queued, {sum(relay_kills.values())} relay kills, {sum(client_kills.values())} client kills")

        # --- quiet: no faults, every client running
        lock_stop.set()
        reads_off.set()
        for t in threads[1:2]:
            t.join(timeout=15)
        proxy.faults_on = False
        relay.stop(signal.SIGTERM)
        start_relay(False)
        for k in list(downs):
            del downs[k]
            clients[k].start()
        wait(0.5)

        def all_outboxes_empty():
            return all(k in latest and not latest[k][1] for k in keys)

        deadline = time.monotonic() + (600 if a.long else 150)
        while time.monotonic() < deadline and not all_outboxes_empty():
            wait(1.0)
        if not all_outboxes_empty():
            log("outboxes not empty after the wait")

        def relay_rows():
            try:
                con = sqlite3.connect(f"file:{relay_db}?mode=ro", uri=True, timeout=10)
                try:
                    return con.execute("SELECT id, from_user_id, to_user_id FROM RelayMessages WHERE delivered_at IS NULL ORDER BY id").fetchall()
                finally:
                    con.close()
            except sqlite3.Error as e:
                return [("unreadable", str(e))]

        def state_key():
            return tuple((k, tuple(sorted((m, v[3]) for m, v in latest.get(k, ({}, []))[0].items())), len(latest.get(k, ({}, []))[1]))
                         for k in keys)

        def settled():
            """Every device has every message its user sent or received, all READ, an empty
            outbox, and every edit and delete of its messages."""
            for k in keys:
                if k not in latest:
                    return False
                mine = {v[2]: v[3] for v in latest[k][0].values()}
                if latest[k][1] or any(mine.get(c) != "READ" for c, s, r, _ in sent if k[0] in (s, r)):
                    return False
                changed = read_changes(dbs[k]) or {}
                ids = {v[2]: mid for mid, v in latest[k][0].items()}
                for c, texts in edits.items():
                    if k[0] in parties.get(c, ()) and c not in deleted and c not in unsure and changed.get(ids.get(c), (0,))[0] != len(texts):
                        return False
                for c, mid in deleted.items():
                    if k[0] in parties.get(c, ()) and not changed.get(mid, (0, "", False))[2]:
                        return False
            return not relay_rows()

        parties = {c: (s, r) for c, s, r, _ in sent}
        # Every user reads on one device only; the others must follow (conversation_read).
        reading = {u: user_devs[u][random.Random(a.seed * 101 + u).randrange(ndev[u])] for u in users}
        log("reading everything on " + ", ".join(dev(k) for k in reading.values()))
        deadline = time.monotonic() + (300 if a.long else 120)
        last_key, last_change = None, time.monotonic()
        while time.monotonic() < deadline:
            for u in users:
                for v in users:
                    if v != u:
                        client_cmd(reading[u], ["read", "--with", str(v)])
            wait(1.5)
            sample_round()
            if settled():
                break
            key = state_key()
            if key != last_key:
                last_key, last_change = key, time.monotonic()
            elif time.monotonic() - last_change > 50:
                # Longer than a client's longest reconnect backoff (30 s + 50% jitter).
                break
        log("settled" if settled() else "steady, but not everything is read/delivered")

        # --- stop and collect
        stop_all.set()
        threads[0].join(timeout=10)
        for k, c in clients.items():
            status = c.stop(signal.SIGTERM)
            if status != 0:
                events.append(("client_exit", f"chat-sync run on {dev(k)} exited {status} on the final SIGTERM ({c.log}: {c.tail()})"))
        reap_status = relay.stop(signal.SIGTERM)
        if reap_status != 0:
            events.append(("relay_exit", f"chat-relay serve exited {reap_status} on the final SIGTERM ({relay.log}: {relay.tail()})"))
        sample_round()
        final, failed = {}, []
        for k in keys:
            snap, outbox = read_file(dbs[k])
            if snap is None:
                failed.append(f"{dev(k)}'s file is unreadable")
                snap, outbox = {}, []
            final[k] = {"messages": [(m,) + v for m, v in sorted(snap.items())], "outbox": outbox}
            r = subprocess.run([BIN["chatdb"], "check", "--full", "--db", dbs[k]], capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                failed.append(f"chatdb check --full of {dev(k)}'s file exited {r.returncode}: {(r.stderr or r.stdout).strip()[:300]}")
        for f in [dbs[k] for k in keys] + [relay_db]:
            try:
                con = sqlite3.connect(f"file:{f}?mode=ro", uri=True, timeout=10)
                res = con.execute("PRAGMA integrity_check").fetchall()
                con.close()
            except sqlite3.Error as e:
                res = [(str(e),)]
            if res != [("ok",)]:
                failed.append(f"PRAGMA integrity_check of {f}: {res[:3]}")
        left = relay_rows()
        changed = {k: read_changes(dbs[k]) or {} for k in keys}
        attachments = {k: read_attachments(dbs[k]) or {} for k in keys}

        def file_bytes(path):
            data = b""
            for f in (path, path + "-wal"):
                if os.path.exists(f):
                    with open(f, "rb") as fh:
                        data += fh.read()
            return data

        everything = {**{f"{dev(k)}'s file": file_bytes(dbs[k]) for k in keys}, "relay.db": file_bytes(relay_db)}

        anomalies = new_anomalies()
        check_final(sent, maybe, final, left, failed, anomalies)
        check_changes({c: t for c, t in edits.items() if c not in unsure}, {c: i for c, i in deleted.items() if c not in unsure},
                      final, changed, everything, anomalies)
        check_history(history, anomalies)
        check_processes(events, anomalies)
        check_attachments({c: h for c, h in attached.items() if c not in maybe}, deleted, final, attachments, anomalies)
        for text in send_failures[:5]:
            print(f"   note: {text}", file=sys.stderr)
        counts = report(anomalies)
        over = sum(1 for x in holds if x > RELAY_BUSY_TIMEOUT)
        print(f"== History: seed {a.seed}, {len(users)} users ({len(keys)} devices: {','.join(str(ndev[u]) for u in users)}) "
              f"x {per_user} messages ({len(sent)} queued, {sum(len(t) for t in edits.values())} edits of {len(edits)}, "
              f"{len(deleted)} deleted for everyone, {len(attached)} with a file), "
              f"{sum(relay_kills.values())} relay kills ({relay_kills['SIGKILL']} SIGKILL), "
              f"{sum(client_kills.values())} client kills ({client_kills['SIGKILL']} SIGKILL), "
              f"{len(holds)} lock holds ({over} over {RELAY_BUSY_TIMEOUT:.0f} s), proxy faults "
              f"{sum(proxy.counts.values())}, relay faults {faults}, {len(history.rounds)} samples, "
              f"{time.monotonic() - started:.0f} s (chaos {chaos_end - started:.0f} s)")
        print(f"   {counts}")
        if any(anomalies.values()):
            print(f"   history: anomalies found; files and logs in {work}")
            return 1
        return 0
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("   history: interrupted; stopping everything it started", file=sys.stderr)
        return 130
    finally:
        stop_all.set()
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the cleanup short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for pr in procs:
            if pr.alive():
                try:
                    os.killpg(pr.proc.pid, signal.SIGKILL)
                except OSError:
                    pass
                pr.proc.wait()
        with transient_lock:
            for pr in list(transient):
                try:
                    pr.kill()
                except OSError:
                    pass
        if proxy:
            proxy.close()


if __name__ == "__main__":
    sys.exit(main())
