import CZstd
import ChatStore

#if canImport(Glibc)
  import Glibc
#endif

// MARK: - POSIX reads and writes

/// `read(2)` and `write(2)` retried on `EINTR` and short writes, with errors that name
/// the stream, so every sink and source reports failures the same way.
enum Descriptor {
  /// Reads at most `count` bytes; 0 means the end of the input.
  static func read(_ fileDescriptor: Int32, into buffer: UnsafeMutableRawPointer, count: Int, name: String) throws
    -> Int
  {
    while true {
      let result = Glibc.read(fileDescriptor, buffer, count)
      if result >= 0 { return result }
      let code = errno
      if code == EINTR { continue }
      throw error(code, name: name, doing: "read")
    }
  }

  /// Writes all `count` bytes: a pipe or a slow disk may take them a part at a time.
  static func writeAll(_ fileDescriptor: Int32, _ bytes: UnsafeRawPointer, count: Int, name: String) throws {
    var done = 0
    while done < count {
      let result = Glibc.write(fileDescriptor, bytes + done, count - done)
      if result > 0 {
        done += result
        continue
      }
      let code = result < 0 ? errno : EIO  // write(2) returning 0 for a non-empty buffer would loop forever
      if code == EINTR { continue }
      throw error(code, name: name, doing: "write")
    }
  }

  /// An error from `errno`: a full disk is `.diskSpace` so the CLI can say so; anything
  /// else met on an open descriptor (EPIPE, EIO, EBADF…) is `.io`.
  static func error(_ code: Int32, name: String, doing action: String) -> StoreError {
    let kind: StoreError.Kind =
      switch code {
      case ENOSPC, EDQUOT: .diskSpace
      case ENOENT, ENOTDIR: .notFound
      case EACCES, EPERM, EROFS: .permission
      case EPIPE: .brokenPipe
      default: .io
      }
    return StoreError(kind, "cannot \(action) \(name): \(String(cString: strerror(code)))", path: path(of: name))
  }

  /// `<stdin>` and `<stdout>` are not paths, so errors about them carry none.
  static func path(of name: String) -> String? {
    name.hasPrefix("<") ? nil : name
  }
}

// MARK: - zstd return values

/// zstd returns sizes and error codes in the same `size_t`; this is the one place that
/// tells them apart.
/// See https://facebook.github.io/zstd/zstd_manual.html#Chapter4 (`ZSTD_isError`).
enum Zstd {
  /// The zstd magic number as it appears on disk (`0xFD2FB528`, little-endian).
  static let magic: (UInt8, UInt8, UInt8, UInt8) = (0x28, 0xB5, 0x2F, 0xFD)

  /// Returns `result`, or throws the error `describe` builds from `ZSTD_getErrorName`.
  @discardableResult
  @inline(__always)
  static func check(_ result: Int, _ describe: (_ reason: String) -> StoreError) throws -> Int {
    guard ZSTD_isError(result) == 0 else {
      throw describe(String(cString: ZSTD_getErrorName(result)))
    }
    return result
  }
}
