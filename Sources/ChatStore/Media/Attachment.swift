/// Where a media's bytes are (`Media.state`, migration 0009).
public enum MediaState: String, CaseIterable, Sendable {
  /// The file is in the media folder.
  case local
  /// A download is under way or was stopped part-way (`<sha256>.part`).
  case partial
  /// Only on the relay: never fetched here.
  case remote
  /// Removed here by eviction; fetched again on demand while the relay keeps it.
  case evicted
}

/// What kind of media a type names, as storage reports group them.
public enum MediaKind: String, CaseIterable, Sendable {
  case image, video, audio, file

  /// The kind of a media type (`image/jpeg` is an image; anything unknown is a file).
  public init(mime: String) {
    self =
      switch mime.prefix(while: { $0 != "/" }).lowercased() {
      case "image": .image
      case "video": .video
      case "audio": .audio
      default: .file
      }
  }

  /// The kind as SQL over a `mime` column.
  public static func sql(_ column: String) -> String {
    """
    CASE WHEN \(column) LIKE 'image/%' THEN 'image' WHEN \(column) LIKE 'video/%' THEN 'video' \
    WHEN \(column) LIKE 'audio/%' THEN 'audio' ELSE 'file' END
    """
  }
}

/// A media a message (or an outbox request) carries: the file by its SHA-256, what is
/// known of it, and the thumbnail that travels with the message.
public struct Attachment: Hashable, Sendable {
  /// The file's SHA-256, 64 lowercase hex digits: its name in the media folder.
  public var sha256: String
  public var mime: String
  public var size: Int64
  /// The relay's media id, once uploaded or received.
  public var relayID: Int64?
  /// Pixels, for images and video, when known.
  public var width: Int64?
  public var height: Int64?
  /// Milliseconds, for audio and video, when known.
  public var durationMs: Int64?
  /// A JPEG or WebP of at most 320 px a side and 20 KiB.
  public var thumbnail: [UInt8]?
  /// Where the bytes are (read back from the file; ignored when storing).
  public var state: MediaState

  public init(
    sha256: String, mime: String, size: Int64, relayID: Int64? = nil, width: Int64? = nil, height: Int64? = nil,
    durationMs: Int64? = nil, thumbnail: [UInt8]? = nil, state: MediaState = .remote
  ) {
    self.sha256 = sha256
    self.mime = mime
    self.size = size
    self.relayID = relayID
    self.width = width
    self.height = height
    self.durationMs = durationMs
    self.thumbnail = thumbnail
    self.state = state
  }

  public var kind: MediaKind { MediaKind(mime: mime) }
}

extension Attachment {
  /// The media type a file name suggests, by its extension; `application/octet-stream`
  /// for any other.
  public static func mime(forFileName name: String) -> String {
    let lowered = name.lowercased()
    guard let dot = lowered.lastIndex(of: "."), !lowered[dot...].contains("/") else {
      return "application/octet-stream"
    }
    return types[String(lowered[lowered.index(after: dot)...])] ?? "application/octet-stream"
  }

  static let types: [String: String] = [
    "jpg": "image/jpeg", "jpeg": "image/jpeg", "png": "image/png", "gif": "image/gif", "webp": "image/webp",
    "heic": "image/heic", "avif": "image/avif", "tif": "image/tiff", "tiff": "image/tiff", "bmp": "image/bmp",
    "svg": "image/svg+xml", "ppm": "image/x-portable-pixmap", "pgm": "image/x-portable-graymap",
    "mp4": "video/mp4", "m4v": "video/mp4", "mov": "video/quicktime", "webm": "video/webm", "mkv": "video/x-matroska",
    "mp3": "audio/mpeg", "m4a": "audio/mp4", "aac": "audio/aac", "ogg": "audio/ogg", "opus": "audio/opus",
    "wav": "audio/wav", "flac": "audio/flac",
    "pdf": "application/pdf", "txt": "text/plain", "zip": "application/zip", "json": "application/json",
  ]
}
