import ChatCLI
import ChatMaintenance
import ChatStore
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `chatdb usage`: what takes the space, how much disk is left, and what to delete.
enum UsageCommand: ParsableCommand {
  static let name = "usage"
  static let abstract = "Show what takes the space in chat databases, the free disk, and what eviction would free."
  static let discussion: String? = """
    For one file: the database and its -wal (the -shm is shared memory, shown but never \
    counted), free pages and what a VACUUM would give back, every table and index \
    (dbstat), and the largest conversations (messages, bytes, oldest and newest, \
    pending and failed outbox requests). A conversation's bytes are its message text \
    plus 110 bytes a row, scaled so all conversations add up to the pages Messages and \
    its indexes use. With --all: every chats-*.db in the data folder, in user-id order, \
    and a summary. The disk holding the data folder is 'low' below 10% or 1 GiB free \
    and 'critical' below 2% or 200 MiB free (whichever figure is larger), unless \
    --warn-below / --critical-below say otherwise (a size with a unit, or a percentage; \
    critical must be below low); when it is not 'ok', suggestions show what \
    'chatdb evict' would free, as commands that run as printed, from the same planner \
    as 'evict --dry-run'. --check makes the exit code the level: 0 ok, 2 low, 3 critical.
    """

  static let examples = [
    "chatdb usage --user 42",
    "chatdb usage --all --top 3",
    "chatdb usage --all --check --warn-below 10% --critical-below 2%",
  ]

  struct Options: ParsableOptions {
    var store: StoreSelection
    var low: DiskThreshold?
    var critical: DiskThreshold?
    var check: Bool
    var top: Int
    var now: Date?
    var nowText: String?
    init(_ o: inout OptionReader) {
      store = StoreSelection(&o, all: true)
      low = o.option(
        "--warn-below", valueName: "size|percent",
        help: "Free space below which the disk is 'low' (default 10% or 1GiB).",
        parse: UsageCommand.threshold)
      critical = o.option(
        "--critical-below", valueName: "size|percent",
        help: "Free space below which the disk is 'critical' (default 2% or 200MiB).",
        parse: UsageCommand.threshold)
      check = o.flag("--check", help: "Exit with the disk level: 0 ok, 2 low, 3 critical.")
      top =
        o.option("--top", valueName: "n", help: "Conversations to list per file (default 10).", parse: Parse.count)
        ?? 10
      nowText = o.option(
        "--now", valueName: "date", help: "Measure the suggested ages from this time instead of now.", parse: Parse.time
      )
      now = nowText.flatMap { try? Parse.date($0) }
    }
    func validate() throws {
      try store.validate()
      var inverted = false
      if case .bytes(let l)? = low, case .bytes(let c)? = critical { inverted = c >= l && c > 0 }
      if case .percent(let l)? = low, case .percent(let c)? = critical { inverted = c >= l && c > 0 }
      if inverted {
        throw ValidationError("'--critical-below <size|percent>' must be below '--warn-below <size|percent>'")
      }
    }
  }

  static func threshold(_ text: String) throws -> DiskThreshold? {
    if text.hasSuffix("%") {
      guard let p = Double(text.dropLast()), p >= 0, p <= 100 else {
        throw InvalidValue("a percentage is from 0% to 100%")
      }
      return .percent(p)
    }
    guard text.last?.isLetter == true, let bytes = ByteCount.parse(text) else {
      throw InvalidValue("expected a size with a unit like 1GiB, or a percentage like 10%")
    }
    return .bytes(bytes)
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    var thresholds = DiskThresholds.default
    if let low = options.low { thresholds.low = [low] }
    if let critical = options.critical { thresholds.critical = [critical] }
    let targets = try options.store.targets()
    let diskPath = options.store.all ? options.store.dataDirectory : FileSystem.parentFolder(of: targets[0].path)
    let disk = try DiskSpace.of(diskPath)
    let level = thresholds.level(for: disk)
    let lowBytes = thresholds.lowBytes(for: disk)
    let criticalBytes = thresholds.criticalBytes(for: disk)
    // Both given in different units: compare them on this disk (0 and 0 means never warn).
    if options.low != nil && options.critical != nil && criticalBytes >= lowBytes && criticalBytes > 0 {
      throw ValidationError(
        "'--critical-below' (\(ByteCount.format(criticalBytes)) here) must be below '--warn-below' (\(ByteCount.format(lowBytes)))"
      )
    }
    let terminal = context.stdout.isTerminal && !options.store.all
    let reports = context.runEach(targets, jobs: options.store.jobs, label: "Measuring") { target, _ in
      let report = try StorageReport.measure(path: target.path)
      return try FileResult(
        Result(report, top: options.store.all ? options.top : Int.max),
        text: fileText(report, top: options.top, bars: terminal),
        row: [
          ByteCount.format(report.totalBytes), ByteCount.format(report.reclaimableBytes), String(report.messages),
          String(report.conversations.filter { $0.messages > 0 }.count), String(report.requests),
        ],
        totals: [
          "totalBytes": report.totalBytes, "freeBytes": report.freeBytes, "reclaimableBytes": report.reclaimableBytes,
          "messages": report.messages,
        ])
    }

    // Suggestions for the largest files when the disk is not ok.
    var suggestions: [(target: FileTarget, items: [StorageSuggestion])] = []
    if level != .ok {
      let needed = max(max(lowBytes, criticalBytes) - disk.available, 0)
      let largest = reports.filter(\.ok).sorted { ($0.totalBytes, $1.target.path) > ($1.totalBytes, $0.target.path) }
        .prefix(3)
      for item in largest {
        guard
          let items = try? StorageSuggestion.suggest(
            path: item.target.path, needed: needed, now: options.now ?? Date()),
          !items.isEmpty
        else { continue }
        suggestions.append((item.target, items))
      }
    }
    var text = ""
    if options.store.all {
      text +=
        "\(reports.count) file(s) in \(options.store.dataDirectory): \(ByteCount.format(reports.total("totalBytes"))), "
        + "about \(ByteCount.format(reports.total("reclaimableBytes"))) reclaimable by vacuum, \(reports.total("messages").grouped) messages"
        + (reports.failedCount == 0 ? "" : "; \(reports.failedCount) unreadable") + "\n"
    }
    let percent = disk.total > 0 ? Double(disk.available) * 100 / Double(disk.total) : 0
    text +=
      "Disk: \(ByteCount.format(disk.available)) free of \(ByteCount.format(disk.total)) (\(String(format: "%.1f", percent))%) at \(diskPath): "
      + "\(level.rawValue.uppercased()) (low below \(ByteCount.format(lowBytes)), critical below \(ByteCount.format(criticalBytes)))"
    if !suggestions.isEmpty {
      text +=
        "\nTo free space (\(ByteCount.format(max(max(lowBytes, criticalBytes) - disk.available, 0))) more is needed for ok):"
      for entry in suggestions {
        for s in entry.items {
          text +=
            "\n  \(commandLine(entry.target, s, options))  frees \(ByteCount.format(s.frees)) (\(s.messages) messages)\(s.enough ? ", enough" : "")"
        }
      }
    } else if level != .ok {
      text += "\nNothing old enough to suggest evicting; free space elsewhere on the disk."
    }
    context.report(
      reports,
      fleet: options.store.all
        ? [
          .init("SIZE", alignment: .right), .init("RECLAIMABLE", alignment: .right),
          .init("MESSAGES", alignment: .right),
          .init("CONVERSATIONS", alignment: .right), .init("OUTBOX", alignment: .right),
        ] : nil,
      summary: Summary(
        disk: .init(
          path: diskPath, available: disk.available, total: disk.total, level: level.rawValue, lowBelow: lowBytes,
          criticalBelow: criticalBytes),
        suggestions: suggestions.flatMap { entry in
          entry.items.map {
            .init(
              path: entry.target.path, command: commandLine(entry.target, $0, options), frees: $0.frees,
              messages: $0.messages, enough: $0.enough)
          }
        }),
      // A file that could not be measured gets its error alone, not a disk report after it.
      summaryLine: options.store.all || reports.failedCount < reports.count ? text : nil)
    if options.check && level != .ok && context.status == .success {
      context.exit(level == .critical ? .diskCritical : .diskLow)
    }
  }

  /// A `chatdb evict` command line that runs as printed: the same data folder or path,
  /// and the same `--now`.
  static func commandLine(_ target: FileTarget, _ suggestion: StorageSuggestion, _ options: Options) -> String {
    var words = ["chatdb", "evict"]
    if options.store.db != nil {
      words += ["--db", target.path]
    } else if let user = target.userID {
      words += ["--data-dir", options.store.dataDirectory, "--user", String(user)]
    } else {
      words += ["--db", target.path]
    }
    words += suggestion.arguments
    if let now = options.nowText { words += ["--now", now] }
    return words.map(shellQuoted).joined(separator: " ")
  }

  // MARK: - Text

  static func bar(_ value: Int64, of largest: Int64, width: Int = 20) -> String {
    guard largest > 0 else { return "" }
    let eighths = Int((Double(value) / Double(largest) * Double(width * 8)).rounded())
    let blocks = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"]
    return String(repeating: "█", count: eighths / 8) + blocks[eighths % 8]
  }

  static func fileText(_ r: StorageReport, top: Int, bars: Bool) -> String {
    var text = """
      File:           \(r.path)
      Size:           \(ByteCount.format(r.totalBytes)) (database \(ByteCount.format(r.fileBytes)), -wal \(ByteCount.format(r.walBytes)); -shm \(ByteCount.format(r.shmBytes)) of shared memory not counted)
      Free pages:     \(r.freePages) × \(r.pageSize) B = \(ByteCount.format(r.freeBytes)) (auto_vacuum \(r.autoVacuum)\(r.pointerMapBytes > 0 ? ", pointer-map pages \(ByteCount.format(r.pointerMapBytes))" : ""))
      Unused in pages: \(ByteCount.format(r.unusedBytes)) (fragmentation, with free pages \(ByteCount.format(r.fragmentedBytes)))
      Reclaimable:    about \(ByteCount.format(r.reclaimableBytes)) by 'chatdb vacuum'
      Contents:       \(r.messages.grouped) messages in \(r.conversations.filter { $0.messages > 0 }.count) conversations, \(r.requests.grouped) outbox requests
      Search index:   \(ByteCount.format(r.searchIndexBytes)) (MessageSearch, MessageSearchCJK, RequestSearch: FTS5 shadow tables)
      Edit history:   \(ByteCount.format(r.editHistoryBytes)) (MessageEdits: the versions edits replaced)


      """
    text += Table(
      columns: [
        .init("TABLE/INDEX"), .init("OF TABLE"), .init("BYTES", alignment: .right), .init("SIZE", alignment: .right),
        .init("UNUSED", alignment: .right),
      ],
      rows: r.btrees.map {
        [
          $0.name, $0.isIndex ? $0.table : "", String($0.bytes), ByteCount.format($0.bytes),
          ByteCount.format($0.unusedBytes),
        ]
      }
    ).render()
    let shown = Array(r.conversations.prefix(top))
    if !shown.isEmpty {
      text += "\nTop \(shown.count) of \(r.conversations.count) conversations:\n"
      let largest = shown.first?.bytes ?? 0
      var columns: [Table.Column] = [
        .init("CONVERSATION", alignment: .right), .init("CONTACT"), .init("MESSAGES", alignment: .right),
        .init("SIZE", alignment: .right),
        .init("OLDEST"), .init("NEWEST"), .init("PENDING", alignment: .right), .init("FAILED", alignment: .right),
      ]
      if bars { columns.append(.init("")) }
      text += Table(
        columns: columns,
        rows: shown.map {
          [
            String($0.id), $0.name ?? "", String($0.messages), ByteCount.format($0.bytes),
            $0.oldest.map { String($0.prefix(10)) } ?? "-",
            $0.newest.map { String($0.prefix(10)) } ?? "-", String($0.pending), String($0.failed),
            bars ? bar($0.bytes, of: largest) : "",
          ]
        }
      ).render()
    }
    if let media = r.media { text += mediaText(media, top: top) }
    return text
  }

  static func mediaText(_ m: MediaUsage, top: Int) -> String {
    var text =
      "\nMedia:          \(m.localFiles.grouped) files here, \(ByteCount.format(m.localBytes)) "
      + "(the folder holds \(ByteCount.format(m.folderBytes)) on disk); "
      + "\(m.outboxFiles.grouped) of unsent messages (\(ByteCount.format(m.outboxBytes))), never evicted\n"
    guard m.localFiles + m.kinds.reduce(0, { $0 + $1.elsewhere }) > 0 else { return text }
    text += Table(
      columns: [
        .init("KIND"), .init("FILES", alignment: .right), .init("SIZE", alignment: .right),
        .init("NOT HERE", alignment: .right), .init("THEIR SIZE", alignment: .right),
      ],
      rows: m.kinds.map {
        [
          $0.kind.rawValue, String($0.localFiles), ByteCount.format($0.localBytes), String($0.elsewhere),
          ByteCount.format($0.elsewhereBytes),
        ]
      }
    ).render()
    if !m.conversations.isEmpty {
      text += "\nMedia by conversation:\n"
      text += Table(
        columns: [
          .init("CONVERSATION", alignment: .right), .init("FILES", alignment: .right), .init("SIZE", alignment: .right),
        ],
        rows: m.conversations.prefix(top).map { [String($0.id), String($0.files), ByteCount.format($0.bytes)] }
      ).render()
    }
    if !m.largest.isEmpty {
      text += "\nLargest media files:\n"
      text += Table(
        columns: [.init("SHA256"), .init("TYPE"), .init("SIZE", alignment: .right), .init("LAST ACCESSED")],
        rows: m.largest.prefix(top).map {
          [String($0.sha256.prefix(16)), $0.mime, ByteCount.format($0.size), String($0.lastAccessedAt.prefix(10))]
        }
      ).render()
    }
    for policy in m.policies {
      text +=
        "\n'chatdb evict \(policy.arguments.joined(separator: " "))' would remove \(policy.files.grouped) file(s), \(ByteCount.format(policy.bytes))"
    }
    return text
  }

  // MARK: - JSON

  /// `result`: where the file's bytes go, table by table and conversation by conversation.
  struct Result: CommandResult {
    struct Table: Encodable {
      var name: String
      var table: String
      var index: Bool
      var bytes: Int64
      var unusedBytes: Int64
    }
    struct Conversation: Encodable {
      var id: Int64
      var name: String?
      var messages: Int64
      var bytes: Int64
      var contentBytes: Int64
      var oldest: String?
      var newest: String?
      var pending: Int64
      var failed: Int64
    }
    var fileBytes: Int64
    var walBytes: Int64
    var shmBytes: Int64
    var totalBytes: Int64
    var pageSize: Int64
    var pageCount: Int64
    var freePages: Int64
    var freeBytes: Int64
    var unusedBytes: Int64
    var fragmentedBytes: Int64
    var reclaimableBytes: Int64
    var pointerMapBytes: Int64
    var autoVacuum: String
    var messages: Int64
    var requests: Int64
    var searchIndexBytes: Int64
    /// Bytes of `MessageEdits`, the versions edits replaced.
    var editHistoryBytes: Int64
    var tables: [Table]
    /// The largest first; with `--all`, the `--top` largest.
    var conversations: [Conversation]
    /// The media folder (null before migration 0009): files here by kind, by
    /// conversation and the largest, and what `evict --media-older-than` would free.
    var media: Media?

    struct Media: Encodable {
      struct Kind: Encodable {
        var kind: String
        var localFiles: Int
        var localBytes: Int64
        /// Media known here but not downloaded, or evicted.
        var elsewhere: Int
        var elsewhereBytes: Int64
      }
      struct Conversation: Encodable {
        var id: Int64
        var files: Int
        var bytes: Int64
      }
      struct File: Encodable {
        var sha256: String
        var mime: String
        var size: Int64
        var lastAccessedAt: String
      }
      struct Policy: Encodable {
        var command: String
        var files: Int
        var bytes: Int64
      }
      var localFiles: Int
      var localBytes: Int64
      var folderBytes: Int64
      var outboxFiles: Int
      var outboxBytes: Int64
      var kinds: [Kind]
      var conversations: [Conversation]
      var largest: [File]
      var policies: [Policy]
    }

    static var example: Result {
      Result(
        fileBytes: 52_428_800, walBytes: 4_120_032, shmBytes: 32_768, totalBytes: 56_548_832, pageSize: 4096,
        pageCount: 12_800, freePages: 256, freeBytes: 1_048_576, unusedBytes: 2_211_840, fragmentedBytes: 3_260_416,
        reclaimableBytes: 1_310_720, pointerMapBytes: 0, autoVacuum: "incremental", messages: 180_000,
        requests: 3, searchIndexBytes: 9_437_184, editHistoryBytes: 40_960,
        tables: [Table(name: "Messages", table: "Messages", index: false, bytes: 31_457_280, unusedBytes: 1_572_864)],
        conversations: [
          Conversation(
            id: 7, name: "Ada", messages: 120_000, bytes: 25_165_824, contentBytes: 14_680_064,
            oldest: "2025-01-03T08:15:00.000Z", newest: "2026-12-01T21:40:12.500Z", pending: 1, failed: 0)
        ],
        media: Media(
          localFiles: 1_200, localBytes: 2_147_483_648, folderBytes: 2_150_629_376, outboxFiles: 1,
          outboxBytes: 2_481_337,
          kinds: [
            .init(
              kind: "image", localFiles: 1_100, localBytes: 1_073_741_824, elsewhere: 300, elsewhereBytes: 943_718_400)
          ],
          conversations: [.init(id: 7, files: 800, bytes: 1_610_612_736)],
          largest: [
            .init(
              sha256: "5f1c0a7e3d2b4c6a8e9f0b1d2c3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e", mime: "video/mp4",
              size: 104_857_600, lastAccessedAt: "2026-03-02T18:00:00.000Z")
          ],
          policies: [.init(command: "chatdb evict --media-older-than 90d", files: 640, bytes: 1_288_490_188)]))
    }

    static var summaryExample: (any Encodable & Sendable)? {
      Summary(
        disk: .init(
          path: "/home/me/.local/share/chatdb", available: 1_073_741_824, total: 274_877_906_944, level: "low",
          lowBelow: 27_487_790_694, criticalBelow: 5_497_558_138),
        suggestions: [
          .init(
            path: "/home/me/.local/share/chatdb/chats-42.db",
            command: "chatdb evict --user 42 --older-than 180d", frees: 18_874_368, messages: 61_000,
            enough: false)
        ])
    }
  }

  /// The envelope's `summary` beside the file counts: the disk and what to evict.
  struct Summary: Encodable, Sendable {
    struct Disk: Encodable, Sendable {
      var path: String
      var available: Int64
      var total: Int64
      var level: String
      var lowBelow: Int64
      var criticalBelow: Int64
    }
    struct Suggestion: Encodable, Sendable {
      var path: String
      var command: String
      var frees: Int64
      var messages: Int64
      var enough: Bool
    }
    var disk: Disk
    var suggestions: [Suggestion]
  }
}

extension UsageCommand.Result {
  init(_ r: StorageReport, top: Int) {
    self.init(
      fileBytes: r.fileBytes, walBytes: r.walBytes, shmBytes: r.shmBytes, totalBytes: r.totalBytes,
      pageSize: r.pageSize, pageCount: r.pageCount, freePages: r.freePages, freeBytes: r.freeBytes,
      unusedBytes: r.unusedBytes, fragmentedBytes: r.fragmentedBytes, reclaimableBytes: r.reclaimableBytes,
      pointerMapBytes: r.pointerMapBytes, autoVacuum: r.autoVacuum, messages: r.messages, requests: r.requests,
      searchIndexBytes: r.searchIndexBytes, editHistoryBytes: r.editHistoryBytes,
      tables: r.btrees.map {
        Table(name: $0.name, table: $0.table, index: $0.isIndex, bytes: $0.bytes, unusedBytes: $0.unusedBytes)
      },
      conversations: r.conversations.prefix(top).map {
        Conversation(
          id: $0.id, name: $0.name, messages: $0.messages, bytes: $0.bytes, contentBytes: $0.contentBytes,
          oldest: $0.oldest, newest: $0.newest, pending: $0.pending, failed: $0.failed)
      },
      media: r.media.map { m in
        Media(
          localFiles: m.localFiles, localBytes: m.localBytes, folderBytes: m.folderBytes, outboxFiles: m.outboxFiles,
          outboxBytes: m.outboxBytes,
          kinds: m.kinds.map {
            .init(
              kind: $0.kind.rawValue, localFiles: $0.localFiles, localBytes: $0.localBytes, elsewhere: $0.elsewhere,
              elsewhereBytes: $0.elsewhereBytes)
          },
          conversations: m.conversations.prefix(top).map { .init(id: $0.id, files: $0.files, bytes: $0.bytes) },
          largest: m.largest.prefix(top).map {
            .init(sha256: $0.sha256, mime: $0.mime, size: $0.size, lastAccessedAt: $0.lastAccessedAt)
          },
          policies: m.policies.map {
            .init(command: "chatdb evict " + $0.arguments.joined(separator: " "), files: $0.files, bytes: $0.bytes)
          })
      })
  }
}

extension FileReport {
  /// The measured size, for ordering suggestions (0 when the file failed).
  fileprivate var totalBytes: Int64 { ((try? outcome.get().totals["totalBytes"]) ?? nil) ?? 0 }
}

/// `text` quoted for a POSIX shell when it holds anything but safe characters.
func shellQuoted(_ text: String) -> String {
  let safe = text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_./=:,+@%".contains($0)) }
  return safe && !text.isEmpty ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
}
