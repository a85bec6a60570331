import ChatStore
import Foundation
import Testing

@testable import ChatMaintenance

#if canImport(Glibc)
  import Glibc
#endif

/// The tests of `Sources/ChatMaintenance/Streams`, grouped so `swift test --filter Streams` runs them.
@Suite struct Streams {}

// Helpers live inside `Streams` so they cannot collide with other test files of the module.
extension Streams {
  // MARK: - Codecs

  /// How a test file is written: plain, or zstd at a level with a number of workers.
  enum Codec: Sendable, CustomTestStringConvertible {
    case plain
    case zstd(level: Int32, workers: Int32)

    static let zstdCases: [Codec] = [1, 3, 19].flatMap { level in [0, 2].map { Codec.zstd(level: level, workers: $0) } }
    static let all: [Codec] = [.plain] + zstdCases

    var testDescription: String {
      switch self {
      case .plain: "plain"
      case .zstd(let level, let workers): "zstd level \(level), \(workers) workers"
      }
    }

    func makeSink(fileDescriptor: Int32, name: String) throws -> any ByteSink {
      switch self {
      case .plain: PlainSink(fileDescriptor: fileDescriptor, name: name)
      case .zstd(let level, let workers):
        try ZstdSink(fileDescriptor: fileDescriptor, name: name, level: level, workers: workers)
      }
    }
  }

  // MARK: - Sample inputs

  /// Inputs whose lines are known, including the shapes that break line splitters.
  enum Sample: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case empty
    case oneLineWithoutNewline
    case crlfLines
    case lineAtBufferBoundary
    case manyUnicodeLines

    var testDescription: String { rawValue }

    var text: String {
      switch self {
      case .empty:
        return ""
      case .oneLineWithoutNewline:
        return #"{"type":"user","id":2,"name":"Ada"}"#
      case .crlfLines:
        return "first\r\nsecond\r\n\r\nlast\r\n"
      case .lineAtBufferBoundary:
        // With the 1 MiB buffer, the first "\n" is its last byte and the second ends the next fill.
        return String(repeating: "a", count: (1 << 20) - 1) + "\n" + String(repeating: "b", count: (1 << 20) - 2)
          + "\r\nafter\n"
      case .manyUnicodeLines:
        return Self.unicodeLines.joined(separator: "\n") + "\n"
      }
    }

    var lines: [String] {
      switch self {
      case .empty: []
      case .oneLineWithoutNewline: [text]
      case .crlfLines: ["first", "second", "", "last"]
      case .lineAtBufferBoundary:
        [String(repeating: "a", count: (1 << 20) - 1), String(repeating: "b", count: (1 << 20) - 2), "after"]
      case .manyUnicodeLines: Self.unicodeLines
      }
    }

    static let unicodeLines: [String] = (0..<100_000).map { index in
      #"{"id":\#(index),"text":"Grüße 👋🏽 你好 \#(index * 7919 % 100_003)"}"#
    }
  }

  // MARK: - Files

  /// A fresh folder under the temporary directory, removed when `body` returns.
  static func withScratchFolder<R>(_ body: (String) throws -> R) throws -> R {
    let folder = FileManager.default.temporaryDirectory
      .appendingPathComponent("chatdb-streams-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    return try body(folder.path)
  }

  /// Writes `bytes` through a sink of `codec` in uneven pieces, and returns the sink for its counters.
  @discardableResult
  static func writeFile(_ path: String, codec: Codec, _ bytes: [UInt8]) throws -> any ByteSink {
    let fileDescriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    try #require(fileDescriptor >= 0, "cannot create \(path)")
    defer { close(fileDescriptor) }
    let sink = try codec.makeSink(fileDescriptor: fileDescriptor, name: path)
    var offset = 0
    var piece = 1
    try bytes.withUnsafeBytes { all in
      while offset < all.count {
        let count = min(piece, all.count - offset)
        try sink.write(UnsafeRawBufferPointer(rebasing: all[offset..<offset + count]))
        offset += count
        piece = piece * 3 % 400_009  // 1, 3, 9 … up to ~400 KB: small writes and ones larger than any buffer
      }
    }
    try sink.finish()
    return sink
  }

  static func writeFile(_ path: String, codec: Codec, text: String) throws {
    try writeFile(path, codec: codec, Array(text.utf8))
  }

  static func writeRaw(_ path: String, _ bytes: [UInt8]) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
  }

  static func fileBytes(_ path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
  }

  /// Every line of the file, through `LineReader`.
  static func readLines(_ path: String, maxLineLength: Int = 1 << 20, bufferCapacity: Int = 1 << 20) throws -> [String]
  {
    let reader = LineReader(
      source: try ByteSource.open(path: path), maxLineLength: maxLineLength, bufferCapacity: bufferCapacity)
    var lines: [String] = []
    while let line = try reader.nextLine({ String(decoding: $0, as: UTF8.self) }) {
      lines.append(line)
    }
    return lines
  }

  /// Every byte of the source, read in odd-sized pieces.
  static func readAll(_ source: ByteSource, chunk: Int = 4093) throws -> [UInt8] {
    var result: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: chunk)
    while true {
      let count = try buffer.withUnsafeMutableBytes { try source.read(into: $0) }
      if count == 0 { return result }
      result += buffer[0..<count]
    }
  }

  /// The `StoreError` that `body` throws, or nil if it returns.
  static func storeError(_ body: () throws -> Void) -> StoreError? {
    do {
      try body()
      return nil
    } catch let error as StoreError {
      return error
    } catch {
      Issue.record("expected a StoreError, got \(error)")
      return nil
    }
  }

  // MARK: - The zstd command-line tool

  enum ZstdTool {
    /// The `zstd` executable on PATH, if installed.
    static let path: String? = {
      let folders = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
      return folders.map { "\($0)/zstd" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }()

    /// Runs `zstd` and returns its exit status, stdout and stderr.
    static func run(_ arguments: [String]) throws -> (status: Int32, stdout: Data, stderr: String) {
      let process = Process()
      process.executableURL = URL(fileURLWithPath: try #require(path))
      process.arguments = arguments
      let stdout = Pipe()
      let stderr = Pipe()
      process.standardOutput = stdout
      process.standardError = stderr
      try process.run()
      // Read stdout before waiting: a large output would otherwise fill the pipe and hang.
      let output = stdout.fileHandleForReading.readDataToEndOfFile()
      let errors = stderr.fileHandleForReading.readDataToEndOfFile()
      process.waitUntilExit()
      return (process.terminationStatus, output, String(decoding: errors, as: UTF8.self))
    }
  }
}
