import ChatStore

#if canImport(Glibc)
  import Glibc
#endif

/// Checks a chatdb export whole without importing it, so import can refuse a damaged
/// export before changing anything.
///
/// ```swift
/// let verification = try ExportVerifier.verify(path: "export.ndjson.zst")
/// if verification.isExport { print(verification.records ?? 0, "records") }
/// ```
/// A damaged compressed file is caught by the zstd frame checksum, see
/// <https://www.rfc-editor.org/rfc/rfc8878#section-3.1.1>.
public enum ExportVerifier {
  /// What a verification pass found.
  public struct Verification: Sendable {
    /// Whether the file starts with a chatdb header (and so must end with a trailer).
    public var isExport: Bool
    /// Record lines (header and trailer excluded), when the file was read whole.
    public var records: Int64?
    /// Bytes after decompression, when the file was read whole.
    public var decodedBytes: Int64?
    /// Whose history the header says it is.
    public var userID: Int64?
    /// Media files in `media` lines (format 3), their bytes, and the bytes of those
    /// lines (part of `decodedBytes`): what an import writes into the media folder.
    public var mediaFiles: Int64 = 0
    public var mediaBytes: Int64 = 0
    public var mediaLineBytes: Int64 = 0
  }

  /// Reads the file at `path`: a chatdb export must decompress cleanly (zstd
  /// checksum), end with its trailer and hold as many records as the trailer says, and
  /// its media files (format 3) whole, each hashing to its name, as many as the trailer
  /// says. Other NDJSON (no header on line 1) is not read beyond its first line.
  public static func verify(path: String) throws -> Verification {
    let source = try ByteSource.open(path: path)
    let lines = LineReader(source: source, maxLineLength: maximumHistoryLineBytes)
    let parser = RecordParser()
    var header: HistoryHeader?
    var decoded: Int64 = 0
    _ = try lines.nextLine { line in
      decoded = Int64(line.count) + 1
      if hasPrefix(line, #"{"type":"header""#), (try? parser.parse(line)) == .header { header = try? parser.header() }
    }
    guard let header else { return Verification(isExport: false, records: nil, decodedBytes: nil, userID: nil) }
    guard header.version <= HistoryHeader.currentVersion else {
      throw StoreError(
        .badInput,
        "\(path):1: header: format version \(header.version) is newer than this chatdb reads (\(HistoryHeader.currentVersion)); use a newer chatdb",
        path: path)
    }
    var records: Int64 = 0
    var trailer: HistoryTrailer?
    var media = MediaSequence()
    var mediaLineBytes: Int64 = 0
    while (try lines.nextLine({ line -> Bool in
      decoded += Int64(line.count) + 1
      if hasPrefix(line, #"{"type":"trailer""#), (try? parser.parse(line)) == .trailer {
        do { trailer = try parser.trailer() } catch {
          throw StoreError(.badInput, "\(path):\(lines.lineNumber): \(error)", path: path)
        }
      } else if hasPrefix(line, #"{"type":"media""#) {
        // A file's bytes: checked here whole, so a damaged one changes nothing.
        mediaLineBytes += Int64(line.count) + 1
        do {
          guard try parser.parseLine(line) == .media else { throw RecordError("not a media line") }
          _ = try media.take(try parser.mediaPiece())
        } catch {
          throw StoreError(.badInput, "\(path):\(lines.lineNumber): \(error)", path: path)
        }
      } else if !line.isEmpty {
        records += 1
      }
      return true
    })) != nil {}
    guard let trailer else {
      throw StoreError(.badInput, "\(path): the trailer is missing: the export is incomplete (truncated?)", path: path)
    }
    do { try media.finish() } catch { throw StoreError(.badInput, "\(path): \(error)", path: path) }
    guard trailer.total == records else {
      throw StoreError(
        .badInput, "\(path): the trailer counts \(trailer.total) records but the file holds \(records)", path: path)
    }
    guard (trailer.media ?? 0) == media.files && (trailer.mediaBytes ?? 0) == media.bytes else {
      throw StoreError(
        .badInput,
        "\(path): the trailer counts \(trailer.media ?? 0) media files of \(trailer.mediaBytes ?? 0) bytes "
          + "but the file holds \(media.files) of \(media.bytes)", path: path)
    }
    return Verification(
      isExport: true, records: records, decodedBytes: decoded, userID: header.userID, mediaFiles: media.files,
      mediaBytes: media.bytes, mediaLineBytes: mediaLineBytes)
  }

  /// The header on the first line of `source`, which is then read again from its start
  /// (standard input, which cannot be opened twice); nil when it is not a chatdb export.
  public static func header(peekingAt source: ByteSource) throws -> HistoryHeader? {
    var head: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 64 * 1024)
    while !head.contains(UInt8(ascii: "\n")) && head.count < 1 << 20 {
      let count = try chunk.withUnsafeMutableBytes { try source.read(into: $0) }
      if count == 0 { break }
      head += chunk[0..<count]
    }
    source.unread(head)
    return Array(head.prefix { $0 != UInt8(ascii: "\n") }).withUnsafeBufferPointer(header(inLine:))
  }

  /// The header `line` holds; nil when it is not a chatdb export's header line.
  private static func header(inLine line: UnsafeBufferPointer<UInt8>) -> HistoryHeader? {
    let parser = RecordParser()
    guard hasPrefix(line, #"{"type":"header""#), (try? parser.parse(line)) == .header else { return nil }
    return try? parser.header()
  }

  /// The header on line 1 of the file at `path`, reading nothing further; nil when the
  /// file is not a chatdb export. A header of a newer format version is refused.
  public static func header(path: String) throws -> HistoryHeader? {
    let lines = LineReader(source: try ByteSource.open(path: path))
    let header = try lines.nextLine(header(inLine:)) ?? nil
    if let header, header.version > HistoryHeader.currentVersion {
      throw StoreError(
        .badInput,
        "\(path):1: header: format version \(header.version) is newer than this chatdb reads (\(HistoryHeader.currentVersion)); use a newer chatdb",
        path: path)
    }
    return header
  }

  /// Whether `line` starts with `prefix`: how a header or trailer line is told apart
  /// before parsing it (an export writes `type` first).
  static func hasPrefix(_ line: UnsafeBufferPointer<UInt8>, _ prefix: StaticString) -> Bool {
    let n = prefix.utf8CodeUnitCount
    return line.count >= n && memcmp(line.baseAddress!, prefix.utf8Start, n) == 0
  }
}
