import CZstd
import ChatStore

#if canImport(Glibc)
  import Glibc
#endif

/// The bytes of an import file or of standard input, decompressed when they are zstd.
///
/// Compression is recognised by the zstd magic number (`28 B5 2F FD`), never by the
/// file name: a renamed or piped file reads the same. Several concatenated frames
/// read as one stream. An error is remembered and thrown again by later reads.
/// See https://facebook.github.io/zstd/zstd_manual.html#Chapter9 (streaming decompression).
public final class ByteSource {
  /// The file path or `<stdin>`, as it appears in error messages.
  public let name: String
  /// Whether the input starts with the zstd magic number.
  public private(set) var isCompressed: Bool
  /// Raw bytes taken from the descriptor (compressed bytes for zstd), for progress.
  public private(set) var bytesRead: Int64

  private let fileDescriptor: Int32
  private let closesDescriptor: Bool
  /// Raw bytes read ahead: the magic-number probe, and zstd's input afterwards.
  private let input: UnsafeMutableRawPointer
  private let inputCapacity: Int
  private var inputStart = 0
  private var inputEnd: Int
  private var descriptorEnded: Bool
  private let context: OpaquePointer?
  /// `ZSTD_decompressStream`'s last return: 0 exactly when the last frame is complete.
  private var frameRemainder = 1
  private var failure: StoreError?
  /// Content handed out again before the rest (``unread(_:)``).
  private var replay: [UInt8] = []

  /// Reads from `fileDescriptor`, which stays open; `name` (the path, or `<stdin>`) is used in errors.
  ///
  /// Reads the first bytes right away to tell zstd from plain text.
  public convenience init(fileDescriptor: Int32, name: String) throws {
    try self.init(fileDescriptor: fileDescriptor, name: name, closesDescriptor: false)
  }

  init(fileDescriptor: Int32, name: String, closesDescriptor: Bool) throws {
    let capacity = max(ZSTD_DStreamInSize(), 64 * 1024)
    let input = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    var filled = 0
    var ended = false
    do {
      // A pipe may deliver the four magic bytes in several reads.
      while filled < 4 {
        let count = try Descriptor.read(fileDescriptor, into: input + filled, count: capacity - filled, name: name)
        if count == 0 {
          ended = true
          break
        }
        filled += count
      }
    } catch {
      input.deallocate()
      throw error
    }
    let head = UnsafeRawBufferPointer(start: input, count: min(filled, 4))
    let compressed = head.elementsEqual([Zstd.magic.0, Zstd.magic.1, Zstd.magic.2, Zstd.magic.3])
    var context: OpaquePointer?
    if compressed {
      context = ZSTD_createDCtx()
      if context == nil {
        input.deallocate()
        throw StoreError(
          .io, "\(name): cannot create a zstd decompression context (out of memory)", path: Descriptor.path(of: name))
      }
    }
    self.name = name
    self.isCompressed = compressed
    self.bytesRead = Int64(filled)
    self.fileDescriptor = fileDescriptor
    self.closesDescriptor = closesDescriptor
    self.input = input
    self.inputCapacity = capacity
    self.inputEnd = filled
    self.descriptorEnded = ended
    self.context = context
  }

  /// Opens the file at `path` for reading, or standard input for `-`.
  ///
  /// A missing file is `StoreError(.notFound, "<path>: no such file")`.
  public static func open(path: String) throws -> ByteSource {
    if path == "-" { return try ByteSource(fileDescriptor: STDIN_FILENO, name: "<stdin>") }
    var fileDescriptor: Int32
    repeat { fileDescriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC) } while fileDescriptor < 0 && errno == EINTR
    guard fileDescriptor >= 0 else {
      let code = errno
      if code == ENOENT { throw StoreError(.notFound, "\(path): no such file", path: path) }
      throw Descriptor.error(code, name: path, doing: "open")
    }
    do {
      return try ByteSource(fileDescriptor: fileDescriptor, name: path, closesDescriptor: true)
    } catch {
      close(fileDescriptor)
      throw error
    }
  }

  deinit {
    if let context { ZSTD_freeDCtx(context) }
    input.deallocate()
    if closesDescriptor { close(fileDescriptor) }
  }

  /// Fills `buffer` with up to `buffer.count` bytes of content and returns how many; 0 at the end.
  ///
  /// A zstd stream that stops mid-frame is `.badInput` "truncated"; damaged data or a
  /// failed content checksum is `.badInput` "corrupt". Neither is ever returned as data.
  public func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
    if let failure { throw failure }
    guard let base = buffer.baseAddress, !buffer.isEmpty else { return 0 }
    if !replay.isEmpty {
      let count = min(buffer.count, replay.count)
      replay.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: count) }
      replay.removeFirst(count)
      return count
    }
    do {
      return isCompressed
        ? try readCompressed(into: base, count: buffer.count) : try readPlain(into: base, count: buffer.count)
    } catch let error as StoreError {
      failure = error
      throw error
    }
  }

  /// Makes `content`, just read, the next bytes ``read(into:)`` returns: to look at the
  /// start of a stream that cannot be opened twice (standard input), then read it whole.
  public func unread(_ content: [UInt8]) {
    replay = content + replay
  }

  // MARK: - Plain

  private func readPlain(into base: UnsafeMutableRawPointer, count: Int) throws -> Int {
    if inputStart < inputEnd {
      let chunk = min(count, inputEnd - inputStart)
      base.copyMemory(from: input + inputStart, byteCount: chunk)
      inputStart += chunk
      return chunk
    }
    if descriptorEnded { return 0 }
    let chunk = try Descriptor.read(fileDescriptor, into: base, count: count, name: name)
    bytesRead += Int64(chunk)
    if chunk == 0 { descriptorEnded = true }
    return chunk
  }

  // MARK: - zstd

  private func readCompressed(into base: UnsafeMutableRawPointer, count: Int) throws -> Int {
    var output = ZSTD_outBuffer(dst: base, size: count, pos: 0)
    while true {
      if inputStart == inputEnd && frameRemainder == 0 {
        // Between frames with nothing read ahead: the only place a stream may end.
        if output.pos > 0 || descriptorEnded { return output.pos }
        try refill()
        continue
      }
      // Runs with empty input too, to flush what the decoder holds from last time.
      var source = ZSTD_inBuffer(src: input, size: inputEnd, pos: inputStart)
      frameRemainder = try Zstd.check(ZSTD_decompressStream(context, &output, &source)) { reason in
        StoreError(.badInput, "\(name): corrupt zstd stream: \(reason)", path: Descriptor.path(of: name))
      }
      inputStart = source.pos
      if output.pos == output.size { return output.pos }
      if inputStart < inputEnd { continue }  // stopped at the end of a frame; the next one follows
      // All input used and the output has room: the decoder holds nothing more.
      if output.pos > 0 { return output.pos }
      if descriptorEnded {
        guard frameRemainder == 0 else {
          throw StoreError(
            .badInput, "\(name): truncated zstd stream (the file is incomplete)", path: Descriptor.path(of: name))
        }
        return 0
      }
      try refill()
    }
  }

  private func refill() throws {
    let count = try Descriptor.read(fileDescriptor, into: input, count: inputCapacity, name: name)
    bytesRead += Int64(count)
    inputStart = 0
    inputEnd = count
    if count == 0 { descriptorEnded = true }
  }
}

@available(*, unavailable) extension ByteSource: Sendable {}
