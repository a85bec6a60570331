import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatMaintenance

#if canImport(Glibc)
  import Glibc
#endif

extension Streams {
  @Suite(.ownThreads) struct RoundTripTests {
    @Test(arguments: Codec.all, Sample.allCases)
    func linesComeBackAsWritten(codec: Codec, sample: Sample) throws {
      try withScratchFolder { folder in
        let path = folder + "/history.ndjson"
        try writeFile(path, codec: codec, text: sample.text)
        let lines = try readLines(path)
        #expect(lines.count == sample.lines.count)
        #expect(lines == sample.lines)
      }
    }

    @Test(arguments: Codec.all)
    func bytesAndCountersRoundTrip(codec: Codec) throws {
      try withScratchFolder { folder in
        let path = folder + "/history.ndjson"
        let original = Array(Sample.manyUnicodeLines.text.utf8)
        let sink = try writeFile(path, codec: codec, original)
        let onDisk = try fileBytes(path)
        #expect(sink.bytesWritten == Int64(original.count))
        if let zstd = sink as? ZstdSink {
          #expect(zstd.compressedBytes == Int64(onDisk.count))
          #expect(onDisk.count < original.count / 3, "this text compresses well")
        } else {
          #expect(onDisk == original)
        }

        let source = try ByteSource.open(path: path)
        #expect(source.name == path)
        #expect(source.isCompressed == (sink is ZstdSink))
        let readBack = try readAll(source)
        #expect(readBack == original)
        #expect(source.bytesRead == Int64(onDisk.count))
      }
    }

    @Test(arguments: Codec.all)
    func stringAndArrayWritesAreUTF8(codec: Codec) throws {
      try withScratchFolder { folder in
        let path = folder + "/out"
        let fileDescriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        try #require(fileDescriptor >= 0)
        defer { close(fileDescriptor) }
        let sink = try codec.makeSink(fileDescriptor: fileDescriptor, name: path)
        try sink.write("Grüße 👋\n")
        try sink.write(Array("你好\n".utf8))
        try sink.finish()
        #expect(sink.bytesWritten == Int64("Grüße 👋\n你好\n".utf8.count))
        #expect(try readLines(path) == ["Grüße 👋", "你好"])
      }
    }
  }
}
