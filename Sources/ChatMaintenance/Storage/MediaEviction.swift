import ChatStore
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The media side of an eviction plan (`chatdb evict --media-*`, and the media that
/// goes with evicted messages): which files are removed and which media rows go.
///
/// A media of a message still in the outbox (`RequestAttachments`) is never touched:
/// the message cannot be sent without it.
public struct MediaPlan: Sendable, Equatable {
  /// One media: its row, its file's name and its bytes.
  public struct Item: Sendable, Equatable {
    public var id: Int64
    public var sha256: String
    public var size: Int64
    public var kind: MediaKind
    /// Whether its file is here (`local`): only those free bytes.
    public var local: Bool
  }

  /// Files removed, their messages and thumbnails kept: the media becomes `evicted`
  /// (`chat-sync fetch` downloads it again while the relay keeps it).
  public var evict: [Item] = []
  /// Media that no message keeps once the plan's messages are deleted: row and file go.
  public var sweep: [Item] = []
  /// Media files here (`local`) before, and their bytes.
  public var localFiles: Int = 0
  public var localBytes: Int64 = 0

  public var evictBytes: Int64 { evict.reduce(0) { $0 + $1.size } }
  /// The bytes of swept media whose file is here.
  public var sweepBytes: Int64 { sweep.filter(\.local).reduce(0) { $0 + $1.size } }
  public var isEmpty: Bool { evict.isEmpty && sweep.isEmpty }
}

/// Plans ``MediaPlan`` from a policy and the message plan.
struct MediaPlanner {
  let db: Database

  /// Media that may be evicted: the file is here and no unsent message needs it.
  static let evictable = """
    m.state = 'local' AND NOT EXISTS (SELECT 1 FROM RequestAttachments r WHERE r.media_id = m.id)
    """
  static let columns = "m.id, m.sha256, m.size, m.mime, m.state = 'local'"

  static func item(_ row: Row) -> MediaPlan.Item {
    MediaPlan.Item(
      id: row.int64(0), sha256: row.string(1), size: row.int64(2), kind: MediaKind(mime: row.string(3)),
      local: row.int64(4) != 0)
  }

  /// The plan; `messages` is the message plan (what it deletes, or with `mediaOnly`
  /// whose media it evicts).
  func plan(_ policy: EvictionPolicy, messages: EvictionPlan) throws -> MediaPlan {
    var plan = MediaPlan()
    guard try HotQuery.hasMedia(db) else { return plan }
    (plan.localFiles, plan.localBytes) =
      try db.prepare("SELECT count(*), coalesce(sum(size), 0) FROM Media WHERE state = 'local'").first {
        ($0.int(0), $0.int64(1))
      } ?? (0, 0)
    let bounds = Self.bounds(messages)
    if policy.mediaOnly {
      if !messages.conversations.isEmpty {
        plan.evict = try db.query(
          """
          \(Self.boundsCTE) SELECT DISTINCT \(Self.columns) FROM bounds b
          JOIN Messages g ON g.conversation_id = b.c AND g.id <= b.l
          JOIN Attachments a ON a.message_id = g.id JOIN Media m ON m.id = a.media_id
          WHERE \(Self.evictable) ORDER BY m.id
          """, [bounds], Self.item)
      }
    } else if !messages.conversations.isEmpty {
      // Media whose every attachment is on a message the plan deletes.
      plan.sweep = try db.query(
        """
        \(Self.boundsCTE), doomed(media_id) AS (
          SELECT DISTINCT a.media_id FROM bounds b
          JOIN Messages g ON g.conversation_id = b.c AND g.id <= b.l
          JOIN Attachments a ON a.message_id = g.id)
        SELECT \(Self.columns) FROM doomed d JOIN Media m ON m.id = d.media_id
        WHERE NOT EXISTS (SELECT 1 FROM RequestAttachments r WHERE r.media_id = m.id)
          AND NOT EXISTS (
            SELECT 1 FROM Attachments a JOIN Messages g ON g.id = a.message_id
            WHERE a.media_id = m.id AND NOT EXISTS (SELECT 1 FROM bounds b WHERE b.c = g.conversation_id AND g.id <= b.l))
        ORDER BY m.id
        """, [bounds], Self.item)
    }
    // Media no message or request names already (a run stopped between its message
    // deletes and this step): they go too, so running the same policy again finishes.
    let swept = Set(plan.sweep.map(\.id))
    plan.sweep += try db.query(
      """
      SELECT \(Self.columns) FROM Media m
      WHERE \(HotQuery.mediaUnreferenced)
      ORDER BY m.id
      """, [], Self.item
    ).filter { !swept.contains($0.id) }
    var chosen = Set(plan.sweep.map(\.id) + plan.evict.map(\.id))
    func add(_ items: [MediaPlan.Item]) {
      for item in items where !chosen.contains(item.id) {
        chosen.insert(item.id)
        plan.evict.append(item)
      }
    }
    if let age = policy.mediaOlderThan {
      let cutoff = Timestamp.string(milliseconds: Int64((policy.now.timeIntervalSince1970 * 1000).rounded(.down)) - age)
      add(
        try db.query(
          "SELECT \(Self.columns) FROM Media m WHERE m.last_accessed_at < ?1 AND \(Self.evictable) ORDER BY m.last_accessed_at, m.id",
          [cutoff], Self.item))
    }
    if let larger = policy.mediaLargerThan {
      add(
        try db.query(
          "SELECT \(Self.columns) FROM Media m WHERE m.size > ?1 AND \(Self.evictable) ORDER BY m.size DESC, m.id",
          [larger], Self.item))
    }
    if let cap = policy.mediaMaxSize {
      // Least recently used first (seed 003's size-capped cache) until what is left fits.
      var left = plan.localBytes - plan.evictBytes - plan.sweepBytes
      if left > cap {
        var lru: [MediaPlan.Item] = []
        try db.prepare(
          "SELECT \(Self.columns) FROM Media m WHERE \(Self.evictable) ORDER BY m.last_accessed_at, m.id"
        ).forEachRow { row in
          guard left > cap else { return }
          let item = Self.item(row)
          if !chosen.contains(item.id) {
            lru.append(item)
            left -= item.size
          }
        }
        add(lru)
      }
    }
    return plan
  }

  /// `[[conversation, lastID], …]` of a message plan, for ``boundsCTE``.
  static func bounds(_ plan: EvictionPlan) -> String {
    "[" + plan.conversations.map { "[\($0.id),\($0.lastID)]" }.joined(separator: ",") + "]"
  }

  static let boundsCTE = """
    WITH bounds(c, l) AS (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?1))
    """
}

/// Executes a ``MediaPlan`` in short transactions, each changing its rows and then
/// removing their files before it commits: a send that names one of those files again
/// (in its own transaction, `StagedMedia`) comes wholly before or after. A file a kill
/// leaves behind a row that says it is gone is what `chatdb check` reports as a stray
/// media file and `chatdb vacuum` removes.
struct MediaEvictor {
  let db: Database
  let folder: MediaFolder

  /// Media a transaction handles at most.
  static let chunk = 500

  struct Outcome {
    var evicted = 0
    var evictedBytes: Int64 = 0
    var swept = 0
    var sweptBytes: Int64 = 0
    var chunkMillis: [Double] = []
  }

  func run(_ plan: MediaPlan) throws -> Outcome {
    var outcome = Outcome()
    let evict = try db.prepare(
      """
      UPDATE Media AS m SET state = 'evicted' WHERE m.id = ?1 AND \(MediaPlanner.evictable) RETURNING sha256
      """)
    for part in stride(from: 0, to: plan.evict.count, by: Self.chunk) {
      let items = plan.evict[part..<min(part + Self.chunk, plan.evict.count)]
      let ((names, bytes), millis) = try timed {
        let names = try items.compactMap { try evict.first([$0.id]) { $0.string(0) } }
        return (names, names.reduce(0) { $0 + folder.remove($1) })
      }
      outcome.chunkMillis.append(millis)
      outcome.evicted += names.count
      outcome.evictedBytes += bytes
    }
    let sweep = try db.prepare(
      """
      DELETE FROM Media AS m WHERE m.id = ?1 AND \(HotQuery.mediaUnreferenced)
      RETURNING sha256
      """)
    for part in stride(from: 0, to: plan.sweep.count, by: Self.chunk) {
      let items = plan.sweep[part..<min(part + Self.chunk, plan.sweep.count)]
      let ((names, bytes), millis) = try timed {
        let names = try items.compactMap { try sweep.first([$0.id]) { $0.string(0) } }
        return (names, names.reduce(0) { $0 + folder.remove($1) })
      }
      outcome.chunkMillis.append(millis)
      outcome.swept += names.count
      outcome.sweptBytes += bytes
    }
    return outcome
  }

  /// Runs `body` in one write transaction; what it returned and the milliseconds it held the lock.
  private func timed<T>(_ body: () throws -> T) throws -> (T, Double) {
    let start = DispatchTime.now().uptimeNanoseconds
    var result: T?
    try db.inTransaction(.immediate) { _ in
      result = try body()
      return .commit
    }
    return (result!, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e6)
  }
}
