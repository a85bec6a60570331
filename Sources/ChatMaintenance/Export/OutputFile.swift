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
  /// Set once `fileDescriptor` is closed, so it is closed exactly once.
  private var closed = false
  /// Set once the file is in place: from then on the temporary name is gone.
  private var committed = false

  /// Creates `.<name>.tmp-<pid>` beside `path`. A symbolic link is followed (the file
  /// it names is replaced); anything there that is not a regular file (a folder, a
  /// device such as /dev/null) is refused rather than replaced.
  public init(path: String) throws {
    var target = path
    var info = stat()
    if lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK {
      target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
    }
    if stat(target, &info) == 0 && (info.st_mode & S_IFMT) != S_IFREG {
      throw StoreError(.io, "\(path) exists and is not a regular file; refusing to replace it", path: path)
    }
    self.path = target
    let (folder, name) = FileSystem.splitPath(target)
    temporaryPath = FileSystem.joinPath(folder, ".\(name).tmp-\(getpid())")
    unlink(temporaryPath)
    let fd = open(temporaryPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard fd >= 0 else {
      let code = errno
      throw StoreError(
        code == ENOENT ? .notFound : code == EACCES ? .permission : .io,
        "cannot create \(target): \(String(cString: strerror(code)))", path: target)
    }
    fileDescriptor = fd
  }

  /// Flushes to disk and renames the file into place.
  ///
  /// When this throws, the file is not in place and the temporary file is removed when
  /// this object is released.
  public func commit() throws {
    guard !committed else { return }
    if !closed {
      guard fsync(fileDescriptor) == 0 else {
        throw StoreError(.io, "cannot write \(path): \(String(cString: strerror(errno)))", path: path)
      }
      closed = true
      // close(2) can report a failed write-back (NFS, quotas); the descriptor is gone
      // either way.
      guard close(fileDescriptor) == 0 else {
        throw StoreError(.io, "cannot write \(path): \(String(cString: strerror(errno)))", path: path)
      }
    }
    // Committed only once the rename succeeded: a failed rename leaves the temporary
    // file ours to remove.
    try FileSystem.rename(temporaryPath, to: path)
    committed = true
  }

  deinit {
    if !closed { close(fileDescriptor) }
    if !committed { unlink(temporaryPath) }
  }
}

@available(*, unavailable)
extension OutputFile: Sendable {}
