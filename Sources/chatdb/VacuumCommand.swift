import ChatCLI
import ChatMaintenance
import ChatStore

/// `chatdb vacuum`: rebuild a file without its free pages, or copy it compacted.
enum VacuumCommand: ParsableCommand {
  static let name = "vacuum"
  static let abstract =
    "Rebuild a chat database without its free pages (VACUUM), or write a compacted copy (VACUUM INTO)."
  static let discussion: String? = """
    First checks that the file's folder (or the --into folder) and the temporary \
    folder each have room for a full copy; reports the file sizes before and after. \
    VACUUM holds the write lock while it runs: chat-sync waits. --into writes a new \
    file (mode 0600) and leaves the original as it was. In place, it also tidies the \
    media folder (chats-<id>.media/): files no media row keeps (left by a kill between a \
    row's change and its file's, or a copy cut short) are removed, and media no message \
    names are deleted with their files ('chatdb check' lists both).
    """

  static let examples = [
    "chatdb vacuum --user 42",
    "chatdb vacuum --all",
    "chatdb vacuum --user 42 --into /backups/chats-42.db",
  ]

  struct Options: ParsableOptions {
    var store: StoreSelection
    var into: String?
    init(_ o: inout OptionReader) {
      store = StoreSelection(&o, all: true)
      into = o.option(
        "--into", valueName: "path", help: "Write a compacted copy to this new file instead of rebuilding in place.",
        parse: Parse.path)
    }
    func validate() throws {
      try store.validate()
      if into != nil && store.all { throw ValidationError("'--into <path>' works on one file, not with '--all'") }
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let targets = try options.store.targets()
    let reports = context.runEach(targets, jobs: options.store.jobs, label: "Vacuuming") { target, _ in
      let report = try DatabaseVacuum.run(path: target.path, into: options.into)
      let media =
        options.into == nil
        ? try MediaCheck(database: target.path).clean(Database(path: target.path)) : (names: [], bytes: 0)
      let freed = report.bytesFreed + media.bytes
      var text =
        report.into.map {
          "\(report.path): wrote a compacted copy to \($0): \(ByteCount.format(report.bytesAfter)) "
            + "(the original, \(ByteCount.format(report.bytesBefore)), is unchanged)"
        }
        ?? "\(report.path): vacuumed: \(ByteCount.format(report.bytesBefore)) before, \(ByteCount.format(report.bytesAfter)) after (\(ByteCount.format(report.bytesFreed)) freed)"
      if !media.names.isEmpty {
        text +=
          "\nmedia folder: removed \(media.names.count) file(s) or row(s) nothing keeps, \(ByteCount.format(media.bytes))"
      }
      return try FileResult(
        Result(
          into: report.into, bytesBefore: report.bytesBefore, bytesAfter: report.bytesAfter,
          bytesFreed: report.bytesFreed, copy: report.isCopy, mediaRemoved: media.names.count,
          mediaBytesFreed: media.bytes),
        text: text,
        row: [ByteCount.format(report.bytesBefore), ByteCount.format(report.bytesAfter), ByteCount.format(freed)],
        totals: ["bytesFreed": freed])
    }
    let freed = reports.total("bytesFreed")
    context.report(
      reports,
      fleet: options.store.all
        ? [.init("BEFORE", alignment: .right), .init("AFTER", alignment: .right), .init("FREED", alignment: .right)]
        : nil,
      summaryLine: options.store.all ? "\(reports.count) file(s): \(ByteCount.format(freed)) freed" : nil)
  }

  /// `result`: the file's size before and after (with `--into`, the copy's size after).
  struct Result: CommandResult {
    var into: String?
    var bytesBefore: Int64
    var bytesAfter: Int64
    /// The database's bytes freed (the media folder's are `mediaBytesFreed`).
    var bytesFreed: Int64
    var copy: Bool
    /// Stray files and media no message names, removed from the media folder.
    var mediaRemoved: Int
    var mediaBytesFreed: Int64

    static var example: Result {
      Result(
        into: nil, bytesBefore: 56_623_104, bytesAfter: 48_234_496, bytesFreed: 8_388_608, copy: false, mediaRemoved: 2,
        mediaBytesFreed: 5_242_880)
    }

    static var otherExamples: [Result] {
      [
        Result(
          into: "/backups/chats-42.db", bytesBefore: 56_623_104, bytesAfter: 48_234_496, bytesFreed: 8_388_608,
          copy: true, mediaRemoved: 0, mediaBytesFreed: 0)
      ]
    }
  }
}
