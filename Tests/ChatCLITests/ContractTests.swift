import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatCLI

@Suite(.ownThreads) struct OptionReaderTests {
  struct Typed: ParsableOptions {
    var count: Int?
    var tags: [String]
    var output: String?
    var force: Bool
    init(_ o: inout OptionReader) {
      count = o.option("--count", valueName: "n", help: "A count.", parse: Parse.count)
      tags = o.repeated("--tag", valueName: "t", help: "Tags.") { $0 }
      output = o.option("-o", "--output", valueName: "file", help: "Out.", required: true)
      force = o.flag("--force", help: "Force.")
    }
  }

  @Test func describingDeclaresEveryOptionAndReadsNothing() {
    var reader = OptionReader(mode: .describing)
    let options = Typed(&reader)
    #expect(reader.options.map(\.primaryName) == ["--count", "--tag", "--output", "--force"])
    #expect(reader.options[2].isRequired)
    #expect(options.count == nil && options.tags.isEmpty && !options.force && reader.firstError == nil)
  }

  func read(_ arguments: [String]) -> (Typed, String?) {
    var describing = OptionReader(mode: .describing)
    _ = Typed(&describing)
    let command = Command(name: "t", options: describing.options, run: { _, _ in })
    guard case .run(let parsed) = CommandLineTool(root: command, version: "1").parse(arguments) else {
      fatalError("no parse")
    }
    var reader = OptionReader(mode: .reading(parsed))
    return (Typed(&reader), reader.firstError)
  }

  @Test func readingConvertsValues() {
    let (options, error) = read(["--count", "1_000", "--tag", "a", "--tag", "b", "-o", "x", "--force"])
    #expect(error == nil)
    #expect(options.count == 1000 && options.tags == ["a", "b"] && options.output == "x" && options.force)
  }

  @Test(arguments: [
    (["-o", "x", "--count", "abc"], "The value 'abc' is invalid for '--count <n>': expected a whole number from 0"),
    (["--count", "3"], "Missing '--output <file>'"),
  ])
  func conversionAndMissingValuesAreUsageErrors(arguments: [String], message: String) {
    #expect(read(arguments).1 == message)
  }

  @Test func aRequiredOptionShowsWithoutBracketsInUsage() {
    var reader = OptionReader(mode: .describing)
    _ = Typed(&reader)
    let command = Command(name: "t", options: reader.options, run: { _, _ in })
    #expect(Help.usage(command, path: ["t"], truncated: false).contains(" --output <file> "))
  }
}

/// A file's result in these tests.
private struct Count: CommandResult {
  var n: Int64
  static var example: Count { Count(n: 1) }
}

@Suite(.ownThreads) struct EnvelopeTests {
  static func context(json: Bool) -> (CommandContext, TextBuffer, TextBuffer) {
    let out = TextBuffer()
    let err = TextBuffer()
    return (
      CommandContext(commandPath: "chatdb t", json: json, stdout: .capturing(into: out), stderr: .capturing(into: err)),
      out, err
    )
  }

  static func targets(_ n: Int) -> [FileTarget] {
    (1...n).map { FileTarget(path: "/d/chats-\($0).db", userID: Int64($0)) }
  }

  @Test func runnerKeepsTargetOrderAndIsolatesFailures() throws {
    let (context, out, _) = Self.context(json: true)
    let reports = context.runEach(Self.targets(40), jobs: 4, label: "T") { target, _ in
      usleep(UInt32.random(in: 0...2000))
      if target.userID == 7 { throw StoreError(.olderSchema, "\(target.path) is old") }
      return try FileResult(Count(n: target.userID!), text: "", totals: ["n": target.userID!])
    }
    #expect(reports.map(\.target.userID) == (1...40).map { Int64($0) })
    #expect(reports.failedCount == 1)
    context.report(reports, fleet: [])
    #expect(context.status == .partialFailure)
    let object = try #require(try JSONSerialization.jsonObject(with: Data(out.text.utf8)) as? [String: Any])
    #expect(Set(object.keys) == ["command", "ok", "exitCode", "files", "summary"])
    #expect(object["exitCode"] as? Int == 1)
    let summary = try #require(object["summary"] as? [String: Any])
    #expect(summary["failed"] as? Int == 1 && summary["n"] as? Int == (1...40).reduce(0, +) - 7)
    let files = try #require(object["files"] as? [[String: Any]])
    let failed = try #require(files[6]["error"] as? [String: Any])
    #expect(failed["kind"] as? String == "olderSchema" && failed["exitCode"] as? Int == 15)
    #expect(files[0]["result"] != nil && files[0]["userId"] as? Int == 1)
  }

  @Test func oneFileGetsItsOwnCodeAndOneErrorLine() {
    let (context, out, err) = Self.context(json: false)
    let reports = context.runEach(Self.targets(1), jobs: 8, label: "T") { target, _ in
      throw StoreError(.busy, "\(target.path) is locked\nby someone")
    }
    context.report(reports)
    #expect(context.status == .busy)
    #expect(out.text.isEmpty)
    #expect(err.text == "Error: /d/chats-1.db is locked by someone\n")
  }

  @Test func allRunsReportTheHighestOutcomeWhenNothingFailed() {
    let (context, _, _) = Self.context(json: false)
    let reports = context.runEach(Self.targets(3), jobs: 2, label: "T") { target, _ in
      try FileResult(EmptyResult(), text: "", row: ["x"], status: target.userID == 2 ? .findings : .success)
    }
    context.report(reports, fleet: [.init("X")])
    #expect(context.status == .findings)
  }

  @Test func aFailureOutsideFilesStillPrintsTheEnvelope() throws {
    let (context, out, err) = Self.context(json: true)
    context.fail(StoreError(.notFound, "cannot read data folder d"))
    #expect(context.status == .notFound)
    #expect(err.text == "Error: cannot read data folder d\n")
    let object = try #require(try JSONSerialization.jsonObject(with: Data(out.text.utf8)) as? [String: Any])
    #expect((object["error"] as? [String: Any])?["exitCode"] as? Int == 66)
    #expect(object["files"] as? [Any] != nil && object["summary"] != nil && object["command"] as? String == "chatdb t")
  }

  @Test func aBrokenPipeEndsQuietly() {
    let (context, out, err) = Self.context(json: false)
    context.fail(StoreError(.brokenPipe, "cannot write <stdout>: Broken pipe"))
    #expect(context.status == .brokenPipe && out.text.isEmpty && err.text.isEmpty)
  }
}

@Suite(.ownThreads) struct ExitStatusTests {
  @Test func codesAreUniqueAndOneIsOnlyPartialFailure() {
    let codes = ExitCode.allCases.map(\.rawValue)
    #expect(Set(codes).count == codes.count)
    for kind in StoreError.Kind.allCases { #expect(ExitCode(kind) != .partialFailure && ExitCode(kind) != .success) }
  }

  @Test(arguments: [
    (SQLiteError(code: SQLiteError.ResultCode.busy), ExitCode.busy),
    (SQLiteError(code: SQLiteError.ResultCode.corrupt), .dataError),
    (SQLiteError(code: SQLiteError.ResultCode.notADatabase), .dataError),
    (SQLiteError(code: SQLiteError.ResultCode.full), .diskSpace),
    (SQLiteError(code: SQLiteError.ResultCode.ioError), .internalError),
  ])
  func sqliteErrorsMapByName(error: SQLiteError, status: ExitCode) {
    #expect(ExitCode(for: error) == status)
  }

  @Test func unclassifiedErrorsAreInternalNeverOne() {
    struct Odd: Error {}
    #expect(ExitCode(for: Odd()) == .internalError)
  }

  /// Rows that cannot be provoked through the binary here (the tests run as root, so
  /// permission is never denied; a failed read needs a failing disk): the mapping is
  /// checked in-process.
  @Test func rowsThatRootCannotProvokeMapFromTheirKinds() {
    #expect(ExitCode(.permission).rawValue == 77)
    #expect(ExitCode(.readFailed).rawValue == 16)
    #expect(ExitCode(.internalError).rawValue == 70)
    #expect(
      ExitCode(
        for: StoreError.from(
          SQLiteError(code: SQLiteError.ResultCode.ioError), path: "x", doing: "read", otherwise: .readFailed))
        == .readFailed)
  }
}
