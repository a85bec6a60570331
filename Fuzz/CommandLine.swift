// Fuzz target `command-line`: the three programs' command-line parser (Parser,
// ParsedArguments, OptionReader) with their real command trees, every command's
// options read and validated as `run` would before doing any work, and every option
// value parser (sizes, ages, dates and times, ids, counts, paths, thresholds, URLs,
// fault specs, search cursors) on every argument.
//
// Input: the first byte picks the program; the rest, cut at NUL bytes, is argv[1...].
// Invariants: nothing traps; help and usage errors have their documented shape; a
// value a parser accepts is in its documented range and survives a round trip where
// the value has a text form.

import ChatMaintenance
import ChatStore
import Foundation

@testable import ChatCLI
@testable import ChatRelay
@testable import chat_relay
@testable import chat_sync
@testable import chatdb

#if canImport(Glibc)
  import Glibc
#endif

/// `Command(C.self)` whose action reads and validates the options, then stops where
/// `C.run` would start working.
private func leaf<C: ParsableCommand>(_ type: C.Type, subcommands: [Command] = []) -> Command {
  var command = Command(type, subcommands: subcommands)
  command.run = { parsed, _ in
    var reader = OptionReader(mode: .reading(parsed))
    let options = C.Options(&reader)
    if reader.firstError == nil { _ = try? options.validate() }
  }
  return command
}

// The trees of Sources/chatdb/main.swift, Sources/chat-relay/main.swift and
// Sources/chat-sync/main.swift, with `leaf` for `Command`.
private let tools: [CommandLineTool] = [
  CommandLineTool(
    root: .group(
      name: "chatdb", abstract: "",
      subcommands: [
        leaf(MigrateCommand.self, subcommands: [leaf(MigrateStatusCommand.self)]), leaf(GenerateCommand.self),
        leaf(ImportCommand.self), leaf(ExportCommand.self), leaf(UsageCommand.self), leaf(EvictCommand.self),
        .group(
          name: "index", abstract: "",
          subcommands: [
            leaf(IndexListCommand.self), leaf(IndexVerifyCommand.self), leaf(IndexApplyCommand.self),
            leaf(IndexAnalyzeCommand.self),
          ]),
        leaf(CheckCommand.self), leaf(VacuumCommand.self), leaf(chatdb.SearchCommand.self),
      ]),
    version: "fuzz"),
  CommandLineTool(
    root: .group(
      name: "chat-relay", abstract: "",
      subcommands: [
        leaf(ServeCommand.self),
        .group(
          name: "user", abstract: "",
          subcommands: [
            leaf(UserAddCommand.self), leaf(UserListCommand.self), leaf(UserRemoveCommand.self),
            leaf(UserTokenCommand.self),
          ]),
        .group(name: "push", abstract: "", subcommands: [leaf(PushListCommand.self)]),
      ]),
    version: "fuzz"),
  CommandLineTool(
    root: .group(
      name: "chat-sync", abstract: "",
      subcommands: [
        leaf(RunCommand.self), leaf(SendCommand.self), leaf(ConversationsCommand.self), leaf(HistoryCommand.self),
        leaf(ReadCommand.self), leaf(RetryCommand.self), leaf(DeleteCommand.self), leaf(TypingCommand.self),
        leaf(StatusCommand.self), leaf(chat_sync.SearchCommand.self),
      ]),
    version: "fuzz"),
]

private let silent = TextOutput { _ in }

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCommandLine(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
  let bytes = input(data, size)
  guard let first = bytes.first else { return 0 }
  let tool = tools[Int(first) % tools.count]
  let arguments = size > 1 ? pieces(UnsafeBufferPointer(rebasing: bytes[1...]), separator: 0) : []

  switch tool.parse(arguments) {
  case .help(let text):
    require(text.contains("USAGE:"), "help without USAGE: \(text)")
  case .version(let text):
    require(text == "fuzz", "version \(text)")
  case .usageError(let error):
    // Three lines: the message (control characters in quoted input escaped; a line break
    // in an argument once split it, found by this target), the usage, the help hint.
    require(
      error.description.hasPrefix("Error: ") && error.description.split(separator: "\n").count == 3,
      "usage error \(error.description)")
  case .run(let parsed):
    let context = CommandContext(
      commandPath: parsed.path.joined(separator: " "), json: false, stdout: silent, stderr: silent)
    do { try parsed.command.run?(parsed, context) } catch {}
  }
  for argument in arguments { values(argument) }
  return 0
}

/// Every option value parser on `text`, with what a value it accepts must satisfy.
private func values(_ text: String) {
  if let bytes = ByteCount.parse(text) {
    require(bytes >= 0, "ByteCount.parse('\(text)') = \(bytes)")
    let shown = ByteCount.format(bytes)
    require(!shown.isEmpty, "ByteCount.format(\(bytes)) is empty")
    require(ByteCount.parse(String(bytes)) == bytes, "ByteCount.parse does not read \(bytes) back")
  }
  if let size = try? Parse.size(text) { require(size > 0, "Parse.size('\(text)') = \(String(describing: size))") }
  if let age = EvictionPolicy.age(text) { require(age >= 0, "EvictionPolicy.age('\(text)') = \(age)") }
  if let id = try? Parse.userID(text) {
    require(id > 0 && String(id) == text, "Parse.userID('\(text)') = \(id)")
    require(
      StoreLocation.userID(fromFileName: StoreLocation.path(forUser: id, in: "/data")) == id, "user \(id)'s file name")
  }
  if let n = try? Parse.count(text) { require(n >= 0, "Parse.count('\(text)') = \(n)") }
  for limit in [(1, 10_000), (0, 65_535), (1, 1024)] {
    if let n = try? Parse.count(from: limit.0, to: limit.1)(text) {
      require(n >= limit.0 && n <= limit.1, "Parse.count(from: \(limit.0), to: \(limit.1))('\(text)') = \(n)")
    }
  }
  if let time = try? Parse.time(text) {
    let ms = Timestamp.milliseconds(from: time)
    require(
      ms != nil && Timestamp.string(milliseconds: ms!) == time, "Parse.time('\(text)') = \(time) does not read back")
    require(
      ms == Timestamp.milliseconds(from: text)
        || !Timestamp.representable.contains(Timestamp.milliseconds(from: text)!),
      "Parse.time('\(text)') moved the time to \(time)")
  }
  _ = try? Parse.date(text)
  _ = try? Parse.path(text)
  if let cursor = try? Parse.searchCursor(text) { _ = cursor.description }
  _ = try? UsageCommand.threshold(text)
  if let end = try? GenerateCommand.end(text) {
    require(
      end >= HistoryGenerator.minimumEnd && end <= HistoryGenerator.maximumEnd,
      "GenerateCommand.end('\(text)') = \(end)")
  }
  _ = try? RelayAccess.parseServer(text)
  if let faults = try? Faults.parse(text, seed: 1) {
    require(faults.probabilities.values.allSatisfy { $0 >= 0 && $0 <= 1 }, "Faults.parse('\(text)')")
    require((0...60_000).contains(faults.eventDelayMilliseconds), "Faults.parse('\(text)') delay")
  }
}
