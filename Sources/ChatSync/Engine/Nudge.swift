import Dispatch
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// How other `chat-sync` processes reach a running `chat-sync run` on the same file:
/// one Unix datagram socket next to it (`chats-<id>.db.sync.sock`). `send` writes a
/// request and nudges; `run` wakes at once instead of polling the file.
///
/// Datagrams are one line: `outbox`, `read`, or `typing <userId> <0|1>`.
public enum Nudge {
  /// The socket's path for a database file.
  public static func socketPath(for database: String) -> String { database + ".sync.sock" }
  /// The lock a running `run` holds on a database file.
  public static func lockPath(for database: String) -> String { database + ".sync.lock" }

  /// Sends `text` to the `run` on `database`; false when none is listening.
  @discardableResult
  public static func send(_ text: String, to database: String) -> Bool {
    let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { Glibc.close(fd) }
    guard var address = unixAddress(socketPath(for: database)) else { return false }
    let bytes = Array(text.utf8)
    let sent = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        sendto(fd, bytes, bytes.count, Int32(MSG_DONTWAIT), $0, socklen_t(MemoryLayout<sockaddr_un>.size))
      }
    }
    return sent == bytes.count
  }

  static func unixAddress(_ path: String) -> sockaddr_un? {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let bytes = Array(path.utf8)
    guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      raw.copyBytes(from: bytes)
      raw[bytes.count] = 0
    }
    return address
  }
}

/// The running side: holds the file's sync lock (one `run` per file) and listens on
/// the nudge socket, calling `handler` with each datagram on a background queue.
public final class NudgeListener: @unchecked Sendable {
  // @unchecked: the descriptors are set in init and closed once in `close()`; the
  // dispatch source serialises the handler.
  private let lockFD: Int32
  private var socketFD: Int32 = -1
  private var source: (any DispatchSourceRead)?
  private let socketPath: String

  /// Why a listener could not start.
  public struct Busy: Error, CustomStringConvertible {
    public var description: String
  }

  /// Takes the lock (throws `Busy` when another `run` holds it) and binds the socket
  /// (without one, `run` still works; a nudge then waits for the next event).
  public init(database: String, handler: @escaping @Sendable (String) -> Void) throws {
    socketPath = Nudge.socketPath(for: database)
    let lockPath = Nudge.lockPath(for: database)
    lockFD = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard lockFD >= 0 else {
      throw Busy(description: "\(lockPath): cannot open the sync lock (\(String(cString: strerror(errno))))")
    }
    guard flock(lockFD, LOCK_EX | LOCK_NB) == 0 else {
      Glibc.close(lockFD)
      throw Busy(description: "\(database): another 'chat-sync run' is syncing this file")
    }
    unlink(socketPath)  // a stale one from a killed run: the lock says nobody uses it
    let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0, var address = Nudge.unixAddress(socketPath) else {
      if fd >= 0 { Glibc.close(fd) }
      return
    }
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
    }
    guard bound == 0 else {
      Glibc.close(fd)
      return
    }
    chmod(socketPath, 0o600)
    socketFD = fd
    let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: DispatchQueue(label: "chat-sync.nudge"))
    source.setEventHandler {
      var buffer = [UInt8](repeating: 0, count: 512)
      while true {
        let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        guard count > 0 else { break }
        handler(String(decoding: buffer[..<count], as: UTF8.self))
      }
    }
    source.resume()
    self.source = source
  }

  /// Whether the nudge socket is bound (false: the path was too long or not writable).
  public var isListening: Bool { socketFD >= 0 }

  /// Whether some `run` holds the sync lock of `database` now.
  public static func isRunning(on database: String) -> Bool {
    let fd = open(Nudge.lockPath(for: database), O_RDWR | O_CLOEXEC)
    guard fd >= 0 else { return false }
    defer { Glibc.close(fd) }
    if flock(fd, LOCK_EX | LOCK_NB) == 0 {
      flock(fd, LOCK_UN)
      return false
    }
    return true
  }

  /// Stops listening, removes the socket and releases the lock.
  public func close() {
    source?.cancel()
    source = nil
    if socketFD >= 0 {
      Glibc.close(socketFD)
      unlink(socketPath)
      socketFD = -1
    }
    Glibc.close(lockFD)
  }
}
