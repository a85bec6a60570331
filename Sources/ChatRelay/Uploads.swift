import CCrypto
import ChatStore
import Dispatch
import Foundation

/// How large a media may be and how long an upload lasts.
public struct MediaLimits: Sendable {
  /// The largest upload accepted, in bytes (`serve --max-media-size`).
  public var maxMediaSize: Int64
  /// How long an upload (and the media only it names) lasts, in milliseconds
  /// (`serve --upload-expiry`).
  public var uploadExpiry: Int64

  public init(maxMediaSize: Int64 = 100 << 20, uploadExpiryHours: Int = 24) {
    self.maxMediaSize = maxMediaSize
    uploadExpiry = Int64(uploadExpiryHours) * 3_600_000
  }
}

/// The relay's media files, in a folder beside its database (`relay.db.media/`, 0700):
/// uploads in progress in `uploads/<id>`, complete media in `blobs/<sha256 hex>` (0600).
struct MediaFolder {
  let root: String

  init(databasePath: String) { root = databasePath + ".media" }

  var uploads: String { root + "/uploads" }
  var blobs: String { root + "/blobs" }
  func upload(_ id: String) -> String { uploads + "/" + id }
  func blob(_ sha256: [UInt8]) -> String { blobs + "/" + SHA256.hex(digest: sha256) }

  /// Creates the folders (0700) when missing.
  func prepare() throws {
    for path in [root, uploads, blobs] where mkdir(path, 0o700) != 0 && errno != EEXIST {
      throw StoreError(.permission, "\(path): cannot create it (\(String(cString: strerror(errno))))", path: path)
    }
  }

  /// The size of a file, or nil when there is none.
  static func size(_ path: String) -> Int64? {
    var info = stat()
    return stat(path, &info) == 0 ? Int64(info.st_size) : nil
  }

  /// How many bytes of `upload` the relay holds: all of them once its media is made (or
  /// its bytes moved to their blob), else the size of its file.
  func offset(of upload: RelayUpload) -> Int64 {
    if upload.mediaId != nil { return upload.length }
    if let size = Self.size(self.upload(upload.id)) { return size }
    return Self.size(blob(upload.sha256)) == upload.length ? upload.length : 0
  }
}

/// The SHA-256 of an upload's first `offset` bytes, carried from PATCH to PATCH so the
/// last one need not read the whole file again (1 GiB: 0.9 s of the service thread).
/// The hashing runs on a queue of its own, beside the service thread's reads and writes
/// (a 1 GiB upload: 4.1 s with it on the service thread, see decision 0019), with at most
/// `backlog` pieces waiting: past that the service thread waits for it.
// @unchecked: `offset` is the service thread's; `hasher` is touched only on `queue`.
final class RunningHash: @unchecked Sendable {
  private(set) var offset: Int64 = 0
  private let hasher = SHA256.Hasher()
  private let queue = DispatchQueue(label: "chat-relay.upload-hash")
  private let room = DispatchSemaphore(value: RunningHash.backlog)
  static let backlog = 32

  /// Hashes the next bytes (a copy of them, later).
  func update(_ bytes: UnsafeRawBufferPointer) {
    let copy = [UInt8](bytes)
    offset += Int64(copy.count)
    room.wait()
    queue.async { [self] in
      copy.withUnsafeBytes { hasher.update($0) }
      room.signal()
    }
  }

  /// The digest of everything given; the hash is spent.
  func finish() -> [UInt8] { queue.sync { hasher.finish() } }
}

/// Takes one PATCH's body into an upload's file as it arrives, hashing it when the
/// client sent `Upload-Checksum`, and into the upload's running hash.
final class UploadStream: HTTPBodySink {
  let upload: RelayUpload
  /// The offset the PATCH started at.
  let start: Int64
  let expectedChecksum: [UInt8]?
  private let descriptor: Int32
  private let hasher: SHA256.Hasher?
  /// The upload's hash so far, when it covers exactly the bytes before `start`; dropped
  /// (nil) once bytes it took are dropped.
  private(set) var running: RunningHash?
  /// What became of the bytes, for the log: kept, or dropped and why.
  private(set) var outcome = "kept"
  private(set) var written: Int64 = 0
  /// Why a write failed (the disk is full), if one did.
  private(set) var failure: String?
  private let ended: (UploadStream) -> Void

  init(
    upload: RelayUpload, path: String, start: Int64, checksum: [UInt8]?, running: RunningHash?,
    ended: @escaping (UploadStream) -> Void
  ) throws {
    descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
    guard descriptor >= 0 else {
      throw StoreError(.writeFailed, "\(path): cannot open it (\(String(cString: strerror(errno))))", path: path)
    }
    // Anything past the offset (a piece of an abandoned, checked PATCH) goes.
    _ = ftruncate(descriptor, off_t(start))
    self.upload = upload
    self.start = start
    expectedChecksum = checksum
    hasher = checksum == nil ? nil : SHA256.Hasher()
    self.running = running?.offset == start ? running : (start == 0 ? RunningHash() : nil)
    self.ended = ended
  }

  func write(_ bytes: UnsafeRawBufferPointer) {
    guard failure == nil, bytes.count > 0 else { return }
    var done = 0
    while done < bytes.count {
      let count = pwrite(
        descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(start + written + Int64(done)))
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else {
        failure = "cannot write the upload's file (\(String(cString: strerror(errno))))"
        return
      }
      done += count
    }
    hasher?.update(bytes)
    running?.update(bytes)
    written += Int64(bytes.count)
  }

  /// The connection ended mid-body: what arrived stays (the client resumes after it),
  /// unless the PATCH carried a checksum that can no longer be checked.
  func abandon() {
    if expectedChecksum != nil || failure != nil {
      drop()
      outcome = "dropped: cut off before its checksum could be checked"
    } else {
      outcome = "kept: cut off"
    }
    close()
  }

  /// Back to `start`: the bytes of this PATCH go, and with them the running hash.
  private func drop() {
    _ = ftruncate(descriptor, off_t(start))
    running = nil
  }

  /// The body is complete: the new offset, or why the piece was dropped (the file is
  /// then back at `start`).
  func finish() -> Result<Int64, APIError> {
    defer { close() }
    if let failure {
      drop()
      outcome = "dropped: \(failure)"
      return .failure(.unavailable(failure))
    }
    if let expectedChecksum, let hasher, hasher.finish() != expectedChecksum {
      drop()
      outcome = "dropped: the checksum did not match"
      return .failure(
        APIError(
          status: 460, code: "checksum_mismatch",
          message:
            "the PATCH's bytes do not match its Upload-Checksum; they were dropped (the offset is still \(start))"
        ))
    }
    // Not synced here: a PATCH's bytes are in the file (they outlive a killed relay), and
    // after a crash of the machine the offset is what the file kept; the whole is checked
    // against its sha256 and synced once, when complete. (A sync per 4 MiB PATCH made a
    // 1 GiB upload 5 s slower.)
    return .success(start + written)
  }

  private var closed = false
  private func close() {
    guard !closed else { return }
    closed = true
    Glibc.close(descriptor)
    ended(self)
  }
}

// MARK: - tus 1.0 uploads and media downloads

extension Relay {
  /// The tus protocol version the relay speaks (`Tus-Resumable`).
  static let tusVersion = "1.0.0"
  /// The tus extensions the relay supports.
  static let tusExtensions = "creation,checksum,expiration,termination"

  /// `OPTIONS /v2/uploads` (tus discovery; no token needed).
  func uploadOptions() -> HTTPResponse {
    HTTPResponse(
      status: 204,
      headers: [
        ("Tus-Resumable", Self.tusVersion), ("Tus-Version", Self.tusVersion), ("Tus-Extension", Self.tusExtensions),
        ("Tus-Max-Size", String(limits.maxMediaSize)), ("Tus-Checksum-Algorithm", "sha256"),
      ])
  }

  /// Requests under `/v2/uploads`: create (POST), offset (HEAD), terminate (DELETE).
  /// PATCH comes through ``uploadPatchRoute(_:)`` and ``finishPatch(_:owner:)``.
  func respondUploads(_ request: HTTPRequest, owner: RelayCredential) throws -> HTTPResponse {
    try requireTus(request)
    if request.path == "/v2/uploads" {
      guard request.method == "POST" else { throw APIError.methodNotAllowed("POST, OPTIONS") }
      return try createUpload(request, owner: owner)
    }
    let upload = try ownUpload(request.path, owner: owner)
    switch request.method {
    case "HEAD": return tusResponse(200, upload: upload, extra: [("Cache-Control", "no-store")])
    case "PATCH": return try finishPatch(request, owner: owner)
    case "DELETE":
      guard !activeUploads.contains(upload.id) else {
        throw APIError.conflict("a PATCH of upload \(upload.id) is in progress")
      }
      try store.deleteUpload(id: upload.id)
      unlink(media.upload(upload.id))
      runningHashes[upload.id] = nil
      return HTTPResponse(status: 204, headers: [("Tus-Resumable", Self.tusVersion)])
    default: throw APIError.methodNotAllowed("HEAD, PATCH, DELETE")
    }
  }

  /// `POST /v2/uploads`: `Upload-Length` and `Upload-Metadata` with `sha256` (the
  /// whole's digest, 64 hex digits) and `mime` (or tus clients' `filetype`).
  private func createUpload(_ request: HTTPRequest, owner: RelayCredential) throws -> HTTPResponse {
    guard request.headers["upload-defer-length"] == nil else {
      throw APIError.badRequest(
        "header 'Upload-Defer-Length': the relay needs the length at creation", field: "Upload-Defer-Length")
    }
    guard request.body.isEmpty else {
      throw APIError.badRequest("send the bytes with PATCH, not in the creation request", field: nil)
    }
    guard let text = request.headers["upload-length"], let length = Int64(text.trimmingSpaces), length >= 0 else {
      throw APIError.badRequest(
        "header 'Upload-Length': expected the upload's size in bytes, a whole number", field: "Upload-Length")
    }
    guard length <= limits.maxMediaSize else {
      throw APIError.tooLarge(
        "header 'Upload-Length': \(length) bytes is over the relay's limit of \(limits.maxMediaSize)",
        field: "Upload-Length")
    }
    let metadata = try Self.uploadMetadata(request.headers["upload-metadata"] ?? "")
    guard let hex = metadata["sha256"], let sha256 = SHA256.bytes(hex: hex.lowercased()), sha256.count == 32 else {
      throw APIError.badRequest(
        "header 'Upload-Metadata': 'sha256' must be the whole upload's SHA-256, 64 hex digits", field: "Upload-Metadata"
      )
    }
    let mime = metadata["mime"] ?? metadata["filetype"] ?? "application/octet-stream"
    guard Self.isMediaType(mime) else {
      throw APIError.badRequest(
        "header 'Upload-Metadata': 'mime' must be a media type such as image/jpeg", field: "Upload-Metadata")
    }
    try media.prepare()
    let now = self.now()
    var upload = RelayUpload(
      id: try Self.uploadID(), userId: owner.user, deviceId: owner.device, length: length, mime: mime, sha256: sha256,
      createdAt: now, expiresAt: now + limits.uploadExpiry, mediaId: nil)
    let path = media.upload(upload.id)
    let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { throw APIError.unavailable("cannot create the upload's file") }
    close(descriptor)
    do {
      try store.createUpload(upload)
    } catch {
      unlink(path)
      throw error
    }
    if length == 0 { upload.mediaId = try complete(upload) }
    return tusResponse(
      201, upload: upload, extra: [("Location", "/v2/uploads/\(upload.id)")])
  }

  /// Where a PATCH's body goes: refused at once (a wrong offset, type or checksum
  /// header), or streamed into the upload's file.
  func uploadPatchRoute(_ request: HTTPRequest) -> HTTPBodyRoute {
    do {
      guard let owner = try authenticate(request) else { throw APIError.unauthorized }
      try requireTus(request)
      let upload = try ownUpload(request.path, owner: owner)
      let start = try checkPatch(request, upload)
      let checksum = try Self.checksum(request.headers["upload-checksum"])
      guard !activeUploads.contains(upload.id) else {
        throw APIError.conflict("a PATCH of upload \(upload.id) is in progress")
      }
      try media.prepare()
      let stream = try UploadStream(
        upload: upload, path: media.upload(upload.id), start: start, checksum: checksum,
        running: runningHashes[upload.id],
        ended: { [weak self, exchange = request.exchange] stream in
          guard let self else { return }
          activeUploads.remove(stream.upload.id)
          uploadStreams[exchange] = nil
          runningHashes[stream.upload.id] = stream.running
          log("upload \(stream.upload.id): \(stream.written) bytes from \(stream.start), \(stream.outcome)")
        })
      activeUploads.insert(upload.id)
      uploadStreams[request.exchange] = stream
      return .stream(stream, limit: Int(clamping: upload.length - start))
    } catch {
      return .refuse(Self.tusError(error))
    }
  }

  /// A PATCH whose body is in: `204` with the new `Upload-Offset` (and `Chat-Media-Id`
  /// once the last byte made the media).
  private func finishPatch(_ request: HTTPRequest, owner: RelayCredential) throws -> HTTPResponse {
    var upload = try ownUpload(request.path, owner: owner)
    if let stream = uploadStreams.removeValue(forKey: request.exchange) {
      let offset = try stream.finish().get()
      if offset == upload.length { upload.mediaId = try complete(upload) }
    } else {
      // No body (Content-Length: 0): the same checks, nothing written.
      let start = try checkPatch(request, upload)
      if start == upload.length && upload.mediaId == nil { upload.mediaId = try complete(upload) }
    }
    return tusResponse(204, upload: upload)
  }

  /// The offset a PATCH must name, checked with its `Content-Type`.
  private func checkPatch(_ request: HTTPRequest, _ upload: RelayUpload) throws -> Int64 {
    guard request.headers["content-type"]?.trimmingSpaces.lowercased() == "application/offset+octet-stream" else {
      throw APIError(
        status: 415, code: "content_type", message: "a PATCH's Content-Type must be application/offset+octet-stream")
    }
    guard let text = request.headers["upload-offset"], let offset = Int64(text.trimmingSpaces), offset >= 0 else {
      throw APIError.badRequest("header 'Upload-Offset': expected a whole number of bytes", field: "Upload-Offset")
    }
    let held = media.offset(of: upload)
    guard offset == held else {
      throw APIError(
        status: 409, code: "offset_mismatch",
        message: "header 'Upload-Offset': the relay holds \(held) bytes of this upload, not \(offset); ask with HEAD",
        field: "Upload-Offset")
    }
    return held
  }

  /// The upload's bytes are all in: checked against its SHA-256, moved to their blob,
  /// and recorded as media. Bytes that do not match are dropped (the offset goes back
  /// to 0) and the answer is 460.
  private func complete(_ upload: RelayUpload) throws -> Int64 {
    let partial = media.upload(upload.id)
    let blob = media.blob(upload.sha256)
    if MediaFolder.size(partial) != nil {
      let running = runningHashes.removeValue(forKey: upload.id)
      guard
        let digest = running?.offset == upload.length
          ? running?.finish() : SHA256.digest(ofFile: partial, length: upload.length)
      else {
        throw APIError.unavailable("cannot read upload \(upload.id)'s file")
      }
      guard digest == upload.sha256 else {
        truncate(partial, 0)
        throw APIError(
          status: 460, code: "checksum_mismatch",
          message:
            "the upload's \(upload.length) bytes do not hash to the sha256 it was created with; they were dropped (the offset is back to 0)"
        )
      }
      if MediaFolder.size(blob) == upload.length {
        unlink(partial)  // the same bytes came before
      } else {
        // On disk before the media is recorded.
        let descriptor = open(partial, O_RDONLY | O_CLOEXEC)
        defer { if descriptor >= 0 { close(descriptor) } }
        guard descriptor >= 0, fdatasync(descriptor) == 0, rename(partial, blob) == 0 else {
          throw APIError.unavailable("cannot move upload \(upload.id)'s file to its blob")
        }
      }
    }
    let now = self.now()
    return try store.completeUpload(upload, now: now, expiresAt: max(upload.expiresAt, now + limits.uploadExpiry))
  }

  /// `GET` or `HEAD /v2/media/{id}`: the bytes of a media its uploader may fetch, whole
  /// or one `Range` of them (206; 416 when it lies past the end).
  func respondMedia(_ request: HTTPRequest, owner: RelayCredential) throws -> HTTPResponse {
    guard request.method == "GET" || request.method == "HEAD" else { throw APIError.methodNotAllowed("GET, HEAD") }
    let text = request.path.dropFirst("/v2/media/".count)
    guard let id = Int64(text), id > 0, let item = try store.media(id: id),
      try store.mayFetch(user: owner.user, media: id)
    else { throw APIError.notFound("no media \(text) for this user") }
    let path = media.blob(item.sha256)
    guard MediaFolder.size(path) == item.size else { throw APIError.notFound("media \(id) is no longer on the relay") }
    var headers = [
      ("Accept-Ranges", "bytes"), ("ETag", "\"\(SHA256.hex(digest: item.sha256))\""), ("Cache-Control", "private"),
    ]
    var status = 200
    var (offset, length) = (Int64(0), item.size)
    if let range = request.headers["range"] {
      switch Self.byteRange(range, size: item.size) {
      case .whole: break
      case .part(let first, let last):
        status = 206
        (offset, length) = (first, last - first + 1)
        headers.append(("Content-Range", "bytes \(first)-\(last)/\(item.size)"))
      case .unsatisfiable:
        var refused = APIError(
          status: 416, code: "range_not_satisfiable", message: "the media has \(item.size) bytes", field: "Range"
        ).response
        refused.headers.append(("Content-Range", "bytes */\(item.size)"))
        return refused
      }
    }
    var response = HTTPResponse(status: status, contentType: item.mime, headers: headers)
    response.file = HTTPFileBody(path: path, offset: offset, length: length)
    return response
  }

  /// Uploads past their time go (with their files), then media no upload names.
  func sweepUploads(now: Int64) {
    guard let expired = try? store.expiredUploads(now: now) else { return }
    for upload in expired where !activeUploads.contains(upload.id) {
      guard (try? store.deleteUpload(id: upload.id)) != nil else { return }
      unlink(media.upload(upload.id))
      runningHashes[upload.id] = nil
    }
    for item in (try? store.dropUnreferencedMedia()) ?? [] { unlink(media.blob(item.sha256)) }
  }

  // MARK: - Pieces

  /// The protocol's error for `error`, with `Tus-Resumable` as every tus answer has it.
  static func tusError(_ error: any Error) -> HTTPResponse {
    var response = apiError(error).response
    response.headers.append(("Tus-Resumable", tusVersion))
    return response
  }

  /// `Tus-Resumable: 1.0.0` on every tus request but OPTIONS (412 otherwise).
  private func requireTus(_ request: HTTPRequest) throws {
    guard request.headers["tus-resumable"]?.trimmingSpaces == Substring(Self.tusVersion) else {
      throw APIError(
        status: 412, code: "tus_version", message: "send 'Tus-Resumable: \(Self.tusVersion)'",
        headers: [("Tus-Version", Self.tusVersion)])
    }
  }

  /// The upload the path names, if it is this user's (another's is 404, as a missing one).
  private func ownUpload(_ path: String, owner: RelayCredential) throws -> RelayUpload {
    let id = String(path.dropFirst("/v2/uploads/".count))
    guard SHA256.bytes(hex: id)?.count == 16, let upload = try store.upload(id: id),
      upload.userId == owner.user
    else { throw APIError.notFound("no upload \(id) for this user") }
    return upload
  }

  /// A tus answer: the upload's offset, length and expiry, and its media once made.
  private func tusResponse(_ status: Int, upload: RelayUpload, extra: [(String, String)] = []) -> HTTPResponse {
    var headers = [
      ("Tus-Resumable", Self.tusVersion), ("Upload-Offset", String(media.offset(of: upload))),
      ("Upload-Length", String(upload.length)), ("Upload-Expires", Self.httpDate(milliseconds: upload.expiresAt)),
    ]
    if let id = upload.mediaId { headers.append(("Chat-Media-Id", String(id))) }
    return HTTPResponse(status: status, headers: headers + extra)
  }

  /// `Upload-Metadata`: `key base64value` pairs separated by commas (the value may be
  /// absent); keys unique.
  static func uploadMetadata(_ header: String) throws -> [String: String] {
    var result: [String: String] = [:]
    for pair in header.split(separator: ",", omittingEmptySubsequences: true) {
      let parts = pair.trimmingCharacters(in: .whitespaces).split(separator: " ", omittingEmptySubsequences: true)
      guard (1...2).contains(parts.count), result[String(parts[0])] == nil else {
        throw APIError.badRequest(
          "header 'Upload-Metadata': expected 'key base64value' pairs separated by commas", field: "Upload-Metadata")
      }
      var value = ""
      if parts.count == 2 {
        guard let data = Data(base64Encoded: String(parts[1])), let text = String(data: data, encoding: .utf8) else {
          throw APIError.badRequest(
            "header 'Upload-Metadata': the value of '\(parts[0])' is not base64 of UTF-8 text", field: "Upload-Metadata"
          )
        }
        value = text
      }
      result[String(parts[0])] = value
    }
    return result
  }

  /// `Upload-Checksum: sha256 <base64 digest>` (nil when absent).
  static func checksum(_ header: String?) throws -> [UInt8]? {
    guard let header else { return nil }
    let parts = header.trimmingSpaces.split(separator: " ", omittingEmptySubsequences: true)
    guard parts.count == 2, parts[0].lowercased() == "sha256" else {
      throw APIError.badRequest(
        "header 'Upload-Checksum': expected 'sha256 <base64 digest>' (the only algorithm the relay checks)",
        field: "Upload-Checksum")
    }
    guard let data = Data(base64Encoded: String(parts[1])), data.count == 32 else {
      throw APIError.badRequest(
        "header 'Upload-Checksum': the digest is not 32 bytes of base64", field: "Upload-Checksum")
    }
    return Array(data)
  }

  /// `type/subtype` of token characters, at most 127 bytes.
  static func isMediaType(_ text: String) -> Bool {
    let parts = text.split(separator: "/", omittingEmptySubsequences: false)
    let token = { (part: Substring) in
      !part.isEmpty && part.utf8.allSatisfy { $0 > 32 && $0 < 127 && !"()<>@,;:\\\"/[]?={}".utf8.contains($0) }
    }
    return text.utf8.count <= 127 && parts.count == 2 && token(parts[0]) && token(parts[1])
  }

  /// A random upload id: 16 bytes from OpenSSL as 32 hex digits.
  static func uploadID() throws -> String {
    var bytes = [UInt8](repeating: 0, count: 16)
    guard RAND_bytes(&bytes, Int32(bytes.count)) == 1 else { throw APIError.internal("OpenSSL's RAND_bytes failed") }
    return SHA256.hex(digest: bytes)
  }

  enum ByteRange: Equatable {
    case whole
    case part(Int64, Int64)
    case unsatisfiable
  }

  /// One `bytes=` range of RFC 9110 (`a-b`, `a-`, `-n`) within `size` bytes; anything
  /// else (several ranges, another unit) is served whole, as the RFC allows.
  static func byteRange(_ header: String, size: Int64) -> ByteRange {
    let text = header.trimmingSpaces
    guard text.hasPrefix("bytes="), !text.contains(",") else { return .whole }
    let spec = text.dropFirst("bytes=".count)
    guard let dash = spec.firstIndex(of: "-") else { return .whole }
    let first = spec[..<dash].trimmingCharacters(in: .whitespaces)
    let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
    if first.isEmpty {
      guard let suffix = Int64(last), suffix >= 0 else { return .whole }
      guard suffix > 0, size > 0 else { return .unsatisfiable }
      return .part(max(0, size - suffix), size - 1)
    }
    guard let start = Int64(first), start >= 0 else { return .whole }
    let end: Int64
    if last.isEmpty {
      end = size - 1
    } else {
      guard let value = Int64(last), value >= start else { return .whole }
      end = min(value, size - 1)
    }
    return start < size ? .part(start, end) : .unsatisfiable
  }

  /// An IMF-fixdate of RFC 9110 (`Wed, 25 Jun 2014 16:00:00 GMT`).
  static func httpDate(milliseconds: Int64) -> String {
    var seconds = time_t(milliseconds / 1000)
    var parts = tm()
    gmtime_r(&seconds, &parts)
    var buffer = [CChar](repeating: 0, count: 64)
    let count = strftime(&buffer, buffer.count, "%a, %d %b %Y %H:%M:%S GMT", &parts)
    return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }
}
