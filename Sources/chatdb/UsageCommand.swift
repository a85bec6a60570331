import ChatCLI
import ChatMaintenance
import ChatStore
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// `chatdb usage`: what takes the space, how much disk is left, and what to delete.
enum UsageCommand {
  static let command = Command(
    name: "usage",
    abstract: "Show what takes the space in chat databases, the free disk, and what eviction would free.",
    discussion: """
      For one file: the database, its -wal and -shm, free pages, every table and index \
      (dbstat), and the largest conversations (messages, bytes, oldest and newest, \
      pending and failed outbox requests). A conversation's bytes are its message text \
      plus 110 bytes a row, scaled so all conversations add up to the pages Messages and \
      its indexes use. With --all: every chats-*.db in the data folder, largest first, \
      and a summary. The disk holding the data folder is 'low' below 10% or 1 GiB free \
      and 'critical' below 2% or 200 MiB free (whichever figure is larger), unless \
      --warn-below / --critical-below say otherwise; when it is not 'ok', suggestions \
      show what 'chatdb evict' would free, from the same planner as 'evict --dry-run'. \
      --check makes the exit code the level: 0 ok, 2 low, 3 critical.
      """,
    options: StoreOptions.options(all: true) + [
      .value("--warn-below", valueName: "size|percent", help: "Free space below which the disk is 'low' (default 10% or 1GiB)."),
      .value("--critical-below", valueName: "size|percent", help: "Free space below which the disk is 'critical' (default 2% or 200MiB)."),
      .flag("--check", help: "Exit with the disk level: 0 ok, 2 low, 3 critical."),
      .value("--top", valueName: "n", help: "Conversations (or files, with --all) to list (default 10)."),
      .value("--now", valueName: "date", help: "Measure the suggested ages from this time instead of now."),
    ],
    run: run
  )

  static func threshold(_ text: String) throws -> DiskThreshold? {
    if text.hasSuffix("%") {
      guard let p = Double(text.dropLast()), p >= 0, p <= 100 else { throw InvalidValue("a percentage is from 0% to 100%") }
      return .percent(p)
    }
    guard let bytes = ByteCount.parse(text) else { throw InvalidValue("expected a size like 1GiB or a percentage like 10%") }
    return .bytes(bytes)
  }

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    let target = try StoreOptions.target(arguments)
    var thresholds = DiskThresholds.default
    if let low = try arguments.value("--warn-below", as: threshold) { thresholds.low = [low] }
    if let critical = try arguments.value("--critical-below", as: threshold) { thresholds.critical = [critical] }
    let top = try arguments.value("--top", as: StoreOptions.count) ?? 10
    var now = Date()
    if let text = try arguments.value("--now", as: StoreOptions.time), let ms = Timestamp.milliseconds(from: text) {
      now = Date(timeIntervalSince1970: Double(ms) / 1000)
    }
    let json = arguments.flag("--json")
    let terminal = Terminal.isTerminal(STDOUT_FILENO)

    var reports: [(path: String, result: Result<StorageReport, StoreError>)] = []
    let diskPath: String
    switch target {
    case .file(let path, _):
      let report = try StorageReport.measure(path: path)
      reports = [(path, .success(report))]
      let folder = (path as NSString).deletingLastPathComponent
      diskPath = folder.isEmpty ? "." : folder
    case .all(let dataDirectory):
      let files = try StoreLocation.databaseFiles(in: dataDirectory)
      let progress = Progress(label: "Measuring", total: Int64(files.count), unit: "files")
      for (index, path) in files.enumerated() {
        do {
          reports.append((path, .success(try StorageReport.measure(path: path))))
        } catch {
          reports.append((path, .failure(StoreError.from(error, path: path, doing: "measure"))))
        }
        progress.update(completed: Int64(index + 1))
      }
      progress.finish()
      reports.sort { a, b in
        let sa = (try? a.result.get().totalBytes) ?? FileSystem.databaseSize(atPath: a.path)
        let sb = (try? b.result.get().totalBytes) ?? FileSystem.databaseSize(atPath: b.path)
        return (sa, b.path) > (sb, a.path)
      }
      diskPath = dataDirectory
    }

    let disk = try DiskSpace.of(diskPath)
    let level = thresholds.level(for: disk)
    let lowBytes = thresholds.lowBytes(for: disk)
    let criticalBytes = thresholds.criticalBytes(for: disk)
    var suggestions: [(path: String, items: [StorageSuggestion])] = []
    if level != .ok {
      let needed = max(max(lowBytes, criticalBytes) - disk.available, 0)
      for item in reports.prefix(3) {
        guard case .success = item.result, let items = try? StorageSuggestion.suggest(path: item.path, needed: needed, now: now) else { continue }
        if !items.isEmpty { suggestions.append((item.path, items)) }
      }
    }
    let failed = reports.filter { if case .failure = $0.result { true } else { false } }

    if json {
      var object: [String: JSONValue] = [
        "disk": .object([
          "path": .string(diskPath), "available": .int(disk.available), "total": .int(disk.total), "level": .string(level.rawValue),
          "lowBelow": .int(lowBytes), "criticalBelow": .int(criticalBytes),
        ]),
        "suggestions": .array(
          suggestions.flatMap { entry in
            entry.items.map {
              .object([
                "file": .string(entry.path), "command": .string(commandLine(entry.path, $0)), "frees": .int($0.frees),
                "messages": .int($0.messages), "enough": .bool($0.enough),
              ])
            }
          }),
      ]
      let items: [JSONValue] = reports.map { item in
        switch item.result {
        case .success(let report): return reportJSON(report, top: target.isAll ? top : Int.max)
        case .failure(let error):
          return .object(["path": .string(item.path), "error": .string(error.message), "exitCode": .int(Int64(error.exitCode))])
        }
      }
      if target.isAll {
        let good = reports.compactMap { try? $0.result.get() }
        object["files"] = .array(items)
        object["summary"] = .object([
          "files": .int(Int64(reports.count)), "failed": .int(Int64(failed.count)),
          "totalBytes": .int(good.reduce(0) { $0 + $1.totalBytes }), "freeBytes": .int(good.reduce(0) { $0 + $1.freeBytes }),
          "messages": .int(good.reduce(0) { $0 + $1.messages }),
        ])
      } else if case .object(let fields) = items[0] {
        object.merge(fields) { a, _ in a }
      }
      print(JSONValue.object(object).render())
    } else {
      var text = ""
      switch target {
      case .file:
        if case .success(let report) = reports[0].result { text += fileText(report, top: top, bars: terminal) }
      case .all(let dataDirectory):
        text += fleetText(reports, top: top, bars: terminal)
        let good = reports.compactMap { try? $0.result.get() }
        text +=
          "\(reports.count) file(s) in \(dataDirectory): \(ByteCount.format(good.reduce(0) { $0 + $1.totalBytes })), "
          + "\(ByteCount.format(good.reduce(0) { $0 + $1.freeBytes })) in free pages, \(good.reduce(0) { $0 + $1.messages }) messages"
          + (failed.isEmpty ? "" : "; \(failed.count) unreadable") + "\n"
      }
      let percent = disk.total > 0 ? Double(disk.available) * 100 / Double(disk.total) : 0
      text +=
        "\nDisk: \(ByteCount.format(disk.available)) free of \(ByteCount.format(disk.total)) (\(String(format: "%.1f", percent))%) at \(diskPath): "
        + "\(level.rawValue.uppercased()) (low below \(ByteCount.format(lowBytes)), critical below \(ByteCount.format(criticalBytes)))\n"
      if !suggestions.isEmpty {
        text += "To free space (\(ByteCount.format(max(max(lowBytes, criticalBytes) - disk.available, 0))) more is needed for ok):\n"
        for entry in suggestions {
          for s in entry.items {
            text += "  \(commandLine(entry.path, s))  frees \(ByteCount.format(s.frees)) (\(s.messages) messages)\(s.enough ? ", enough" : "")\n"
          }
        }
      } else if level != .ok {
        text += "Nothing old enough to suggest evicting; free space elsewhere on the disk.\n"
      }
      print(text, terminator: "")
    }
    for item in failed {
      if case .failure(let error) = item.result { FileHandle.standardError.write(Data("Error: \(error.message)\n".utf8)) }
    }
    if arguments.flag("--check") && level != .ok { return level == .critical ? ChatExitCode.diskCritical : ChatExitCode.diskLow }
    return failed.isEmpty ? ChatExitCode.success : ChatExitCode.partialFailure
  }

  static func commandLine(_ path: String, _ suggestion: StorageSuggestion) -> String {
    let target = StoreLocation.userID(fromFileName: path).map { "--user \($0)" } ?? "--db \(path)"
    return "chatdb evict \(target) \(suggestion.arguments.joined(separator: " "))"
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
      Size:           \(ByteCount.format(r.totalBytes)) (database \(ByteCount.format(r.fileBytes)), -wal \(ByteCount.format(r.walBytes)), -shm \(ByteCount.format(r.shmBytes)))
      Free pages:     \(r.freePages) × \(r.pageSize) B = \(ByteCount.format(r.freeBytes)) reclaimable (auto_vacuum \(r.autoVacuum)\(r.pointerMapBytes > 0 ? ", pointer-map pages \(ByteCount.format(r.pointerMapBytes))" : ""))
      Contents:       \(r.messages) messages in \(r.conversations.filter { $0.messages > 0 }.count) conversations, \(r.requests) outbox requests


      """
    text += Table(
      columns: [.init("TABLE/INDEX"), .init("OF TABLE"), .init("BYTES", alignment: .right), .init("SIZE", alignment: .right)],
      rows: r.btrees.map { [$0.name, $0.isIndex ? $0.table : "", String($0.bytes), ByteCount.format($0.bytes)] }
    ).render()
    let shown = Array(r.conversations.prefix(top))
    if !shown.isEmpty {
      text += "\nTop \(shown.count) of \(r.conversations.count) conversations:\n"
      let largest = shown.first?.bytes ?? 0
      var columns: [Table.Column] = [
        .init("CONVERSATION", alignment: .right), .init("CONTACT"), .init("MESSAGES", alignment: .right), .init("SIZE", alignment: .right),
        .init("OLDEST"), .init("NEWEST"), .init("PENDING", alignment: .right), .init("FAILED", alignment: .right),
      ]
      if bars { columns.append(.init("")) }
      text += Table(
        columns: columns,
        rows: shown.map {
          [
            String($0.id), $0.name ?? "", String($0.messages), ByteCount.format($0.bytes), $0.oldest.map { String($0.prefix(10)) } ?? "-",
            $0.newest.map { String($0.prefix(10)) } ?? "-", String($0.pending), String($0.failed), bars ? bar($0.bytes, of: largest) : "",
          ]
        }
      ).render()
    }
    return text
  }

  static func fleetText(_ reports: [(path: String, result: Result<StorageReport, StoreError>)], top: Int, bars: Bool) -> String {
    let largest = reports.compactMap { try? $0.result.get().totalBytes }.max() ?? 0
    var columns: [Table.Column] = [
      .init("FILE"), .init("SIZE", alignment: .right), .init("FREE PAGES", alignment: .right), .init("MESSAGES", alignment: .right),
      .init("CONVERSATIONS", alignment: .right), .init("OUTBOX", alignment: .right),
    ]
    if bars { columns.append(.init("")) }
    let rows: [[String]] = reports.prefix(top).map { item in
      let name = (item.path as NSString).lastPathComponent
      switch item.result {
      case .success(let r):
        return [
          name, ByteCount.format(r.totalBytes), ByteCount.format(r.freeBytes), String(r.messages),
          String(r.conversations.filter { $0.messages > 0 }.count), String(r.requests), bars ? bar(r.totalBytes, of: largest) : "",
        ]
      case .failure(let error):
        return [name, ByteCount.format(FileSystem.databaseSize(atPath: item.path)), "-", "-", "-", "ERROR: \(error.message)"]
      }
    }
    return Table(columns: columns, rows: rows).render()
  }

  // MARK: - JSON

  static func reportJSON(_ r: StorageReport, top: Int) -> JSONValue {
    .object([
      "path": .string(r.path), "fileBytes": .int(r.fileBytes), "walBytes": .int(r.walBytes), "shmBytes": .int(r.shmBytes),
      "totalBytes": .int(r.totalBytes), "pageSize": .int(r.pageSize), "pageCount": .int(r.pageCount), "freePages": .int(r.freePages),
      "freeBytes": .int(r.freeBytes), "pointerMapBytes": .int(r.pointerMapBytes), "autoVacuum": .string(r.autoVacuum), "messages": .int(r.messages), "requests": .int(r.requests),
      "tables": .array(
        r.btrees.map {
          .object(["name": .string($0.name), "table": .string($0.table), "index": .bool($0.isIndex), "bytes": .int($0.bytes)])
        }),
      "conversations": .array(
        r.conversations.prefix(top).map {
          .object([
            "id": .int($0.id), "name": $0.name.map { .string($0) } ?? .null, "messages": .int($0.messages),
            "bytes": .int($0.bytes), "contentBytes": .int($0.contentBytes), "oldest": $0.oldest.map { .string($0) } ?? .null,
            "newest": $0.newest.map { .string($0) } ?? .null, "pending": .int($0.pending), "failed": .int($0.failed),
          ])
        }),
    ])
  }
}

extension StoreOptions.Target {
  var isAll: Bool { if case .all = self { true } else { false } }
}
