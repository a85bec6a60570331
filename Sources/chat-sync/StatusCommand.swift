import ChatCLI
import ChatMaintenance
import ChatStore
import ChatSync

/// `chat-sync status`: connection, outbox, last sync, cursor.
enum StatusCommand: ParsableCommand {
  static let name = "status"
  static let abstract = "Show the sync state: connection, outbox counts, edits and deletes waiting, last sync, cursor."

  static let examples = [
    "chat-sync status --user 42",
    "chat-sync status --db ./chats-42.db --json",
  ]

  struct Options: ParsableOptions {
    var file: ClientFile
    init(_ o: inout OptionReader) { file = ClientFile(&o) }
    func validate() throws { try file.validate() }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let path = options.file.target.path
    let repository = try options.file.open(create: false)
    let running = NudgeListener.isRunning(on: path)
    let state = try repository.syncInfo("sync_state") ?? "never synced"
    let lastSync = try repository.syncInfo("last_sync_at")
    let cursor = try repository.syncCursor()
    let counts = try repository.outboxCounts()
    let failed = try repository.failedRequests()
    let outbox = ["PENDING", "SENT", "FAILED", "permanent"].map { "\($0.lowercased()) \(counts[$0] ?? 0)" }.joined(
      separator: ", ")
    var lines = [
      "run:       \(running ? "running" : "not running") (\(state))",
      "last sync: \(lastSync ?? "never")",
      "cursor:    message \(cursor.messages), update \(cursor.updates)",
      "outbox:    \(outbox)",
    ]
    let media = try repository.mediaSummary()
    if media.uploads + media.downloads.count + media.localFiles > 0 {
      lines.append(
        "media:     \(media.localFiles) file(s) here (\(ByteCount.format(media.localBytes))), "
          + "\(media.uploads) to upload (\(ByteCount.format(media.uploadBytes))), \(media.downloads.count) downloading")
    }
    for download in media.downloads {
      lines.append(
        "  download \(download.sha256.prefix(12)): \(ByteCount.format(download.received)) of \(ByteCount.format(download.size))"
      )
    }
    let policy = try StoragePolicy.load(from: repository.database)
    let policyRun = try StoragePolicy.lastRun(in: repository.database)
    if !policy.isEmpty {
      let parts = [
        policy.keepMedia.map { "media kept \(EvictionPolicy.ageText($0))" },
        policy.mediaCacheMax.map { "media cache \(ByteCount.format($0))" },
        policy.keepMessages.map { "messages kept \(EvictionPolicy.ageText($0))" },
      ].compactMap { $0 }
      lines.append("policy:    \(parts.joined(separator: ", ")); last run \(policyRun ?? "never")")
    }
    let changes = try repository.messageChanges()
    if !changes.isEmpty {
      let refused = changes.filter { $0.nextAttemptAt == nil }.count
      lines.append(
        "changes:   \(changes.count - refused) edit(s) or delete(s) waiting, \(refused) failed for good"
          + (refused > 0 ? " ('chat-sync delete REQUEST_ID' drops one)" : ""))
    }
    for change in changes {
      let what = change.kind == .edit ? "edit" : "delete for everyone"
      let state =
        change.nextAttemptAt == nil
        ? "failed for good: \(TerminalText.shown(change.failReason ?? "refused", terminal: context.stdout.isTerminal))"
        : change.status == .failed
          ? "\(TerminalText.shown(change.failReason ?? "failed", terminal: context.stdout.isTerminal)), retried at \(change.nextAttemptAt ?? "")"
          : change.status.rawValue
      lines.append("  \(what) \(change.requestID) of message \(change.messageID): \(state)")
    }
    for request in failed {
      let when =
        request.isPermanentlyFailed
        ? "failed for good, 'chat-sync retry \(request.requestID)' sends it again"
        : "retried at \(request.nextAttemptAt ?? "")"
      lines.append(
        "  request \(request.requestID) to user \(request.toUserID): \(TerminalText.shown(request.failReason ?? "failed", terminal: context.stdout.isTerminal)) (\(when))"
      )
    }
    try options.file.report(
      context,
      Result(
        running: running, state: state, lastSyncAt: lastSync,
        cursor: .init(messages: cursor.messages, updates: cursor.updates),
        failed: failed.map {
          .init(
            requestId: $0.requestID, toUserId: $0.toUserID, reason: $0.failReason,
            permanent: $0.isPermanentlyFailed, failCount: $0.failCount)
        },
        outbox: .init(
          pending: counts["PENDING"] ?? 0, sent: counts["SENT"] ?? 0, failed: counts["FAILED"] ?? 0,
          permanent: counts["permanent"] ?? 0),
        changes: changes.map {
          .init(
            requestId: $0.requestID, messageId: $0.messageID, kind: $0.kind.rawValue, status: $0.status.rawValue,
            reason: $0.failReason, permanent: $0.nextAttemptAt == nil, failCount: $0.failCount)
        },
        media: .init(
          localFiles: media.localFiles, localBytes: media.localBytes, uploads: media.uploads,
          uploadBytes: media.uploadBytes,
          downloads: media.downloads.map { .init(sha256: $0.sha256, size: $0.size, received: $0.received) }),
        policy: policy.isEmpty
          ? nil
          : .init(
            keepMedia: policy.keepMedia.map(EvictionPolicy.ageText), mediaCacheMax: policy.mediaCacheMax,
            keepMessages: policy.keepMessages.map(EvictionPolicy.ageText), lastRun: policyRun)),
      text: lines.joined(separator: "\n"))
  }

  /// `result`: whether `chat-sync run` is running, the sync cursor, the outbox by status
  /// and the requests that failed.
  struct Result: CommandResult {
    struct Cursor: Encodable {
      var messages: Int64
      var updates: Int64
    }
    struct Failed: Encodable {
      var requestId: Int64
      var toUserId: Int64
      var reason: String?
      var permanent: Bool
      var failCount: Int
    }
    struct Outbox: Encodable {
      var pending: Int
      var sent: Int
      var failed: Int
      /// Failed for good: only `chat-sync retry` sends them again.
      var permanent: Int

      enum CodingKeys: String, CodingKey {
        case pending = "PENDING"
        case sent = "SENT"
        case failed = "FAILED"
        case permanent
      }
    }
    var running: Bool
    var state: String
    var lastSyncAt: String?
    var cursor: Cursor
    var failed: [Failed]
    var outbox: Outbox
    /// Edits and deletes for everyone waiting to be sent, or failed (`permanent`: for good).
    var changes: [Change]
    /// Media files here, files of queued messages not uploaded yet, downloads under way.
    var media: Media
    /// The file's storage policy (`chatdb policy`; null: none) and its last run.
    var policy: Policy?

    struct Policy: Encodable {
      var keepMedia: String?
      var mediaCacheMax: Int64?
      var keepMessages: String?
      var lastRun: String?
    }

    struct Media: Encodable {
      var localFiles: Int
      var localBytes: Int64
      var uploads: Int
      var uploadBytes: Int64
      var downloads: [Download]
    }
    struct Download: Encodable {
      var sha256: String
      var size: Int64
      /// Bytes in its partial file so far.
      var received: Int64
    }

    struct Change: Encodable {
      var requestId: Int64
      var messageId: Int64
      /// `edit` or `delete`.
      var kind: String
      var status: String
      var reason: String?
      var permanent: Bool
      var failCount: Int
    }

    static var example: Result {
      Result(
        running: true, state: "connected", lastSyncAt: "2026-12-01T12:03:00.412Z",
        cursor: Cursor(messages: 7_337_265_813_504_001, updates: 1_204),
        failed: [Failed(requestId: 18, toUserId: 7, reason: "the relay answered 503", permanent: false, failCount: 3)],
        outbox: Outbox(pending: 2, sent: 0, failed: 1, permanent: 0),
        changes: [
          Change(
            requestId: 31, messageId: 7_337_265_813_504_001, kind: "edit", status: "FAILED",
            reason: "HTTP 403 forbidden: message 7337265813504001 was sent 52 h ago; messages can be changed for 48 h",
            permanent: true, failCount: 1)
        ],
        media: Media(
          localFiles: 12, localBytes: 48_213_504, uploads: 1, uploadBytes: 2_481_337,
          downloads: [
            Download(
              sha256: "5f1c0a7e3d2b4c6a8e9f0b1d2c3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e", size: 31_457_280,
              received: 8_388_608)
          ]),
        policy: Policy(
          keepMedia: "90d", mediaCacheMax: 2_147_483_648, keepMessages: nil,
          lastRun:
            "2026-12-04T12:00:00.000Z: removed 12 media file(s) (48213504 bytes), deleted 0 message(s) and 0 media no message kept; longest write lock 1.2 ms"
        ))
    }
  }
}
