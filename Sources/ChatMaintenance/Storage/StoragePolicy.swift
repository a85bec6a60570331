import ChatStore
import Foundation

/// A file's automatic hygiene (`chatdb policy`), kept in the file itself (`StoreInfo`,
/// key `storage_policy`) so every program that opens it sees the same one: media kept
/// for a period (`keepMedia`), a cap on the media files here (`mediaCacheMax`, least
/// recently accessed first), and messages kept for a period (`keepMessages`). `chat-sync
/// run` enforces it hourly, and at once when the disk falls below the warning level:
/// media first, then messages, each with `chatdb evict`'s short write locks.
///
/// ```swift
/// var policy = StoragePolicy()
/// policy.keepMedia = EvictionPolicy.age("90d")
/// try policy.save(to: db)
/// let run = try StoragePolicy.load(from: db)?.enforce(path: path)
/// ```
public struct StoragePolicy: Sendable, Equatable, Codable {
  /// Media files not accessed for this many milliseconds are removed; nil: kept.
  public var keepMedia: Int64?
  /// The media files here are kept under this many bytes; nil: no cap.
  public var mediaCacheMax: Int64?
  /// Messages older than this many milliseconds are deleted; nil: kept.
  public var keepMessages: Int64?

  public init(keepMedia: Int64? = nil, mediaCacheMax: Int64? = nil, keepMessages: Int64? = nil) {
    self.keepMedia = keepMedia
    self.mediaCacheMax = mediaCacheMax
    self.keepMessages = keepMessages
  }

  static let key = "storage_policy"
  static let lastRunKey = "storage_policy_last_run"

  public var isEmpty: Bool { keepMedia == nil && mediaCacheMax == nil && keepMessages == nil }

  /// The policy stored in the file open in `db` (an empty one when none is).
  public static func load(from db: Database) throws -> StoragePolicy {
    guard let text = try db.string("SELECT value FROM StoreInfo WHERE key = ?1", [key]) else { return StoragePolicy() }
    do {
      return try JSONDecoder().decode(StoragePolicy.self, from: Data(text.utf8))
    } catch {
      throw StoreError(.badInput, "\(db.path): StoreInfo '\(key)' is not a storage policy: \(text)", path: db.path)
    }
  }

  /// Stores the policy (an empty one removes it).
  public func save(to db: Database) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = .sortedKeys
    let text = String(decoding: try encoder.encode(self), as: UTF8.self)
    try db.write { db in
      if isEmpty {
        try db.execute("DELETE FROM StoreInfo WHERE key = ?1", [Self.key])
      } else {
        try db.execute(Self.setValue, [Self.key, text])
      }
    }
  }

  static let setValue =
    "INSERT INTO StoreInfo (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value"

  /// What the last enforcement did, and when, as `chat-sync status` shows it.
  public static func lastRun(in db: Database) throws -> String? {
    try db.string("SELECT value FROM StoreInfo WHERE key = ?1", [lastRunKey])
  }

  /// The media part as an eviction policy (nil when it names no media).
  public func mediaPolicy(now: Date) -> EvictionPolicy? {
    var policy = EvictionPolicy()
    policy.now = now
    policy.mediaOlderThan = keepMedia
    policy.mediaMaxSize = mediaCacheMax
    return policy.isEmpty ? nil : policy
  }

  /// The message part as an eviction policy (nil when it names none).
  public func messagePolicy(now: Date) -> EvictionPolicy? {
    var policy = EvictionPolicy()
    policy.now = now
    policy.olderThan = keepMessages
    return policy.isEmpty ? nil : policy
  }

  /// What one enforcement did.
  public struct Run: Sendable, Equatable {
    public var evictedMedia = 0
    public var evictedMediaBytes: Int64 = 0
    public var deletedMessages: Int64 = 0
    public var sweptMedia = 0
    /// The longest a write lock was held, in milliseconds.
    public var maxChunkMillis = 0.0

    public var summary: String {
      "removed \(evictedMedia) media file(s) (\(evictedMediaBytes) bytes), deleted \(deletedMessages) message(s) "
        + "and \(sweptMedia) media no message kept; longest write lock \(String(format: "%.1f", maxChunkMillis)) ms"
    }
  }

  /// Enforces the policy on the file at `path` through a connection of its own: the
  /// media part first, then the messages; records what it did in the file (`lastRun`).
  public func enforce(path: String, now: Date = Date()) throws -> Run {
    let db = try Database(path: path)
    var run = Run()
    for policy in [mediaPolicy(now: now), messagePolicy(now: now)].compactMap({ $0 }) {
      let result = try Evictor(database: db).run(policy)
      run.evictedMedia += result.evictedMedia
      run.evictedMediaBytes += result.evictedMediaBytes
      run.deletedMessages += result.deletedMessages
      run.sweptMedia += result.sweptMedia
      run.maxChunkMillis = max(run.maxChunkMillis, result.maxChunkMillis)
    }
    try db.write { db in try db.execute(Self.setValue, [Self.lastRunKey, "\(Timestamp.string(now)): \(run.summary)"]) }
    return run
  }
}

extension EvictionPolicy {
  /// Milliseconds as the largest whole unit `age(_:)` reads: `1y`, `6w`, `90d`, `12h`.
  public static func ageText(_ milliseconds: Int64) -> String {
    let hour: Int64 = 3_600_000
    for (unit, size) in [("y", 365 * 24 * hour), ("w", 7 * 24 * hour), ("d", 24 * hour)]
    where milliseconds >= size && milliseconds % size == 0 {
      return "\(milliseconds / size)\(unit)"
    }
    return "\(milliseconds / hour)h"
  }
}
