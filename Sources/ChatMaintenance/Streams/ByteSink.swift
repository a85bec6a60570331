import ChatStore

#if canImport(Glibc)
  import Glibc
#endif

// MARK: - ByteSink

/// Where an export's bytes go, so the writer does not care whether they are compressed.
///
/// Sinks buffer; call ``finish()`` once at the end (it flushes and, for zstd, ends the
/// frame) and close the descriptor yourself. A sink that failed keeps throwing that error.
public protocol ByteSink: AnyObject {
  /// Buffers `bytes`, writing to the descriptor whenever the buffer fills.
  func write(_ bytes: UnsafeRawBufferPointer) throws
  /// Writes out everything still buffered so the file is complete; the descriptor stays open.
  func finish() throws
  /// Bytes handed to `write` (before compression), for progress and summaries.
  var bytesWritten: Int64 { get }
}

extension ByteSink {
  /// Writes the UTF-8 bytes of `string` without an intermediate array.
  public func write(_ string: String) throws {
    var string = string
    try string.withUTF8 { try write(UnsafeRawBufferPointer($0)) }
  }

  /// Writes `bytes` as they are.
  public func write(_ bytes: [UInt8]) throws {
    try bytes.withUnsafeBytes { try write($0) }
  }
}

// MARK: - PlainSink

/// An uncompressed sink that gathers small writes into 256 KiB `write(2)` calls.
public final class PlainSink: ByteSink {
  private static let capacity = 256 * 1024

  private let fileDescriptor: Int32
  private let name: String
  private let buffer: UnsafeMutableRawPointer
  private var buffered = 0
  private var failure: StoreError?

  public private(set) var bytesWritten: Int64 = 0

  /// Writes to `fileDescriptor`, which stays open; `name` (a path or `<stdout>`) is used in errors.
  public init(fileDescriptor: Int32, name: String) {
    self.fileDescriptor = fileDescriptor
    self.name = name
    self.buffer = .allocate(byteCount: Self.capacity, alignment: 16)
  }

  deinit { buffer.deallocate() }

  public func write(_ bytes: UnsafeRawBufferPointer) throws {
    if let failure { throw failure }
    guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
    try failing {
      if bytes.count > Self.capacity - buffered { try flush() }
      if bytes.count >= Self.capacity {
        // Large blocks go straight out: copying them would only cost time.
        try Descriptor.writeAll(fileDescriptor, base, count: bytes.count, name: name)
      } else {
        (buffer + buffered).copyMemory(from: base, byteCount: bytes.count)
        buffered += bytes.count
      }
    }
    bytesWritten += Int64(bytes.count)
  }

  public func finish() throws {
    if let failure { throw failure }
    try failing { try flush() }
  }

  private func flush() throws {
    guard buffered > 0 else { return }
    try Descriptor.writeAll(fileDescriptor, buffer, count: buffered, name: name)
    buffered = 0
  }

  /// Remembers the first error: after a failed write the file's contents are unknown.
  private func failing(_ body: () throws -> Void) throws {
    do { try body() } catch let error as StoreError {
      failure = error
      throw error
    }
  }
}

@available(*, unavailable) extension PlainSink: Sendable {}
