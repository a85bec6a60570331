import ChatStore

/// Follows the `media` lines of a history (format 3): each file's pieces in order from
/// offset 0 to its size, one file after another, its bytes hashing to its name once its
/// last piece is in. What verifying an export and importing it both check.
///
/// ```swift
/// var sequence = MediaSequence()
/// if try sequence.take(piece) { … }  // the file is complete and its hash checked out
/// try sequence.finish()  // at the end: no file cut short
/// ```
struct MediaSequence {
  private var sha256 = ""
  private var size: Int64 = 0
  private var received: Int64 = 0
  /// The hash of the file under way; nil between files.
  private var hasher: SHA256.Hasher?
  /// Files completed, and their bytes.
  private(set) var files: Int64 = 0
  private(set) var bytes: Int64 = 0

  /// Whether the next piece must start a file.
  var betweenFiles: Bool { hasher == nil }

  /// Takes the next piece; true when it completes its file, whose bytes then hashed to
  /// its name.
  mutating func take(_ piece: MediaPiece) throws(RecordError) -> Bool {
    if hasher == nil {
      guard piece.offset == 0 else {
        throw RecordError.field("offset", "\(piece.offset), but media \(piece.sha256) has not started (offset 0)")
      }
      sha256 = piece.sha256
      size = piece.size
      received = 0
      hasher = SHA256.Hasher()
    } else {
      guard piece.sha256 == sha256 else {
        throw RecordError("media \(sha256) ends early, at \(received) of its \(size) bytes (truncated?)")
      }
      guard piece.size == size else {
        throw RecordError.field("size", "\(piece.size), but the lines before it say \(size)")
      }
      guard piece.offset == received else {
        throw RecordError.field("offset", "\(piece.offset), but media \(sha256) continues at \(received)")
      }
    }
    piece.data.withUnsafeBytes { hasher?.update($0) }
    received += Int64(piece.data.count)
    guard received == size, let hasher else { return false }
    self.hasher = nil
    let digest = SHA256.hex(digest: hasher.finish())
    guard digest == sha256 else {
      throw RecordError.field("data", "the file's bytes hash to \(digest), not to its sha256 \(sha256)")
    }
    files += 1
    bytes += size
    return true
  }

  /// At the end of the media: a file cut short is an error.
  func finish() throws(RecordError) {
    guard hasher == nil else {
      throw RecordError("media \(sha256) ends early, at \(received) of its \(size) bytes (truncated?)")
    }
  }
}
