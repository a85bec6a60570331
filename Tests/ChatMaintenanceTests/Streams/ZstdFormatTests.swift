import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatMaintenance

#if canImport(Glibc)
  import Glibc
#endif

extension Streams {
  @Suite(.ownThreads) struct ZstdFormatTests {
    // MARK: - What ZstdSink writes

    @Test(arguments: Codec.zstdCases)
    func framesCarryAContentChecksum(codec: Codec) throws {
      try withScratchFolder { folder in
        let path = folder + "/out.zst"
        try writeFile(path, codec: codec, text: "hello\n")
        let bytes = try fileBytes(path)
        try #require(bytes.count > 5)
        #expect(Array(bytes[0..<4]) == [0x28, 0xB5, 0x2F, 0xFD])
        // Frame_Header_Descriptor, bit 2: Content_Checksum_flag (RFC 8878, 3.1.1.1.1).
        #expect(bytes[4] & 0b100 != 0)
      }
    }

    @Test(
      .enabled(if: ZstdTool.path != nil, "needs the zstd command-line tool (apt-get install zstd)"),
      arguments: Codec.zstdCases)
    func zstdCommandDecompressesTheSink(codec: Codec) throws {
      try withScratchFolder { folder in
        let path = folder + "/history.ndjson.zst"
        let text = Sample.manyUnicodeLines.text
        try writeFile(path, codec: codec, text: text)

        let decompressed = try ZstdTool.run(["-d", "-c", "-q", path])
        #expect(decompressed.status == 0, "\(decompressed.stderr)")
        #expect(decompressed.stdout == Data(text.utf8))

        let listing = try ZstdTool.run(["-lv", path])
        #expect(listing.status == 0, "\(listing.stderr)")
        #expect(String(decoding: listing.stdout, as: UTF8.self).contains("Check: XXH64"))
      }
    }

    @Test(.enabled(if: ZstdTool.path != nil, "needs the zstd command-line tool (apt-get install zstd)"))
    func readsWhatTheZstdCommandWrites() throws {
      try withScratchFolder { folder in
        let plain = folder + "/history.ndjson"
        try writeFile(plain, codec: .plain, text: Sample.manyUnicodeLines.text)
        let compressed = try ZstdTool.run(["-q", "-c", plain])
        try #require(compressed.status == 0, "\(compressed.stderr)")
        let path = folder + "/from-cli.zst"
        try compressed.stdout.write(to: URL(fileURLWithPath: path))
        #expect(try readLines(path) == Sample.unicodeLines)
      }
    }

    @Test func anUnusedSinkStillWritesAValidEmptyFrame() throws {
      try withScratchFolder { folder in
        let path = folder + "/empty.zst"
        try writeFile(path, codec: .zstd(level: 3, workers: 1), [])
        let bytes = try fileBytes(path)
        #expect(Array(bytes.prefix(4)) == [0x28, 0xB5, 0x2F, 0xFD])
        let source = try ByteSource.open(path: path)
        #expect(source.isCompressed)
        #expect(try readAll(source).isEmpty)
      }
    }

    // MARK: - Detection

    @Test func compressionIsDetectedByMagicNumberNotName() throws {
      try withScratchFolder { folder in
        let zstdNamedText = folder + "/x.txt"
        let plainNamedZst = folder + "/x.zst"
        try writeFile(zstdNamedText, codec: .zstd(level: 3, workers: 0), text: "compressed\nlines\n")
        try writeFile(plainNamedZst, codec: .plain, text: "plain\nlines\n")

        #expect(try ByteSource.open(path: zstdNamedText).isCompressed)
        #expect(try readLines(zstdNamedText) == ["compressed", "lines"])
        #expect(try ByteSource.open(path: plainNamedZst).isCompressed == false)
        #expect(try readLines(plainNamedZst) == ["plain", "lines"])
      }
    }

    @Test(arguments: ["", "a", "ab\n", "\u{28}\u{B5}"])
    func shortPlainInputsAreNotMistakenForZstd(text: String) throws {
      try withScratchFolder { folder in
        let path = folder + "/short"
        try writeRaw(path, Array(text.utf8))
        let source = try ByteSource.open(path: path)
        #expect(source.isCompressed == false)
        #expect(try readAll(source) == Array(text.utf8))
      }
    }

    @Test func concatenatedFramesReadAsOneStream() throws {
      try withScratchFolder { folder in
        let first = folder + "/1.zst"
        let second = folder + "/2.zst"
        try writeFile(first, codec: .zstd(level: 1, workers: 0), text: "one\ntwo\n")
        try writeFile(second, codec: .zstd(level: 19, workers: 2), text: "three\nfour")
        let both = folder + "/both.zst"
        try writeRaw(both, try fileBytes(first) + fileBytes(second))
        #expect(try readLines(both) == ["one", "two", "three", "four"])
      }
    }

    @Test func writingAfterFinishStartsANewFrame() throws {
      try withScratchFolder { folder in
        let path = folder + "/frames.zst"
        let fileDescriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fileDescriptor >= 0)
        defer { close(fileDescriptor) }
        let sink = try ZstdSink(fileDescriptor: fileDescriptor, name: path, workers: 0)
        try sink.write("first\n")
        try sink.finish()
        let oneFrame = sink.compressedBytes
        try sink.finish()  // nothing new: no second frame
        #expect(sink.compressedBytes == oneFrame)
        try sink.write("second\n")
        try sink.finish()
        #expect(sink.compressedBytes > oneFrame)
        #expect(try readLines(path) == ["first", "second"])
      }
    }

    // MARK: - Damage

    enum Cut: Sendable, CustomTestStringConvertible {
      case keepFirst(Int)
      case keepHalf
      case dropLast(Int)

      var testDescription: String {
        switch self {
        case .keepFirst(let count): "keep first \(count) bytes"
        case .keepHalf: "keep half"
        case .dropLast(let count): "drop last \(count) bytes"
        }
      }

      func apply(_ bytes: [UInt8]) -> [UInt8] {
        switch self {
        case .keepFirst(let count): Array(bytes.prefix(count))
        case .keepHalf: Array(bytes.prefix(bytes.count / 2))
        case .dropLast(let count): Array(bytes.dropLast(count))
        }
      }
    }

    @Test(arguments: [Cut.keepFirst(4), .keepFirst(6), .keepHalf, .dropLast(4), .dropLast(1)])
    func aCutStreamIsTruncatedNotShort(cut: Cut) throws {
      try withScratchFolder { folder in
        let whole = folder + "/whole.zst"
        try writeFile(whole, codec: .zstd(level: 3, workers: 0), text: Sample.manyUnicodeLines.text)
        let path = folder + "/cut.zst"
        try writeRaw(path, cut.apply(try fileBytes(whole)))

        var linesBeforeError: [String] = []
        let error = try #require(
          storeError {
            let reader = LineReader(source: try ByteSource.open(path: path))
            while let line = try reader.nextLine({ String(decoding: $0, as: UTF8.self) }) {
              linesBeforeError.append(line)
            }
          })
        #expect(error.kind == .badInput)
        #expect(error.message == "\(path): truncated zstd stream (the file is incomplete)")
        // What came out before the error is the file's start, never garbage; when only the
        // checksum is missing that may be every line, and the error still comes.
        #expect(Array(Sample.unicodeLines.prefix(linesBeforeError.count)) == linesBeforeError)
      }
    }

    @Test(arguments: [0.2, 0.5, 0.8])
    func aFlippedByteIsAnErrorNeverGarbage(position: Double) throws {
      try withScratchFolder { folder in
        let path = folder + "/damaged.zst"
        try writeFile(path, codec: .zstd(level: 3, workers: 0), text: Sample.manyUnicodeLines.text)
        var bytes = try fileBytes(path)
        bytes[Int(Double(bytes.count) * position)] ^= 0x5A
        try writeRaw(path, bytes)

        let error = try #require(
          storeError {
            let source = try ByteSource.open(path: path)
            _ = try readAll(source)
          })
        #expect(error.kind == .badInput)
        #expect(error.message.hasPrefix("\(path): corrupt zstd stream: "), "\(error.message)")
      }
    }

    @Test func anErrorIsThrownAgainOnTheNextRead() throws {
      try withScratchFolder { folder in
        let whole = folder + "/whole.zst"
        try writeFile(whole, codec: .zstd(level: 3, workers: 0), text: "a line\n")
        let path = folder + "/cut.zst"
        try writeRaw(path, Array(try fileBytes(whole).dropLast(2)))
        let source = try ByteSource.open(path: path)
        let first = storeError { _ = try readAll(source) }
        let second = storeError { _ = try readAll(source) }
        #expect(first?.message.contains("truncated") == true)
        #expect(second?.message == first?.message)
      }
    }
  }
}
