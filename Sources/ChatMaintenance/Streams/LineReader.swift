import ChatStore

#if canImport(Glibc)
  import Glibc
#endif

/// Splits a ``ByteSource`` into lines with one reusable buffer, so an import of any
/// size runs in constant memory with no allocation per line.
///
/// ```swift
/// let lines = LineReader(source: try ByteSource.open(path: "history.ndjson.zst"))
/// while let record = try lines.nextLine({ try decoder.decode($0) }) { … }
/// ```
public final class LineReader {
  private static let defaultCapacity = 1 << 20
  private static let newline = Int32(UInt8(ascii: "\n"))
  private static let carriageReturn = UInt8(ascii: "\r")

  private let source: ByteSource
  private let maxLineLength: Int
  private var buffer: UnsafeMutablePointer<UInt8>
  private var capacity: Int
  /// The first byte not yet handed out.
  private var start = 0
  /// The end of the bytes read into the buffer.
  private var end = 0
  private var sourceEnded = false
  private var failure: StoreError?

  /// The 1-based number of the line last handed out, for messages like `file:12: …`.
  public private(set) var lineNumber = 0

  /// Reads lines from `source`; a line over `maxLineLength` bytes is an error rather than
  /// a reason to grow the buffer without bound.
  public convenience init(source: ByteSource, maxLineLength: Int = 1 << 20) {
    self.init(source: source, maxLineLength: maxLineLength, bufferCapacity: Self.defaultCapacity)
  }

  /// `bufferCapacity` is the starting size; tests make it small to hit its edges.
  init(source: ByteSource, maxLineLength: Int, bufferCapacity: Int) {
    precondition(maxLineLength > 0 && bufferCapacity > 0, "line and buffer sizes must be positive")
    self.source = source
    self.maxLineLength = maxLineLength
    self.capacity = bufferCapacity
    self.buffer = .allocate(capacity: bufferCapacity)
  }

  deinit { buffer.deallocate() }

  /// Calls `body` with the next line, without "\n" and a trailing "\r", and returns its
  /// result; nil at the end. The bytes are valid only inside `body`.
  ///
  /// A final line without "\n" is still a line; an empty input has none. A line longer
  /// than `maxLineLength` is `StoreError(.badInput, "<name>:<line>: line longer than <max> bytes")`.
  public func nextLine<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) throws -> R? {
    if let failure { throw failure }
    var scanFrom = start
    while true {
      if scanFrom < end, let found = memchr(buffer + scanFrom, Self.newline, end - scanFrom) {
        let lineEnd = found.assumingMemoryBound(to: UInt8.self) - buffer
        return try handOut(upTo: lineEnd, resumingAt: lineEnd + 1, body)
      }
      if sourceEnded {
        return start < end ? try handOut(upTo: end, resumingAt: end, body) : nil
      }
      // The line continues past what is buffered: the tail may be the line plus its "\r".
      if end - start > maxLineLength + 1 { throw fail(tooLong()) }
      if start > 0 {
        memmove(buffer, buffer + start, end - start)  // the tail of a line that crosses the buffer end
        end -= start
        start = 0
      }
      scanFrom = end
      if end == capacity { grow() }
      let count = try source.read(into: UnsafeMutableRawBufferPointer(start: buffer + end, count: capacity - end))
      if count == 0 { sourceEnded = true } else { end += count }
    }
  }

  private func handOut<R>(upTo lineEnd: Int, resumingAt next: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R)
    throws -> R
  {
    var length = lineEnd - start
    if length > 0 && buffer[lineEnd - 1] == Self.carriageReturn { length -= 1 }
    guard length <= maxLineLength else { throw fail(tooLong()) }
    let line = UnsafeBufferPointer(start: buffer + start, count: length)
    start = next
    lineNumber += 1
    return try body(line)
  }

  /// Makes room for a long line: at most `maxLineLength` plus "\r\n", since anything
  /// longer has already been rejected.
  private func grow() {
    let newCapacity = min(capacity * 2, maxLineLength + 2)
    precondition(newCapacity > capacity, "the buffer is full only with lines that are allowed")
    let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
    larger.initialize(from: buffer, count: end)
    buffer.deallocate()
    buffer = larger
    capacity = newCapacity
  }

  private func tooLong() -> StoreError {
    StoreError(
      .badInput, "\(source.name):\(lineNumber + 1): line longer than \(maxLineLength) bytes",
      path: Descriptor.path(of: source.name))
  }

  /// Remembers the error: the reader stops at a line it cannot hand out.
  private func fail(_ error: StoreError) -> StoreError {
    failure = error
    return error
  }
}

@available(*, unavailable) extension LineReader: Sendable {}
