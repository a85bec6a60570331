import ChatCLI
import ChatStore
import ChatSync

/// `chat-sync status`: connection, outbox, last sync, cursor.
enum StatusCommand: ParsableCommand {
  static let name = "status"
  static let abstract = "Show the sync state: connection, outbox counts, last sync, cursor."

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
    for request in failed {
      let when =
        request.isPermanentlyFailed
        ? "failed for good, 'chat-sync retry \(request.requestID)' sends it again"
        : "retried at \(request.nextAttemptAt ?? "")"
      lines.append(
        "  request \(request.requestID) to user \(request.toUserID): \(request.failReason ?? "failed") (\(when))")
    }
    options.file.report(
      context,
      json: .object([
        "running": .bool(running), "state": .string(state), "lastSyncAt": lastSync.map { .string($0) } ?? .null,
        "cursor": .object(["messages": .int(cursor.messages), "updates": .int(cursor.updates)]),
        "failed": .array(
          failed.map {
            .object([
              "requestId": .int($0.requestID), "toUserId": .int($0.toUserID),
              "reason": $0.failReason.map { .string($0) } ?? .null,
              "permanent": .bool($0.isPermanentlyFailed), "failCount": .int(Int64($0.failCount)),
            ])
          }),
        "outbox": .object(
          Dictionary(
            uniqueKeysWithValues: ["PENDING", "SENT", "FAILED", "permanent"].map {
              ($0, JSONValue.int(Int64(counts[$0] ?? 0)))
            })),
      ]),
      text: lines.joined(separator: "\n"))
  }
}
