/// The repository's statements outside the hot-query catalog (`HotQuery.all`), and why:
/// each reads or writes `StoreInfo`, the file's few dozen keyed facts (its owner, the
/// sync cursors, the request counter, queued read receipts, the client's state), by its
/// primary key or over its handful of rows. Their plans cannot go wrong with the size of
/// a history, so `chatdb index verify` has nothing to check in them.
enum StoreInfoSQL {
  static let owner = "SELECT value FROM StoreInfo WHERE key = 'owner_user_id'"
  static let recordOwner = "INSERT INTO StoreInfo (key, value) VALUES ('owner_user_id', ?1)"
  /// The next request id: one more than the last, and at least `?1`.
  static let nextRequestID =
    "UPDATE StoreInfo SET value = max(value + 1, ?1) WHERE key = 'last_request_id' RETURNING value"
  static let value = "SELECT value FROM StoreInfo WHERE key = ?1"
  static let setValue =
    "INSERT INTO StoreInfo (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
  /// Sets `?1` to `?2` unless it holds more already (cursors and receipts only move forward).
  static let raiseValue =
    "INSERT INTO StoreInfo (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = max(value, excluded.value)"
  /// Forgets key `?1` when its value is at most `?2`.
  static let clearValueUpTo = "DELETE FROM StoreInfo WHERE key = ?1 AND value <= ?2"
  /// Every queued read receipt (`read_receipt:<conversation>`), by key.
  static let readReceipts = "SELECT key, value FROM StoreInfo WHERE key LIKE 'read_receipt:%' ORDER BY key"

  /// A row of `readReceipts`: the conversation (0 when the key is not one) and "read up to".
  static func readReceipt(_ row: Row) -> (Int64, Int64) {
    (Int64(row.string(0).dropFirst("read_receipt:".count)) ?? 0, row.int64(1))
  }
}
