import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A destination for text: stdout, stderr, or a buffer in tests.
public struct TextOutput: Sendable {
  /// Whether the destination is a terminal (drives `Progress` and colour decisions).
  public let isTerminal: Bool
  private let writeText: @Sendable (String) -> Void

  /// Creates an output from a write function.
  public init(isTerminal: Bool = false, write: @escaping @Sendable (String) -> Void) {
    self.isTerminal = isTerminal
    self.writeText = write
  }

  /// Writes `text` as is (no newline added).
  public func write(_ text: String) { writeText(text) }

  /// Writes `text` followed by a newline.
  public func writeLine(_ text: String) { writeText(text + "\n") }

  /// The process's standard output, through `print` (so it shares stdio's buffer with `print`;
  /// flushed at exit and by `flushAll()`). Glibc's `stdout` global cannot be used in Swift 6 mode.
  public static var standardOutput: TextOutput {
    TextOutput(isTerminal: Terminal.isTerminal(STDOUT_FILENO)) { text in
      print(text, terminator: "")
    }
  }

  /// The process's standard error (unbuffered; flushes stdout first so the two stay in order).
  public static var standardError: TextOutput {
    TextOutput(isTerminal: Terminal.isTerminal(STDERR_FILENO)) { text in
      fflush(nil)
      writeAll(text, to: STDERR_FILENO)
    }
  }

  /// Writes `text` to a file descriptor whole, retrying interrupted and short writes; a
  /// write that fails otherwise is dropped (Foundation's `FileHandle.write` traps on it:
  /// an error message must never crash the program that reports it).
  public static func writeAll(_ text: String, to descriptor: Int32) {
    let bytes = Array(text.utf8)
    var offset = 0
    bytes.withUnsafeBytes { buffer in
      while offset < buffer.count {
        let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
        if written > 0 {
          offset += written
        } else if written < 0 && errno == EINTR {
          continue
        } else {
          return
        }
      }
    }
  }

  /// Flushes stdio's buffers (e.g. before writing to stderr or handing the terminal to a child).
  public static func flushAll() { fflush(nil) }

  /// An output that appends to `buffer`, reporting `isTerminal` as given (for tests).
  public static func capturing(into buffer: TextBuffer, isTerminal: Bool = false) -> TextOutput {
    TextOutput(isTerminal: isTerminal) { buffer.append($0) }
  }
}

/// Collects written text in memory, e.g. to assert on a command's output in tests.
/// `@unchecked Sendable`: the only mutable state, `storage`, is guarded by `lock`.
public final class TextBuffer: @unchecked Sendable {
  private let lock = NSLock()
  private var storage = ""

  /// Creates an empty buffer.
  public init() {}

  /// Appends text.
  public func append(_ text: String) { lock.withLock { storage += text } }

  /// Everything written so far.
  public var text: String { lock.withLock { storage } }
}

extension String {
  /// The text with its control characters written as escapes (`\n`, `\r`, `\t`,
  /// `\u{1B}`), so a message quoting user input (an argument, a path, a field) stays on
  /// the one line its reader expects.
  public var oneLine: String {
    guard unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return self }
    var out = ""
    for scalar in unicodeScalars {
      switch scalar {
      case "\n": out += "\\n"
      case "\r": out += "\\r"
      case "\t": out += "\\t"
      case _ where scalar.properties.generalCategory == .control:
        out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
      default: out.unicodeScalars.append(scalar)
      }
    }
    return out
  }
}
