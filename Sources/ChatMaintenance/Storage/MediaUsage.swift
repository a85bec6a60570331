import ChatStore
import Foundation

/// What a file's media take (`chatdb usage`): the media folder's files by kind and by
/// conversation, the largest, and what each media policy of `chatdb evict` would free.
/// Sizes are the files' bytes as `Media` records them; `folderBytes` is what the folder
/// holds on disk, partial downloads and strays included.
public struct MediaUsage: Sendable, Equatable {
  /// One kind's figures: files here, and media known but not here (remote or evicted).
  public struct Kind: Sendable, Equatable {
    public var kind: MediaKind
    public var localFiles: Int
    public var localBytes: Int64
    public var elsewhere: Int
    public var elsewhereBytes: Int64
  }
  /// One conversation's media files here (a media in two conversations counts in both).
  public struct Conversation: Sendable, Equatable {
    public var id: Int64
    public var files: Int
    public var bytes: Int64
  }
  /// One of the largest files.
  public struct File: Sendable, Equatable {
    public var sha256: String
    public var mime: String
    public var size: Int64
    public var lastAccessedAt: String
  }
  /// What `chatdb evict` with these options would remove.
  public struct Policy: Sendable, Equatable {
    public var arguments: [String]
    public var files: Int
    public var bytes: Int64
  }

  public var kinds: [Kind]
  public var conversations: [Conversation]
  public var largest: [File]
  public var policies: [Policy]
  /// Files of unsent messages (never evicted).
  public var outboxFiles: Int
  public var outboxBytes: Int64
  /// The bytes in the media folder on disk.
  public var folderBytes: Int64

  public var localFiles: Int { kinds.reduce(0) { $0 + $1.localFiles } }
  public var localBytes: Int64 { kinds.reduce(0) { $0 + $1.localBytes } }

  /// Measures the media of the file open in `db` (in the caller's read transaction);
  /// nil for a file without media tables (before migration 0009).
  public static func measure(_ db: Database, now: Date = Date(), top: Int = 10) throws -> MediaUsage? {
    guard try HotQuery.hasMedia(db) else { return nil }
    var byKind: [MediaKind: Kind] = [:]
    for kind in MediaKind.allCases {
      byKind[kind] = Kind(kind: kind, localFiles: 0, localBytes: 0, elsewhere: 0, elsewhereBytes: 0)
    }
    try db.prepare(
      "SELECT \(MediaKind.sql("mime")), state = 'local', count(*), coalesce(sum(size), 0) FROM Media GROUP BY 1, 2"
    ).forEachRow { row in
      let kind = MediaKind(rawValue: row.string(0)) ?? .file
      if row.int64(1) != 0 {
        byKind[kind]!.localFiles += row.int(2)
        byKind[kind]!.localBytes += row.int64(3)
      } else {
        byKind[kind]!.elsewhere += row.int(2)
        byKind[kind]!.elsewhereBytes += row.int64(3)
      }
    }
    let conversations = try db.query(
      """
      SELECT c, count(*), sum(size) FROM (
        SELECT DISTINCT g.conversation_id AS c, m.id, m.size FROM Attachments a
        JOIN Messages g ON g.id = a.message_id JOIN Media m ON m.id = a.media_id WHERE m.state = 'local')
      GROUP BY c ORDER BY 3 DESC, c LIMIT ?1
      """, [top]
    ) { Conversation(id: $0.int64(0), files: $0.int(1), bytes: $0.int64(2)) }
    let largest = try db.query(
      "SELECT sha256, mime, size, last_accessed_at FROM Media WHERE state = 'local' ORDER BY size DESC, id LIMIT ?1",
      [top]
    ) { File(sha256: $0.string(0), mime: $0.string(1), size: $0.int64(2), lastAccessedAt: $0.string(3)) }
    let (outboxFiles, outboxBytes) =
      try db.prepare(
        "SELECT count(*), coalesce(sum(size), 0) FROM Media m WHERE m.id IN (SELECT media_id FROM RequestAttachments)"
      ).first { ($0.int(0), $0.int64(1)) } ?? (0, 0)
    // The planner `chatdb evict` runs, for a few ages.
    var policies: [Policy] = []
    let planner = MediaPlanner(db: db)
    for age in ["30d", "90d", "365d"] {
      var policy = EvictionPolicy()
      policy.now = now
      policy.mediaOlderThan = EvictionPolicy.age(age)
      let plan = try planner.plan(policy, messages: EvictionPlan.empty(policy))
      if !plan.evict.isEmpty {
        policies.append(
          Policy(arguments: ["--media-older-than", age], files: plan.evict.count, bytes: plan.evictBytes))
      }
    }
    let folder = MediaFolder(database: db.path)
    let folderBytes = try folder.names().reduce(Int64(0)) {
      $0 + (FileSystem.size(atPath: folder.path + "/" + $1) ?? 0)
    }
    return MediaUsage(
      kinds: MediaKind.allCases.map { byKind[$0]! }, conversations: conversations, largest: largest,
      policies: policies, outboxFiles: outboxFiles, outboxBytes: outboxBytes, folderBytes: folderBytes)
  }
}

extension EvictionPlan {
  /// A plan that deletes no message.
  static func empty(_ policy: EvictionPolicy) -> EvictionPlan {
    EvictionPlan(
      policy: policy, cutoff: nil, conversations: [], messages: 0, bytes: nil, pageSize: 4096, fileBytes: 0,
      usedBytes: 0, freeBytes: 0, expectedSize: nil, targetReachable: true)
  }
}
