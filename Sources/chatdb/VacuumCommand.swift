import ChatCLI
import ChatMaintenance
import ChatStore
import Foundation

/// `chatdb vacuum`: rebuild a file without its free pages, or copy it compacted.
enum VacuumCommand {
  static let command = Command(
    name: "vacuum",
    abstract: "Rebuild a chat database without its free pages (VACUUM), or write a compacted copy (VACUUM INTO).",
    discussion: """
      First checks that the file's folder (or the --into folder) and the temporary \
      folder each have room for a full copy; reports the file sizes before and after. \
      VACUUM holds the write lock while it runs: chat-sync waits.
      """,
    options: StoreOptions.options(all: false) + [
      .value("--into", valueName: "path", help: "Write a compacted copy to this new file instead of rebuilding in place.")
    ],
    run: run
  )

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    guard case .file(let path, _) = try StoreOptions.target(arguments) else { throw arguments.usageError("'--all' is not supported here") }
    let into = arguments.value("--into")
    if let into, into.isEmpty { throw arguments.usageError("The value '' is invalid for '--into <path>'") }
    let report = try DatabaseVacuum.run(path: path, into: into)
    if arguments.flag("--json") {
      print(
        JSONValue.object([
          "path": .string(report.path), "into": report.into.map { .string($0) } ?? .null, "bytesBefore": .int(report.bytesBefore),
          "bytesAfter": .int(report.bytesAfter), "bytesFreed": .int(report.bytesBefore - report.bytesAfter),
        ]).render())
    } else {
      let target = report.into.map { " into \($0)" } ?? ""
      print(
        "\(report.path): vacuumed\(target): \(ByteCount.format(report.bytesBefore)) before, \(ByteCount.format(report.bytesAfter)) after "
          + "(\(ByteCount.format(report.bytesBefore - report.bytesAfter)) freed)")
    }
    return ChatExitCode.success
  }
}
