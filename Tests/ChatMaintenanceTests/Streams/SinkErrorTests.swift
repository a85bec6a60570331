import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatMaintenance

#if canImport(Glibc)
  import Glibc
#endif

extension Streams {
  @Suite(.ownThreads) struct SinkErrorTests {
    @Test(arguments: [Codec.plain, .zstd(level: 3, workers: 0), .zstd(level: 3, workers: 2)])
    func aFullDiskIsDiskSpaceNamingTheSink(codec: Codec) throws {
      let fileDescriptor = open("/dev/full", O_WRONLY | O_CLOEXEC)
      try #require(fileDescriptor >= 0, "/dev/full is missing")
      defer { close(fileDescriptor) }
      let sink = try codec.makeSink(fileDescriptor: fileDescriptor, name: "export.ndjson")
      let error = try #require(
        storeError {
          try sink.write(Array(Sample.manyUnicodeLines.text.utf8))
          try sink.finish()
        })
      #expect(error.kind == .diskSpace)
      #expect(error.message == "cannot write export.ndjson: No space left on device")
      #expect(error.path == "export.ndjson")

      // The sink stays failed rather than writing a file with a hole in it.
      let again = storeError { try sink.finish() }
      #expect(again?.message == error.message)
    }

    @Test(arguments: [Codec.plain, .zstd(level: 3, workers: 0)])
    func otherWriteErrorsAreIO(codec: Codec) throws {
      let fileDescriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)  // write(2) fails with EBADF
      try #require(fileDescriptor >= 0)
      defer { close(fileDescriptor) }
      let sink = try codec.makeSink(fileDescriptor: fileDescriptor, name: "<stdout>")
      let error = try #require(
        storeError {
          try sink.write("a line\n")
          try sink.finish()
        })
      #expect(error.kind == .io)
      #expect(error.message.hasPrefix("cannot write <stdout>: "))
      #expect(error.path == nil)
    }

    @Test func aBrokenPipeIsItsOwnKind() throws {
      var ends: [Int32] = [0, 0]
      try #require(pipe(&ends) == 0)
      close(ends[0])
      defer { close(ends[1]) }
      // Without this SIGPIPE would end the test process before write(2) could report EPIPE.
      let previous = signal(SIGPIPE, SIG_IGN)
      defer { signal(SIGPIPE, previous) }
      let sink = PlainSink(fileDescriptor: ends[1], name: "<stdout>")
      let error = try #require(
        storeError {
          try sink.write("a line\n")
          try sink.finish()
        })
      #expect(error.kind == .brokenPipe)
      #expect(error.message == "cannot write <stdout>: Broken pipe")
    }
  }
}
