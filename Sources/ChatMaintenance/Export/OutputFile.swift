import ChatStore
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A file written under a temporary name beside its target (mode 0600) and renamed
/// over it only when complete: an interrupted write never leaves a file that looks
/// finished. See rename(2).
public final class OutputFile {
  /// The final path.
  public let path: String
  /// The temporary path being written.
  public let temporaryPath: String
  /// The descriptor to write to.
  public let fileDescriptor: Int32
  private var committed = false

  /// Creates `.<name>.tmp-<pid>` beside `path`.
  public init(path: String) throws {
    self.path = path
    let url = URL(fileURLWithPath: path)
    temporaryPath = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).tmp-\(getpid())").path
    unlink(temporaryPath)
    let fd = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard fd >= 0 else {
      let code = errno
      throw StoreError(
        code == ENOENT ? .notFound : code == EACCES ? .permission : .io,
        "cannot create \(path): \(String(cString: strerror(code)))", path: path)
    }
    fileDescriptor = fd
  }

  /// Flushes to disk and renames the file into place.
  public func commit() throws {
    guard fsync(fileDescriptor) == 0 else {
      throw StoreError(.io, "cannot write \(path): \(String(cString: strerror(errno)))", path: path)
    }
    close(fileDescriptor)
    committed = true
    try FileSystem.rename(temporaryPath, to: path)
  }

  deinit {
    if !committed {
      close(fileDescriptor)
      unlink(temporaryPath)
    }
  }
}

@available(*, unavailable)
extension OutputFile: Sendable {}
