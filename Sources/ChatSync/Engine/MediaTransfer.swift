import ChatProtocol
import ChatStore
import Foundation
import LWSSupport

/// Media up to and down from the relay (`docs/protocol.md`, "Media"): uploads with tus
/// 1.0, a chunk a `PATCH`, resumable from the relay's offset after any failure or kill
/// (what reached the relay of a cut-off chunk stays: less than one chunk is sent twice);
/// downloads a chunk a ranged `GET`, appended to a partial file, so memory stays one
/// chunk whatever the size.
///
/// The chunks carry no `Upload-Checksum`: the relay checks the whole upload against the
/// SHA-256 it was created with, and hashing every chunk as well cost 1 s of CPU a GiB on
/// each side (decision 0019).
///
/// ```swift
/// let transfer = MediaTransfer(http: .libwebsockets(base: relay, token: token))
/// let url = try await transfer.create(length: size, sha256: digest, mime: "image/jpeg")
/// let media = try await transfer.send(file: path, to: url)  // again after a failure: it resumes
/// try await transfer.download(media: media, size: size, sha256: digest, to: "photo.jpg")
/// ```
public struct MediaTransfer: Sendable {
  let http: HTTPTransport
  /// Bytes a `PATCH` or ranged `GET` carries.
  public var chunkSize: Int
  /// Seconds one request may take.
  public var timeout: Double

  public init(http: HTTPTransport, chunkSize: Int = 4 << 20, timeout: Double = 60) {
    self.http = http
    self.chunkSize = chunkSize
    self.timeout = timeout
  }

  /// Why a transfer stopped; `retryable` when trying again later may succeed (no
  /// connection, a 5xx, bytes that did not match and were dropped).
  public struct Failure: Error, CustomStringConvertible, Sendable {
    public var description: String
    public var retryable: Bool
    /// No connection could be made: nothing reached the relay (a device offline).
    public var neverConnected = false
    /// Another process is downloading the same file (its partial file is locked).
    public var lockedByAnother = false
  }

  static let tus = ("Tus-Resumable", "1.0.0")
  /// Bytes a `pwrite` of a download writes at most.
  static let writePiece = 256 * 1024

  /// Starts an upload of `length` bytes whose SHA-256 is `sha256`: its URL, to keep
  /// until the upload is done (``send(file:to:progress:)`` resumes with it).
  public func create(length: Int64, sha256: [UInt8], mime: String) async throws(Failure) -> String {
    let metadata =
      "sha256 \(Data(SHA256.hex(digest: sha256).utf8).base64EncodedString()),mime \(Data(mime.utf8).base64EncodedString())"
    let reply = try await call(
      HTTPCall(
        method: "POST", path: "/v2/uploads", body: [], timeout: timeout,
        headers: [Self.tus, ("Upload-Length", String(length)), ("Upload-Metadata", metadata)]))
    guard reply.status == 201, let location = reply.headers["location"], location.hasPrefix("/v2/uploads/") else {
      throw Self.failure("POST /v2/uploads", reply)
    }
    return location
  }

  /// How many bytes of the upload at `url` the relay holds, with the media id once it
  /// made one; nil when the relay has no such upload (expired, or another user's).
  public func offset(of url: String) async throws(Failure) -> (offset: Int64, media: Int64?)? {
    let reply = try await call(HTTPCall(method: "HEAD", path: url, timeout: timeout, headers: [Self.tus]))
    if reply.status == 404 { return nil }
    guard reply.status == 200, let offset = reply.headers["upload-offset"].flatMap({ Int64($0) }) else {
      throw Self.failure("HEAD \(url)", reply)
    }
    return (offset, reply.headers["chat-media-id"].flatMap { Int64($0) })
  }

  /// Whether the relay still has media `media` for this user (`HEAD /v2/media/{id}`).
  public func has(media: Int64) async throws(Failure) -> Bool {
    let reply = try await call(HTTPCall(method: "HEAD", path: "/v2/media/\(media)", timeout: timeout))
    if reply.status == 404 { return false }
    guard reply.status == 200 else { throw Self.failure("HEAD /v2/media/\(media)", reply) }
    return true
  }

  /// Sends what the relay does not hold yet of `file` to the upload at `url`, a chunk at
  /// a time; returns the media id the last chunk made. `progress` gets the relay's
  /// offset after each chunk.
  public func send(file: String, to url: String, progress: (Int64) -> Void = { _ in }) async throws(Failure)
    -> Int64
  {
    guard let start = try await offset(of: url) else {
      throw Failure(description: "\(url): the relay no longer has this upload", retryable: false)
    }
    if let media = start.media { return media }
    let descriptor = open(file, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else {
      throw Failure(description: "\(file): cannot read it (\(String(cString: strerror(errno))))", retryable: false)
    }
    defer { close(descriptor) }
    var info = stat()
    fstat(descriptor, &info)
    let length = Int64(info.st_size)
    var offset = start.offset
    var chunk = [UInt8](repeating: 0, count: chunkSize)
    while true {
      let count = Int(min(Int64(chunkSize), length - offset))
      let read =
        count == 0 ? 0 : chunk.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, count, off_t(offset)) }
      guard read == count else {
        throw Failure(description: "\(file): changed or cut short while uploading", retryable: false)
      }
      let piece = Array(chunk[0..<count])
      let reply = try await call(
        HTTPCall(
          method: "PATCH", path: url, body: piece, timeout: timeout, contentType: "application/offset+octet-stream",
          headers: [Self.tus, ("Upload-Offset", String(offset))]))
      switch reply.status {
      case 204:
        guard let next = reply.headers["upload-offset"].flatMap({ Int64($0) }) else {
          throw Self.failure("PATCH \(url)", reply)
        }
        offset = next
        progress(offset)
        if let media = reply.headers["chat-media-id"].flatMap({ Int64($0) }) { return media }
        guard offset < length else { throw Self.failure("PATCH \(url)", reply) }
      case 409:
        // The relay holds another offset (a PATCH cut short before): ask it, go on from there.
        guard let held = try await self.offset(of: url) else { throw Self.failure("PATCH \(url)", reply) }
        if let media = held.media { return media }
        offset = held.offset
      default:
        throw Self.failure("PATCH \(url)", reply)
      }
    }
  }

  /// Downloads media `media` (`size` bytes, SHA-256 `sha256`) to `path`: the bytes go to
  /// `path + ".part"` first (a download stopped part-way resumes from its length) and
  /// the file is renamed to `path` once all of it hashed right.
  public func download(
    media: Int64, size: Int64, sha256: [UInt8], to path: String, progress: (Int64) -> Void = { _ in }
  ) async throws(Failure) {
    let partial = path + ".part"
    let descriptor = open(partial, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else {
      throw Failure(description: "\(partial): cannot write it (\(String(cString: strerror(errno))))", retryable: false)
    }
    defer { close(descriptor) }
    // One download of a file at a time, whichever process (`run` and `fetch` may meet).
    guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
      throw Failure(description: "\(path): another process is downloading it", retryable: true, lockedByAnother: true)
    }
    var info = stat()
    fstat(descriptor, &info)
    var done = stat()
    if stat(path, &done) == 0 {
      if Int64(done.st_size) == size {
        // Another process finished it while this one opened the partial file.
        if done.st_ino != info.st_ino { unlink(partial) }
        return
      }
      // A file of another size (cut short on disk): downloaded again over it.
      unlink(path)
    }
    var offset = min(Int64(info.st_size), size)
    // Hashed as it arrives; a resumed download hashes what it already has first.
    let hasher = SHA256.Hasher()
    guard hasher.update(file: descriptor, offset: 0, length: offset) else {
      throw Failure(description: "\(partial): cannot read it back", retryable: false)
    }
    // One chunk is asked for while the one before is written and hashed.
    let http = self.http
    let timeout = self.timeout
    func fetch(_ from: Int64) -> Task<HTTPReply, any Error> {
      let last = min(size, from + Int64(chunkSize)) - 1
      return Task {
        try await http.send(
          HTTPCall(
            method: "GET", path: "/v2/media/\(media)", timeout: timeout, headers: [("Range", "bytes=\(from)-\(last)")]))
      }
    }
    var next = offset < size ? fetch(offset) : nil
    defer { next?.cancel() }
    while let current = next {
      // A stop (the run's, a deadline's) ends the download between chunks; the partial
      // file keeps what came, for the next run.
      guard !Task.isCancelled else { throw Failure(description: "stopped", retryable: true) }
      let reply: HTTPReply
      do {
        reply = try await withTaskCancellationHandler {
          try await current.value
        } onCancel: {
          current.cancel()
        }
      } catch {
        throw Failure(description: "\(error)", retryable: true)
      }
      let end = min(size, offset + Int64(chunkSize))
      next = end < size ? fetch(end) : nil
      guard reply.status == 206, reply.body.count == Int(end - offset) else {
        throw Self.failure("GET /v2/media/\(media)", reply)
      }
      // In pieces of 256 KiB: on this machine's ext4 one pwrite of 4 MiB costs 4.5 times
      // the time of 16 of 256 KiB (dd: 1 GiB in 2.7 s with 4 MiB blocks, 0.6 s with 256 KiB).
      let complete = reply.body.withUnsafeBytes { bytes -> Bool in
        var done = 0
        while done < bytes.count {
          let count = min(Self.writePiece, bytes.count - done)
          let written = pwrite(descriptor, bytes.baseAddress! + done, count, off_t(offset) + off_t(done))
          if written < 0 && errno == EINTR { continue }
          guard written > 0 else { return false }
          done += written
        }
        hasher.update(bytes)
        return true
      }
      guard complete else {
        throw Failure(
          description: "\(partial): cannot write it (\(String(cString: strerror(errno))))", retryable: false)
      }
      offset = end
      progress(offset)
    }
    guard hasher.finish() == sha256 else {
      // Bytes that do not hash right are dropped: the next try starts again.
      unlink(partial)
      throw Failure(description: "media \(media): the bytes downloaded do not match its sha256", retryable: true)
    }
    guard fsync(descriptor) == 0, rename(partial, path) == 0 else {
      throw Failure(description: "\(path): cannot write it (\(String(cString: strerror(errno))))", retryable: false)
    }
  }

  private func call(_ request: HTTPCall) async throws(Failure) -> HTTPReply {
    do {
      return try await http.send(request)
    } catch let error as TransportError where error.neverConnected {
      throw Failure(description: "\(error)", retryable: true, neverConnected: true)
    } catch {
      throw Failure(description: "\(error)", retryable: true)
    }
  }

  /// `POST /v2/uploads: HTTP 413 too_large: …`; retryable for 5xx, 408, 429 and 460.
  static func failure(_ what: String, _ reply: HTTPReply) -> Failure {
    var reason = "HTTP \(reply.status)"
    if let body = try? WireJSON.decode(ErrorBody.self, from: reply.body) {
      reason += " \(body.error.code): \(body.error.message)"
    }
    return Failure(
      description: "\(what): \(reason)", retryable: reply.status >= 500 || [408, 429, 460].contains(reply.status))
  }
}
