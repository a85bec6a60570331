import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatMaintenance

#if canImport(Glibc)
  import Glibc
#endif

extension Streams {
  @Suite(.ownThreads) struct LineReaderTests {
    /// Splits the way the reader promises to, by a different route, to compare against.
    /// (By UTF-8 bytes: as Characters, "\r\n" is one grapheme and would not split on "\n".)
    static func expectedLines(_ text: String) -> [String] {
      var pieces = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
      if pieces.last?.isEmpty == true { pieces.removeLast() }
      return pieces.map { String(decoding: $0.last == UInt8(ascii: "\r") ? $0.dropLast() : $0, as: UTF8.self) }
    }

    /// Lines of every length from 0 to 39, some ending in "\r\n", the last without "\n".
    static let mixedText: String =
      (0..<40).map { length in
        String(repeating: "x", count: length) + (length % 3 == 0 ? "\r\n" : "\n")
      }.joined() + "tail"

    @Test(arguments: [1, 2, 3, 7, 8, 16, 41, 42, 64, 1 << 20])
    func linesSurviveEveryBufferBoundary(bufferCapacity: Int) throws {
      try withScratchFolder { folder in
        let path = folder + "/mixed"
        try writeFile(path, codec: .plain, text: Self.mixedText)
        let lines = try readLines(path, maxLineLength: 40, bufferCapacity: bufferCapacity)
        #expect(lines == Self.expectedLines(Self.mixedText))
        #expect(lines.count == 41)
      }
    }

    struct LengthCase: Sendable, CustomTestStringConvertible {
      var text: String
      /// The line named in the error, or nil when every line fits.
      var failingLine: Int?
      var testDescription: String { "\(text.debugDescription) → \(failingLine.map { "line \($0)" } ?? "fits")" }
    }

    @Test(
      arguments: [
        LengthCase(text: "abc\n0123456789\n", failingLine: nil),
        LengthCase(text: "abc\n0123456789A\n", failingLine: 2),
        LengthCase(text: "0123456789\r\nnext\r\n", failingLine: nil),
        LengthCase(text: "0123456789A\r\n", failingLine: 1),
        LengthCase(text: "x\ny\n0123456789A", failingLine: 3),
        LengthCase(text: "x\ny\n" + String(repeating: "z", count: 100) + "\nw\n", failingLine: 3),
      ], [4, 1 << 20])
    func aLineOverTheLimitIsAnError(lengthCase: LengthCase, bufferCapacity: Int) throws {
      try withScratchFolder { folder in
        let path = folder + "/lines.ndjson"
        try writeFile(path, codec: .zstd(level: 3, workers: 0), text: lengthCase.text)
        let error = storeError { _ = try readLines(path, maxLineLength: 10, bufferCapacity: bufferCapacity) }
        if let line = lengthCase.failingLine {
          #expect(error?.kind == .badInput)
          #expect(error?.message == "\(path):\(line): line longer than 10 bytes")
        } else {
          #expect(error == nil)
        }
      }
    }

    @Test func lineNumberCountsHandedOutLines() throws {
      try withScratchFolder { folder in
        let path = folder + "/numbers"
        try writeFile(path, codec: .plain, text: "one\n\nthree\r\nfour")
        let reader = LineReader(source: try ByteSource.open(path: path))
        #expect(reader.lineNumber == 0)
        var seen: [(Int, String)] = []
        while let line = try reader.nextLine({ String(decoding: $0, as: UTF8.self) }) {
          seen.append((reader.lineNumber, line))
        }
        #expect(seen.map(\.0) == [1, 2, 3, 4])
        #expect(seen.map(\.1) == ["one", "", "three", "four"])
        #expect(reader.lineNumber == 4)
        #expect(try reader.nextLine({ _ in 0 }) == nil)
        #expect(reader.lineNumber == 4)
      }
    }

    @Test(arguments: ["", "\n", "\n\n", "only"])
    func emptyInputHasNoLinesButEmptyLinesCount(text: String) throws {
      try withScratchFolder { folder in
        let path = folder + "/small"
        try writeFile(path, codec: .plain, text: text)
        #expect(try readLines(path) == Self.expectedLines(text))
      }
    }

    @Test func theBodysResultIsReturned() throws {
      try withScratchFolder { folder in
        let path = folder + "/counts"
        try writeFile(path, codec: .plain, text: "ab\ncde\n")
        let reader = LineReader(source: try ByteSource.open(path: path))
        #expect(try reader.nextLine { $0.count } == 2)
        #expect(try reader.nextLine { $0.count } == 3)
        #expect(try reader.nextLine { $0.count } == nil)
      }
    }

    @Test func openingAMissingFileIsNotFound() throws {
      try withScratchFolder { folder in
        let path = folder + "/missing.ndjson"
        let error = try #require(storeError { _ = try ByteSource.open(path: path) })
        #expect(error.kind == .notFound)
        #expect(error.message == "\(path): no such file")
      }
    }

    @Test(arguments: [Codec.plain, .zstd(level: 3, workers: 0)])
    func aPipeThatDeliversByteByByteStillReads(codec: Codec) throws {
      try withScratchFolder { folder in
        let path = folder + "/source"
        try writeFile(path, codec: codec, text: "first\nsecond\r\nthird")
        let bytes = try fileBytes(path)
        var ends: [Int32] = [0, 0]
        try #require(pipe(&ends) == 0)
        let (readEnd, writeEnd) = (ends[0], ends[1])
        defer { close(readEnd) }
        // The magic number and the rest arrive in separate one-byte writes.
        let writer = Thread {
          for byte in bytes {
            var byte = byte
            _ = write(writeEnd, &byte, 1)
          }
          close(writeEnd)
        }
        writer.start()

        let source = try ByteSource(fileDescriptor: readEnd, name: "<stdin>")
        #expect(source.isCompressed == (codec.testDescription != "plain"))
        let reader = LineReader(source: source)
        var lines: [String] = []
        while let line = try reader.nextLine({ String(decoding: $0, as: UTF8.self) }) { lines.append(line) }
        #expect(lines == ["first", "second", "third"])
      }
    }
  }
}
