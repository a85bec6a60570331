import ChatCLI
import ChatMaintenance
import ChatStore
import Foundation

/// `chatdb evict`: delete old messages by age, size or conversation, then give the
/// space back to the file system.
enum EvictCommand: ParsableCommand {
  static let name = "evict"
  static let abstract = "Delete old messages by age, size or conversation and reclaim the space."
  static let discussion: String? = """
    Policies combine: --conversation narrows everything to those conversations (alone \
    it deletes them whole); --older-than deletes messages created before now minus AGE \
    (a message exactly at the cutoff stays); --max-size then deletes the oldest \
    remaining messages until the database file should fit, or with --least-recent \
    whole conversations, least recently active first (the size after is estimated from \
    the pages the rows use: when the file still does not fit, the result says so and \
    running again deletes more); --keep-last N protects the newest N \
    messages of every conversation from all of it; --edit-history-older-than purges the \
    older versions of edited messages made before now minus AGE (the messages keep \
    their latest text; the purged text is zeroed in the file). Media files (beside the \
    file in chats-<id>.media/): --media-older-than removes those last accessed before \
    now minus AGE, --media-larger-than those over SIZE, --media-max-size the least \
    recently accessed until the rest fits; --media-only keeps the messages --older-than \
    or --conversation select and removes their media's files instead. An evicted \
    media keeps its message and thumbnail, and 'chat-sync fetch' downloads it again \
    while the relay keeps it; deleting messages deletes the media no other message \
    keeps. Outbox requests, their files, and users are never touched. Deletes run in short transactions (aiming at \(Int(Evictor.Options().targetChunkMillis)) ms, stopped \
    and redone smaller past \(Int(Evictor.Options().interruptAfterMillis)) ms) so chat-sync can keep \
    writing; an interrupted run leaves a consistent file and running it again finishes \
    the job. Freed pages go back to the file system (incremental vacuum, or one VACUUM \
    for older files after checking there is room for its copy) and the bytes really \
    freed are reported. --dry-run plans with the same planner the real run executes, \
    opens the file read-only and leaves nothing behind. A --conversation with no \
    messages is reported. Ages: 12h, 90d, 6w, 1y (365 days).
    """

  static let examples = [
    "chatdb evict --user 42 --older-than 1y --dry-run",
    "chatdb evict --user 42 --max-size 500MiB --keep-last 100 --media-max-size 2GiB",
    "chatdb evict --all --older-than 90d --edit-history-older-than 30d --jobs 2",
  ]

  struct Options: ParsableOptions {
    var store: StoreSelection
    var policy: EvictionPolicy
    var dryRun: Bool
    var chunkRows: Int?
    init(_ o: inout OptionReader) {
      store = StoreSelection(&o, all: true)
      policy = EvictionPolicy()
      policy.olderThan = o.option(
        "--older-than", valueName: "age", help: "Delete messages older than this (12h, 90d, 6w, 1y)."
      ) { text -> Int64? in
        guard let age = EvictionPolicy.age(text) else { throw InvalidValue("expected an age like 12h, 90d, 6w or 1y") }
        return age
      }
      policy.maxSize = o.option(
        "--max-size", valueName: "size", help: "Delete the oldest messages until the database file fits (e.g. 500MiB).",
        parse: Parse.size)
      policy.conversations = o.repeated(
        "--conversation", valueName: "id", help: "Only this conversation (the other user's id); alone: all of it."
      ) { text -> Int64? in
        guard let id = StoreLocation.parseUserID(text) else {
          throw InvalidValue("a conversation is the other user's id")
        }
        return id
      }
      policy.editHistoryOlderThan = o.option(
        "--edit-history-older-than", valueName: "age",
        help: "Purge the older versions of edited messages made before this age (12h, 90d, 6w, 1y)."
      ) { text -> Int64? in
        guard let age = EvictionPolicy.age(text) else { throw InvalidValue("expected an age like 12h, 90d, 6w or 1y") }
        return age
      }
      policy.keepLast =
        o.option(
          "--keep-last", valueName: "n", help: "Never leave a conversation with fewer than n messages.",
          parse: Parse.count) ?? 0
      policy.mediaOlderThan = o.option(
        "--media-older-than", valueName: "age",
        help: "Remove the files of media last accessed before this age (12h, 90d, 6w, 1y); messages stay."
      ) { text -> Int64? in
        guard let age = EvictionPolicy.age(text) else { throw InvalidValue("expected an age like 12h, 90d, 6w or 1y") }
        return age
      }
      policy.mediaMaxSize = o.option(
        "--media-max-size", valueName: "size",
        help: "Remove media files, least recently accessed first, until the rest fits (e.g. 2GiB).", parse: Parse.size)
      policy.mediaLargerThan = o.option(
        "--media-larger-than", valueName: "size", help: "Remove the files of media larger than this (e.g. 50MiB).",
        parse: Parse.size)
      policy.mediaOnly = o.flag(
        "--media-only", help: "Keep the messages --older-than or --conversation select; remove their media's files.")
      policy.leastRecent = o.flag(
        "--least-recent", help: "With --max-size: delete whole conversations, least recently active first.")
      dryRun = o.flag(
        "--dry-run", help: "Show the plan (per conversation, and the size after) without changing anything.")
      if let now = o.option(
        "--now", valueName: "date", help: "Measure ages from this time instead of now (repeatable runs, tests).",
        parse: Parse.date)
      {
        policy.now = now
      }
      chunkRows = o.option(
        "--chunk-rows", valueName: "n",
        help:
          "Rows per transaction instead of the adaptive size (which aims at \(Int(Evictor.Options().targetChunkMillis)) ms).",
        parse: Parse.count(from: 1, to: 10_000_000))
    }
    func validate() throws {
      try store.validate()
      if policy.isEmpty {
        throw ValidationError(
          "Missing a policy: '--older-than <age>', '--max-size <size>', '--conversation <id>', '--edit-history-older-than <age>' or a '--media-…' option"
        )
      }
      if policy.mediaOnly {
        if policy.olderThan == nil && policy.conversations.isEmpty {
          throw ValidationError("'--media-only' needs '--older-than <age>' or '--conversation <id>'")
        }
        if policy.maxSize != nil || policy.leastRecent || policy.keepLast > 0 {
          throw ValidationError(
            "'--media-only' goes with '--older-than' and '--conversation' only (for a size, use '--media-max-size')")
        }
      }
      if policy.leastRecent && policy.maxSize == nil {
        throw ValidationError("'--least-recent' needs '--max-size <size>'")
      }
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let targets = try options.store.targets()
    let reports = context.runEach(
      targets, jobs: options.store.jobs, label: options.dryRun ? "Planning" : "Evicting", unit: "messages"
    ) {
      target, progress in
      let names = (try? userNames(target.path)) ?? [:]
      if options.dryRun {
        let plan = try dryRun(path: target.path, policy: options.policy)
        return try FileResult(
          Result.plan(Result.Plan(plan)), text: planText(plan, path: target.path, names: names),
          row: [
            String(plan.messages), ByteCount.format(plan.fileBytes), plan.expectedSize.map(ByteCount.format) ?? "-",
          ],
          totals: ["messages": plan.messages])
      }
      let started = DispatchTime.now()
      let db = try openLatest(target.path, mode: .readWrite, for: "evict")
      var evictorOptions = Evictor.Options()
      evictorOptions.fixedChunkRows = options.chunkRows
      let result = try Evictor(database: db, options: evictorOptions).run(options.policy) { done, planned in
        progress.update(completed: done, total: planned)
      }
      let elapsed = seconds(since: started)
      return try FileResult(
        Result.evicted(Result.Evicted(result, seconds: elapsed)),
        text: resultText(result, path: target.path, names: names, seconds: elapsed),
        row: [String(result.deletedMessages), ByteCount.format(result.sizeBefore), ByteCount.format(result.sizeAfter)],
        totals: ["messages": result.deletedMessages, "bytesFreed": result.freedBytes])
    }
    context.report(
      reports,
      fleet: options.store.all
        ? [
          .init(options.dryRun ? "WOULD DELETE" : "DELETED", alignment: .right),
          .init(options.dryRun ? "SIZE" : "BEFORE", alignment: .right),
          .init(options.dryRun ? "EXPECTED" : "AFTER", alignment: .right),
        ] : nil,
      summaryLine: options.store.all
        ? "\(reports.count) file(s): \(options.dryRun ? "would delete" : "deleted") \(reports.total("messages").grouped) messages"
          + (options.dryRun ? "" : ", freed \(ByteCount.format(reports.total("bytesFreed")))")
          + "; \(reports.failedCount) failed" : nil)
  }

  // MARK: - Planning

  static func dryRun(path: String, policy: EvictionPolicy) throws -> EvictionPlan {
    let db = try openLatest(path, mode: .readOnly, for: "evict")
    do {
      return try db.read { try EvictionPlanner(database: $0).plan(policy) }
    } catch {
      throw StoreError.from(error, path: path, doing: "plan eviction for", otherwise: .readFailed)
    }
  }

  static func userNames(_ path: String) throws -> [Int64: String] {
    let db = try Database(path: path, mode: .readOnly)
    return Dictionary(
      try db.query("SELECT id, name FROM Users") { ($0.int64(0), $0.string(1)) }, uniquingKeysWith: { a, _ in a })
  }

  // MARK: - Output

  static func planText(_ plan: EvictionPlan, path: String, names: [Int64: String]) -> String {
    var text = ""
    if !plan.conversations.isEmpty {
      let rows = plan.conversations.map {
        [String($0.id), names[$0.id] ?? "", String($0.messages), $0.bytes.map(ByteCount.format) ?? "-"]
      }
      text += Table(
        columns: [
          .init("CONVERSATION", alignment: .right), .init("CONTACT"), .init("MESSAGES", alignment: .right),
          .init("BYTES", alignment: .right),
        ],
        rows: rows
      ).render()
    }
    let cutoff = plan.cutoff.map { " (older than \($0))" } ?? ""
    text +=
      "\(path): would delete \(plan.messages.grouped) messages\(cutoff) from \(plan.conversations.count) conversation(s)"
    if let bytes = plan.bytes { text += ", about \(ByteCount.format(bytes))" }
    text += "\nsize now \(ByteCount.format(plan.fileBytes)) (\(ByteCount.format(plan.freeBytes)) in free pages)"
    if let expected = plan.expectedSize { text += "; expected after: about \(ByteCount.format(expected))" }
    if let target = plan.policy.maxSize { text += "; target \(ByteCount.format(target))" }
    if plan.policy.editHistoryOlderThan != nil {
      text +=
        "\nwould purge \(plan.editVersions.grouped) older versions of edited messages (\(ByteCount.format(plan.editBytes)) of text)"
    }
    if let media = mediaPlanText(plan) { text += "\n" + media }
    if let note = plan.note { text += "\nNote: \(note)" }
    if let unknown = unknownText(plan) { text += "\nNote: \(unknown)" }
    return text
  }

  static func mediaPlanText(_ plan: EvictionPlan) -> String? {
    let media = plan.media
    guard plan.policy.evictsMedia || plan.policy.mediaOnly || !media.sweep.isEmpty else { return nil }
    var text =
      "media: would remove \(media.evict.count.grouped) file(s), \(ByteCount.format(media.evictBytes)) "
      + "(their messages and thumbnails stay), of \(media.localFiles.grouped) here (\(ByteCount.format(media.localBytes)))"
    if !media.sweep.isEmpty {
      text +=
        "\nmedia: \(media.sweep.count.grouped) no message keeps after the deletes would go, \(ByteCount.format(media.sweepBytes))"
    }
    return text
  }

  static func resultText(_ r: EvictionResult, path: String, names: [Int64: String], seconds: Double) -> String {
    var text =
      "\(path): deleted \(r.deletedMessages.grouped) messages from \(r.deletedByConversation.filter { $0.value > 0 }.count) conversation(s) "
      + "in \(r.chunks.grouped) transactions (longest held the write lock \(String(format: "%.1f", r.maxChunkMillis)) ms, "
      + "99% under \(String(format: "%.1f", r.p99ChunkMillis)) ms, \(r.slowChunks) over 50 ms)"
    text +=
      "\nfreed \(ByteCount.format(r.freedBytes)): \(ByteCount.format(r.sizeBefore)) → \(ByteCount.format(r.sizeAfter))"
    text +=
      " (reclaim: \(r.reclaim.rawValue)\(r.vacuumMillis.map { String(format: ", VACUUM held the lock %.0f ms", $0) } ?? "")) in \(String(format: "%.2f", seconds)) s"
    if let target = r.plan.policy.maxSize, let reached = r.targetReached {
      text +=
        "\ntarget \(ByteCount.format(target)): \(reached ? "reached" : "NOT reached"), database file \(ByteCount.format(r.fileSizeAfter))"
    }
    if r.plan.policy.editHistoryOlderThan != nil {
      text += "\npurged \(r.purgedEditVersions.grouped) older versions of edited messages"
    }
    if r.plan.policy.evictsMedia || r.plan.policy.mediaOnly || r.sweptMedia > 0 {
      text +=
        "\nmedia: removed \(r.evictedMedia.grouped) file(s), \(ByteCount.format(r.evictedMediaBytes)); "
        + "deleted \(r.sweptMedia.grouped) no message kept, \(ByteCount.format(r.sweptMediaBytes))"
    }
    if let note = r.note { text += "\nNote: \(note)" }
    if let unknown = unknownText(r.plan) { text += "\nNote: \(unknown)" }
    return text
  }

  /// "no messages with …" for the conversations the policy names that the file lacks.
  static func unknownText(_ plan: EvictionPlan) -> String? {
    guard !plan.unknownConversations.isEmpty else { return nil }
    let ids = plan.unknownConversations.map(String.init).joined(separator: ", ")
    return "this file has no messages in conversation(s) \(ids); nothing was planned for them"
  }

  // MARK: - Result

  /// `result`: with `--dry-run` the plan (`dryRun: true`), else what was deleted and freed.
  enum Result: CommandResult {
    case plan(Plan)
    case evicted(Evicted)

    func encode(to encoder: any Encoder) throws {
      switch self {
      case .plan(let plan): try plan.encode(to: encoder)
      case .evicted(let evicted): try evicted.encode(to: encoder)
      }
    }

    /// What `--dry-run` would delete.
    struct Plan: Encodable {
      struct Conversation: Encodable {
        var id: Int64
        var messages: Int64
        var bytes: Int64?
        var lastId: Int64
      }
      var dryRun = true
      var cutoff: String?
      var messages: Int64
      var bytes: Int64?
      var pageSize: Int64
      var fileBytes: Int64
      var usedBytes: Int64
      var freeBytes: Int64
      var expectedSize: Int64?
      var maxSize: Int64?
      var targetReachable: Bool
      var note: String?
      var unknownConversations: [Int64]
      var conversations: [Conversation]
      /// With --edit-history-older-than: the older versions that would go, and their text's bytes.
      var editVersions: Int64?
      var editBytes: Int64?
      /// Media files that would be removed (`evict*`), media rows that would go with
      /// their last message (`sweep*`), and the media files here now.
      var media: Media
    }

    struct Media: Encodable {
      var evictFiles: Int
      var evictBytes: Int64
      var sweepFiles: Int
      var sweepBytes: Int64
      var localFiles: Int
      var localBytes: Int64
    }

    /// What was deleted, how long the write lock was held, and the sizes before and after.
    struct Evicted: Encodable {
      struct Conversation: Encodable {
        var id: Int64
        var messages: Int64
      }
      var dryRun = false
      var deletedMessages: Int64
      var chunks: Int
      var maxChunkMillis: Double
      var p99ChunkMillis: Double
      var slowChunks: Int
      var interruptedChunks: Int
      var vacuumMillis: Double?
      var sizeBefore: Int64
      var sizeAfter: Int64
      var freedBytes: Int64
      var fileSizeAfter: Int64
      /// How the free pages went back to the file system (`none`, `incremental_vacuum`, `vacuum`, `automatic`).
      var reclaim: String
      var maxSize: Int64?
      var targetReached: Bool?
      var note: String?
      var unknownConversations: [Int64]
      var cutoff: String?
      var seconds: Double
      var conversations: [Conversation]
      /// With --edit-history-older-than: older versions purged (besides those that went with their message).
      var purgedEditVersions: Int64?
      /// Media files removed (their messages kept) and media deleted with their last message.
      var evictedMedia: Int
      var evictedMediaBytes: Int64
      var sweptMedia: Int
      var sweptMediaBytes: Int64
    }

    static var example: Result {
      .evicted(
        Evicted(
          deletedMessages: 120_000, chunks: 48, maxChunkMillis: 17.9, p99ChunkMillis: 17.2, slowChunks: 0,
          interruptedChunks: 0, vacuumMillis: 840, sizeBefore: 524_288_000, sizeAfter: 421_527_552,
          freedBytes: 102_760_448, fileSizeAfter: 421_527_552, reclaim: "vacuum", maxSize: 419_430_400,
          targetReached: false,
          note: "the file is 421527552 bytes, 2097152 over the target of 419430400 bytes: the plan's estimate was "
            + "short (deleted rows leave partly filled pages); running the same command again plans from the "
            + "measured size",
          unknownConversations: [12], cutoff: "2026-06-01T00:00:00.000Z", seconds: 2.431,
          conversations: [.init(id: 7, messages: 80_000), .init(id: 9, messages: 40_000)], evictedMedia: 310,
          evictedMediaBytes: 912_261_120, sweptMedia: 42, sweptMediaBytes: 88_080_384))
    }

    static var otherExamples: [Result] {
      [
        .plan(
          Plan(
            cutoff: "2026-06-01T00:00:00.000Z", messages: 120_000, bytes: 98_566_144, pageSize: 4096,
            fileBytes: 524_288_000, usedBytes: 520_093_696, freeBytes: 4_194_304, expectedSize: 419_430_400,
            maxSize: 419_430_400, targetReachable: true,
            note: "sizes are estimates: the file has no dbstat table", unknownConversations: [12],
            conversations: [
              Plan.Conversation(id: 7, messages: 80_000, bytes: 65_710_080, lastId: 7_341_120_000_123)
            ],
            media: Media(
              evictFiles: 310, evictBytes: 912_261_120, sweepFiles: 42, sweepBytes: 88_080_384, localFiles: 20_000,
              localBytes: 10_737_418_240)))
      ]
    }
  }
}

extension EvictCommand.Result.Plan {
  init(_ plan: EvictionPlan) {
    self.init(
      cutoff: plan.cutoff, messages: plan.messages, bytes: plan.bytes, pageSize: plan.pageSize,
      fileBytes: plan.fileBytes, usedBytes: plan.usedBytes, freeBytes: plan.freeBytes,
      expectedSize: plan.expectedSize, maxSize: plan.policy.maxSize, targetReachable: plan.targetReachable,
      note: plan.note, unknownConversations: plan.unknownConversations,
      conversations: plan.conversations.map {
        Conversation(id: $0.id, messages: $0.messages, bytes: $0.bytes, lastId: $0.lastID)
      },
      editVersions: plan.policy.editHistoryOlderThan == nil ? nil : plan.editVersions,
      editBytes: plan.policy.editHistoryOlderThan == nil ? nil : plan.editBytes,
      media: EvictCommand.Result.Media(
        evictFiles: plan.media.evict.count, evictBytes: plan.media.evictBytes, sweepFiles: plan.media.sweep.count,
        sweepBytes: plan.media.sweepBytes, localFiles: plan.media.localFiles, localBytes: plan.media.localBytes))
  }
}

extension EvictCommand.Result.Evicted {
  init(_ r: EvictionResult, seconds: Double) {
    self.init(
      deletedMessages: r.deletedMessages, chunks: r.chunks, maxChunkMillis: (r.maxChunkMillis * 10).rounded() / 10,
      p99ChunkMillis: (r.p99ChunkMillis * 10).rounded() / 10, slowChunks: r.slowChunks,
      interruptedChunks: r.interruptedChunks, vacuumMillis: r.vacuumMillis.map { $0.rounded() },
      sizeBefore: r.sizeBefore, sizeAfter: r.sizeAfter, freedBytes: r.freedBytes, fileSizeAfter: r.fileSizeAfter,
      reclaim: r.reclaim.rawValue, maxSize: r.plan.policy.maxSize, targetReached: r.targetReached, note: r.note,
      unknownConversations: r.plan.unknownConversations, cutoff: r.plan.cutoff,
      seconds: (seconds * 1000).rounded() / 1000,
      conversations: r.deletedByConversation.filter { $0.value > 0 }.sorted { $0.key < $1.key }.map {
        Conversation(id: $0.key, messages: $0.value)
      },
      purgedEditVersions: r.plan.policy.editHistoryOlderThan == nil ? nil : r.purgedEditVersions,
      evictedMedia: r.evictedMedia, evictedMediaBytes: r.evictedMediaBytes, sweptMedia: r.sweptMedia,
      sweptMediaBytes: r.sweptMediaBytes)
  }
}
