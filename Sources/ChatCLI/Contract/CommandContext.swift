import ChatStore
import Foundation

/// What a command is handed to run: where its output goes, whether it prints JSON, and
/// the one place where results and errors become output and an exit code.
///
/// Commands never `print`: they return per-file results to `report(_:)` (or call
/// `write`), so a command runs the same in a test with captured outputs.
/// `@unchecked Sendable`: `status` is written only by the thread running the command
/// (the `--all` runner's workers return values and never touch it).
public final class CommandContext: @unchecked Sendable {
  /// Standard output (results, tables, JSON).
  public let stdout: TextOutput
  /// Standard error (errors, progress, and the report when stdout carries data).
  public let stderr: TextOutput
  /// `--json` was given.
  public let json: Bool
  /// The command as typed, e.g. `chatdb index verify`: the envelope's `command`.
  public let commandPath: String
  /// The exit status so far; set by `report`, `fail` and `exit`.
  public private(set) var status: ExitCode = .success
  /// Send the report to stderr because stdout carries the command's data (`export -o -`).
  public var reportToStandardError = false
  /// The last envelope printed (for the generated JSON reference).
  private(set) var lastEnvelope: JSONValue?

  public init(commandPath: String, json: Bool, stdout: TextOutput, stderr: TextOutput) {
    self.commandPath = commandPath
    self.json = json
    self.stdout = stdout
    self.stderr = stderr
  }

  private var reportOutput: TextOutput { reportToStandardError ? stderr : stdout }

  /// Writes text to the report output (stdout, unless `reportToStandardError`).
  public func write(_ text: String) {
    guard !text.isEmpty else { return }
    reportOutput.write(text.hasSuffix("\n") ? text : text + "\n")
  }

  /// Sets the exit status without an error (e.g. `usage --check` → `diskLow`).
  public func exit(_ status: ExitCode) { self.status = status }

  /// A progress line on stderr, silent unless stderr is a terminal.
  public func progress(_ label: String, total: Int64?, unit: String) -> Progress {
    Progress(label: label, total: total, unit: unit, output: stderr)
  }

  // MARK: - Errors

  /// Reports an error that ended the whole command: `Error: …` on stderr, the envelope with
  /// `error` on stdout under `--json`, and the error's row of the exit-code table.
  public func fail(_ error: any Error) {
    let failure = Failure(error)
    status = failure.status
    guard status != .brokenPipe else { return }
    stderr.writeLine("Error: " + failure.message.oneLine)
    if json {
      printEnvelope(envelope(files: [], summary: ["files": 0, "ok": 0, "failed": 0], extra: ["error": failure.json]))
    }
  }

  // MARK: - Per-file results

  /// Renders the results of a command that worked on files and sets the exit status.
  ///
  /// - One file (`fleet == nil`): its text, or `Error: …` on stderr; the exit status is
  ///   the file's own (its result's status, or its error's row in the table).
  /// - `--all` (`fleet` gives the table's columns after FILE): a table in file order and
  ///   `summaryLine`; exit 1 when any file failed, else the highest status a file reported.
  /// - `--json`: the envelope `{command, ok, exitCode, files: [{path, userId, ok,
  ///   result | error}], summary}` either way.
  ///
  /// `summary`'s members join the envelope's `summary` beside the counts.
  public func report(
    _ files: [FileReport], fleet columns: [Table.Column]? = nil, summary: some Encodable = EmptyResult(),
    summaryLine: String? = nil
  ) {
    let failed = files.filter { !$0.ok }.count
    if columns == nil, let only = files.first, files.count == 1 {
      switch only.outcome {
      case .success(let result): status = result.status
      case .failure(let failure): status = failure.status
      }
    } else if failed > 0 {
      status = .partialFailure
    } else {
      status = files.compactMap { try? $0.outcome.get().status }.max { $0.rawValue < $1.rawValue } ?? .success
    }
    if json {
      // The summary types are plain structs of numbers and strings: encoding cannot fail.
      var counts: [String: JSONValue] = [:]
      if case .object(let members)? = try? JSONValueEncoder().encode(summary) { counts = members }
      for key in Set(files.flatMap { (try? $0.outcome.get().totals.keys).map(Array.init) ?? [] }) {
        counts[key] = counts[key] ?? .int(files.total(key))
      }
      counts["files"] = .int(Int64(files.count))
      counts["ok"] = .int(Int64(files.count - failed))
      counts["failed"] = .int(Int64(failed))
      printEnvelope(envelope(files: files, summary: counts, extra: [:]))
      if columns == nil, case .failure(let failure) = files.first?.outcome, failure.status != .brokenPipe {
        stderr.writeLine("Error: " + failure.message.oneLine)
      }
      return
    }
    guard let columns else {
      for file in files {
        switch file.outcome {
        case .success(let result): write(result.text)
        // A reader that went away (`export -o - | head`) is no error to tell: 141, quietly.
        case .failure(let failure) where failure.status == .brokenPipe: continue
        case .failure(let failure): stderr.writeLine("Error: " + failure.message.oneLine)
        }
      }
      if let summaryLine { write(summaryLine) }
      return
    }
    let rows = files.map { file -> [String] in
      let name = file.target.path.split(separator: "/").last.map(String.init) ?? file.target.path
      switch file.outcome {
      case .success(let result): return [name] + result.row
      case .failure(let failure):
        var cells = Array(repeating: "-", count: columns.count)
        if !cells.isEmpty { cells[cells.count - 1] = "FAILED (exit \(failure.status.rawValue))" }
        return [name] + cells
      }
    }
    write(Table(columns: [.init("FILE")] + columns, rows: rows).render())
    // Each failure in full, one line per file, below the table.
    for file in files {
      if case .failure(let failure) = file.outcome {
        write(failure.message.contains(file.target.path) ? failure.message : "\(file.target.path): \(failure.message)")
      }
    }
    write(summaryLine ?? "\(files.count) file(s): \(files.count - failed) ok, \(failed) failed")
  }

  private func printEnvelope(_ value: JSONValue) {
    lastEnvelope = value
    reportOutput.writeLine(value.render())
  }

  /// The JSON envelope every command prints under `--json`.
  func envelope(files: [FileReport], summary: [String: JSONValue], extra: [String: JSONValue]) -> JSONValue {
    var object: [String: JSONValue] = [
      "command": .string(commandPath), "ok": .bool(status == .success), "exitCode": .int(Int64(status.rawValue)),
      "files": .array(files.map(\.json)), "summary": .object(summary),
    ]
    object.merge(extra) { a, _ in a }
    return .object(object)
  }

  // MARK: - Running over files

  /// Runs `work` on every target, `jobs` at a time, and returns the reports in target
  /// order. One file's error is captured in its report and never stops or changes the
  /// others. On a terminal, one file shows the progress `work` reports (in `unit`), many
  /// files show how many are done.
  public func runEach(
    _ targets: [FileTarget], jobs: Int, label: String, unit: String = "records",
    work: @escaping @Sendable (FileTarget, FileProgress) throws -> FileResult
  ) -> [FileReport] {
    let many = targets.count > 1
    // Files done so far, and the progress line that shows them (drawn under the same lock).
    let done: Locked<(count: Int64, line: Progress)>? =
      many ? Locked((count: 0, line: progress(label, total: Int64(targets.count), unit: "files"))) : nil
    let stderr = stderr
    let makeProgress: @Sendable (Int64?) -> Progress = { total in
      Progress(label: label, total: total, unit: unit, output: stderr)
    }
    let single = FileProgress(many ? nil : makeProgress)
    let slots = Locked([FileReport?](repeating: nil, count: targets.count))
    let next = Locked(0)
    let workers = max(1, min(jobs, targets.count))
    let run: @Sendable () -> Void = {
      while true {
        let index: Int? = next.withLock { next in
          guard next < targets.count else { return nil }
          next += 1
          return next - 1
        }
        guard let index else { return }
        let target = targets[index]
        let outcome: Result<FileResult, Failure>
        do {
          try target.requireInsideDataFolder()
          outcome = .success(try work(target, single))
        } catch { outcome = .failure(Failure(Self.naming(error, target.path))) }
        single.finish()
        slots.withLock { $0[index] = FileReport(target: target, outcome: outcome) }
        done?.withLock {
          $0.count += 1
          $0.line.update(completed: $0.count)
        }
      }
    }
    if workers == 1 {
      run()
    } else {
      let group = DispatchGroup()
      for _ in 0..<workers { DispatchQueue.global(qos: .userInitiated).async(group: group, execute: run) }
      group.wait()
    }
    done?.withLock { $0.line.finish() }
    return slots.withLock { $0.map { $0! } }
  }
}

extension CommandContext {
  /// A SQLite error that says what is wrong with the file itself (damaged, locked, the
  /// disk full) but reached the runner without the file's name gets it here, so the
  /// one-line error always names the file.
  static func naming(_ error: any Error, _ path: String) -> any Error {
    guard let sqlite = error as? SQLiteError else { return error }
    if sqlite.isCorruptOrNotADatabase || sqlite.isBusy || sqlite.isDiskFull {
      return StoreError.from(sqlite, path: path, doing: "work on")
    }
    // An I/O error: a failed read (nothing changed) or a failed write (rolled back).
    if sqlite.code & 0xFF == SQLiteError.ResultCode.ioError {
      let verb = sqlite.sql?.split(separator: " ").first?.uppercased() ?? ""
      let reading = ["SELECT", "WITH", "PRAGMA", "EXPLAIN"].contains(verb)
      return StoreError.from(
        sqlite, path: path, doing: reading ? "read" : "write", otherwise: reading ? .readFailed : .writeFailed)
    }
    return error
  }
}

// MARK: - Results

/// A file a command works on, with its owner when known (from `--user` or the name).
public struct FileTarget: Sendable, Hashable {
  public var path: String
  public var userID: Int64?
  /// The data folder the file was chosen through (`--user`, `--all`), or nil for a path
  /// the user named (`--db`). A file chosen through the folder must not be a symbolic
  /// link out of it (`StoreLocation.requireInsideDataFolder`).
  public var dataFolder: String?
  public init(path: String, userID: Int64?, dataFolder: String? = nil) {
    self.path = path
    self.userID = userID
    self.dataFolder = dataFolder
  }

  /// Refuses a file chosen through the data folder that is a link out of it (65).
  public func requireInsideDataFolder() throws {
    if let dataFolder { try StoreLocation.requireInsideDataFolder(path, dataDirectory: dataFolder) }
  }
}

/// What a command did to one file.
public struct FileResult: Sendable {
  /// The envelope's `result` for this file: the command's result type, encoded.
  public var json: JSONValue
  /// The text shown when the command ran on this file alone.
  public var text: String
  /// The cells after FILE in an `--all` table.
  public var row: [String]
  /// This file's outcome when it is not plain success (e.g. `findings`).
  public var status: ExitCode
  /// Figures summed over the files into the envelope's `summary` (e.g. `bytesFreed`).
  public var totals: [String: Int64]

  /// A file's result: `result` becomes the envelope's `result` (through `JSONValueEncoder`).
  public init(
    _ result: some CommandResult, text: String, row: [String] = [], status: ExitCode = .success,
    totals: [String: Int64] = [:]
  ) throws {
    self.json = try JSONValueEncoder().encode(result)
    self.text = text
    self.row = row
    self.status = status
    self.totals = totals
  }
}

/// An error as the envelope and the exit-code table see it.
public struct Failure: Error, Sendable {
  public var status: ExitCode
  public var message: String

  public init(_ error: any Error) {
    status = ExitCode(for: error)
    // One line, whatever the error's text holds.
    message = (errorMessage(error) ?? String(describing: error))
      .split(whereSeparator: \.isNewline).joined(separator: " ")
  }

  var json: JSONValue {
    .object(["kind": .string(status.kind), "exitCode": .int(Int64(status.rawValue)), "message": .string(message)])
  }
}

/// One file's entry in the envelope.
public struct FileReport: Sendable {
  public var target: FileTarget
  public var outcome: Result<FileResult, Failure>

  public init(target: FileTarget, outcome: Result<FileResult, Failure>) {
    self.target = target
    self.outcome = outcome
  }

  public var ok: Bool { if case .success = outcome { true } else { false } }

  var json: JSONValue {
    var object: [String: JSONValue] = [
      "path": .string(target.path), "userId": target.userID.map { .int($0) } ?? .null, "ok": .bool(ok),
    ]
    switch outcome {
    case .success(let result): object["result"] = result.json
    case .failure(let failure): object["error"] = failure.json
    }
    return .object(object)
  }
}

extension Array where Element == FileReport {
  /// The sum of `key` over the files that succeeded.
  public func total(_ key: String) -> Int64 {
    reduce(0) { $0 + ((try? $1.outcome.get().totals[key]) ?? 0) }
  }

  /// How many files failed.
  public var failedCount: Int { filter { !$0.ok }.count }
}

// MARK: - Progress from worker threads

/// The progress of the work on one file, shown only when the command works on one file.
public final class FileProgress: Sendable {
  private let make: (@Sendable (Int64?) -> Progress)?
  private let progress = Locked<Progress?>(nil)

  init(_ make: (@Sendable (Int64?) -> Progress)?) { self.make = make }

  /// Reports `completed` units of `total` (nil: unknown), and optionally bytes processed.
  public func update(completed: Int64, total: Int64? = nil, bytes: Int64? = nil) {
    guard let make else { return }
    progress.withLock { progress in
      if progress == nil { progress = make(total) }
      progress!.update(completed: completed, bytes: bytes)
    }
  }

  func finish() { progress.withLock { $0?.finish() } }
}
