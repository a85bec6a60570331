import ChatStore
import Foundation
import TestSupport
import Testing

@testable import ChatMaintenance

#if canImport(Glibc)
  import Glibc
#endif

/// `chatdb generate --media-rate`: media drawn from a stream of their own, written as
/// sparse files named by their SHA-256 with rows `chatdb check` finds nothing wrong in.
@Suite(.ownThreads) struct GenerateMediaTests {
  /// Small options: about 60 media, some hundreds of MB to hash.
  static func options(seed: UInt64 = 3, mediaRate: Double = 0.1) -> HistoryGenerator.Options {
    var options = HistoryGenerator.Options(owner: 1, contacts: 10, messages: 600, seed: seed)
    options.pending = 3
    options.failed = 2
    options.mediaRate = mediaRate
    return options
  }

  /// Generates into a fresh `chats-1.db` of `folder` as `chatdb generate` does.
  @discardableResult
  static func generate(
    _ options: HistoryGenerator.Options, into folder: HistoryFolder, pipelined: Bool = true, batchSize: Int = 100
  ) throws -> GeneratedSummary {
    let db = try folder.database()
    var writerOptions = RecordWriter.Options()
    writerOptions.batchSize = batchSize
    let writer = try RecordWriter(database: db, owner: options.owner, options: writerOptions)
    return try HistoryGenerator(options).write(into: writer, pipelined: pipelined)
  }

  /// Every Media and Attachments row, every column, as text.
  static func mediaRows(_ path: String) throws -> [String] {
    let db = try Database(path: path, mode: .readOnly)
    var rows: [String] = []
    for (table, order) in [("Media", "id"), ("Attachments", "message_id, position")] {
      rows += try db.query("SELECT * FROM \(table) ORDER BY \(order)") {
        "\(table): " + $0.values.map(\.description).joined(separator: "|")
      }
    }
    return rows
  }

  /// The media folder's files: name, size and first 64 bytes.
  static func files(_ folder: MediaFolder) throws -> [String] {
    try folder.names().sorted().map { name in
      let path = FileSystem.joinPath(folder.path, name)
      let head = try FileHandle(forReadingFrom: URL(fileURLWithPath: path)).readData(ofLength: 64)
      return "\(name) \(FileSystem.size(atPath: path) ?? -1) \(head.base64EncodedString())"
    }
  }

  @Test func sameSeedGivesTheSameRowsAndFiles() throws {
    let first = try HistoryFolder()
    let second = try HistoryFolder()
    let made = try Self.generate(Self.options(), into: first)
    // Another batch size and no pipeline: the same rows and files.
    try Self.generate(Self.options(), into: second, pipelined: false, batchSize: 37)
    let path = first.file("chats-1.db")
    #expect(made.media > 20)
    #expect(try Self.mediaRows(path) == Self.mediaRows(second.file("chats-1.db")))
    let files = try Self.files(MediaFolder(database: path))
    #expect(files.count == made.media)
    #expect(files == (try Self.files(MediaFolder(database: second.file("chats-1.db")))))
    let other = try HistoryFolder()
    try Self.generate(Self.options(seed: 4), into: other)
    #expect(try Self.mediaRows(path) != Self.mediaRows(other.file("chats-1.db")))
  }

  @Test func rateZeroGivesNoMediaAndTheHistoryOfBefore() throws {
    let folder = try HistoryFolder()
    let made = try Self.generate(Self.options(mediaRate: 0), into: folder)
    let path = folder.file("chats-1.db")
    #expect(made.media == 0)
    #expect(try Self.mediaRows(path).isEmpty)
    #expect(!FileSystem.exists(MediaFolder(database: path).path))
    // The pinned history stays as it was, and media only add attachments to it.
    let pinned = HistoryGeneratorDeterminismTests()
    var options = HistoryGenerator.Options(owner: 1, contacts: 12, messages: 2_000, seed: 2026)
    options.pending = 3
    options.failed = 2
    #expect(pinned.fingerprint(GeneratedHistory(options).records) == HistoryGeneratorDeterminismTests.pinnedFingerprint)
    options.mediaRate = 0.02
    let withMedia = GeneratedHistory(options)
    #expect(withMedia.messages.filter { !$0.attachments.isEmpty }.count > 10)
    #expect(pinned.fingerprint(withMedia.records) == HistoryGeneratorDeterminismTests.pinnedFingerprint)
    var stripped = withMedia.messages
    for index in stripped.indices { stripped[index].attachments = [] }
    options.mediaRate = 0
    #expect(stripped == GeneratedHistory(options).messages)
  }

  /// A message deleted for everyone carries no media; the others keep the media they
  /// have without --delete-rate; an edit's record carries none (its message does).
  @Test func deletesDropTheirMediaAndLeaveTheOthers() throws {
    var options = HistoryGenerator.Options(owner: 1, contacts: 12, messages: 1_500, seed: 8)
    options.mediaRate = 0.02
    let plain = GeneratedHistory(options)
    options.editRate = 0.2
    options.deleteRate = 0.2
    let changed = GeneratedHistory(options)
    func media(_ history: GeneratedHistory) -> [Int64: [ChatStore.Attachment]] {
      Dictionary(
        history.messages.filter { !$0.attachments.isEmpty }.map { ($0.id, $0.attachments) },
        uniquingKeysWith: { a, _ in a }
      )
    }
    let deleted = Set(changed.messages.filter { $0.deletedAt != nil }.map(\.id))
    #expect(!deleted.isEmpty)
    #expect(changed.messages.filter { $0.version > 0 || $0.deletedAt != nil }.allSatisfy { $0.attachments.isEmpty })
    #expect(media(changed) == media(plain).filter { !deleted.contains($0.key) })
    #expect(media(changed).count < media(plain).count)
  }

  @Test func checkFindsNothingWrong() throws {
    let folder = try HistoryFolder()
    var options = Self.options(seed: 5, mediaRate: 0.15)
    options.editRate = 0.05
    options.deleteRate = 0.05
    let made = try Self.generate(options, into: folder)
    let path = folder.file("chats-1.db")
    let report = HealthCheck(full: true).check(path: path)
    #expect(report.isClean, "\(report.outcome) \(report.findings)")

    let db = try Database(path: path, mode: .readOnly)
    #expect(try db.int64("SELECT count(*) FROM Media WHERE state = 'local'") == Int64(made.media))
    #expect(try db.int64("SELECT coalesce(sum(size), 0) FROM Media") == made.mediaBytes)
    // Each media on a message that is stored and no tombstone, at the message's time.
    #expect(
      try db.int64(
        """
        SELECT count(*) FROM Attachments a JOIN Messages g ON g.id = a.message_id AND g.deleted_at IS NULL
        JOIN Media m ON m.id = a.media_id AND m.created_at = g.created_at AND m.last_accessed_at = g.created_at
        """) == Int64(made.media))
    #expect(
      try db.int64("SELECT count(*) FROM Media WHERE mime LIKE 'image/%' AND (width IS NULL OR height IS NULL)") == 0)
    #expect(
      try db.int64(
        "SELECT count(*) FROM Media WHERE (mime LIKE 'audio/%' OR mime LIKE 'video/%') AND duration_ms IS NULL")
        == 0)

    // Files 0600 in a 0700 folder, sparse: a block or two on disk whatever their size.
    let media = MediaFolder(database: path)
    var info = stat()
    #expect(stat(media.path, &info) == 0 && info.st_mode & 0o777 == 0o700)
    for name in try media.names() {
      #expect(stat(media.file(name), &info) == 0)
      #expect(info.st_mode & 0o777 == 0o600)
      #expect(Int64(info.st_blocks) * 512 <= 64 * 1024, "\(name) takes \(info.st_blocks) blocks")
    }
  }

  @Test func generatingAgainChangesNothing() throws {
    let folder = try HistoryFolder()
    let first = try Self.generate(Self.options(), into: folder)
    let path = folder.file("chats-1.db")
    let rows = try Self.mediaRows(path)
    let files = try Self.files(MediaFolder(database: path))
    let db = try Database(path: path)
    let again = try HistoryGenerator(Self.options()).write(
      into: try RecordWriter(database: db, owner: 1), pipelined: true)
    #expect(again.records.messages == 0)
    #expect(again.media == first.media)
    #expect(try Self.mediaRows(path) == rows)
    #expect(try Self.files(MediaFolder(database: path)) == files)
    #expect(HealthCheck(full: true).check(path: path).isClean)
  }

  /// The kinds' shares and sizes, over many draws (nothing is hashed).
  @Test func kindsAndSizesAreRealistic() {
    var random = HistoryRandom(seed: 1, stream: .media)
    let draws = (0..<20_000).map { GeneratedMedia(&random, seed: 1, messageID: Int64($0)) }
    let shares = Dictionary(grouping: draws, by: \.kind).mapValues { Double($0.count) / Double(draws.count) }
    for (kind, share) in [(MediaKind.image, 0.7), (.video, 0.1), (.audio, 0.1), (.file, 0.1)] {
      #expect(abs((shares[kind] ?? 0) - share) < 0.02, "\(kind): \(shares[kind] ?? 0)")
    }
    let ranges: [MediaKind: ClosedRange<Int64>] = [
      .image: 200_000...4_000_000, .video: 5_000_000...100_000_000, .audio: 500_000...10_000_000,
      .file: 10_000...20_000_000,
    ]
    for media in draws {
      #expect(ranges[media.kind]!.contains(media.size))
      #expect(MediaKind(mime: media.mime) == media.kind)
      #expect((media.width != nil) == (media.kind == .image || media.kind == .video))
      #expect((media.durationMs != nil) == (media.kind == .audio || media.kind == .video))
      #expect(media.header.count == GeneratedMedia.headerSize && media.header.last == UInt8(ascii: "\n"))
    }
    // Log-uniform: the median image is near the geometric mean of its range (0.89 MB).
    let images = draws.filter { $0.kind == .image }.map(\.size).sorted()
    #expect((800_000...1_000_000).contains(images[images.count / 2]))
    #expect(Set(draws.map(\.header)).count == draws.count)
  }

  /// A media's name is the SHA-256 of the bytes the writer puts in its file.
  @Test func theNameIsTheHashOfTheBytes() throws {
    var random = HistoryRandom(seed: 9, stream: .media)
    let media = (0..<6).map { GeneratedMedia(&random, seed: 9, messageID: Int64(100 + $0)) }
    let hashes = GeneratedMedia.sha256s(media)
    for (one, hash) in zip(media, hashes) {
      var bytes = one.header
      bytes += [UInt8](repeating: 0, count: Int(one.size) - one.header.count)
      #expect(SHA256.hex(bytes) == hash)
      #expect(one.sha256() == hash)
    }
  }

  /// The thumbnail is a whole JPEG (start and end markers), the same bytes every run.
  @Test func theThumbnailIsAJPEG() {
    let jpeg = GeneratedMedia.thumbnail
    #expect(jpeg.count == 356)
    #expect(jpeg.prefix(3) == [0xFF, 0xD8, 0xFF] && jpeg.suffix(2) == [0xFF, 0xD9])
    #expect(SHA256.hex(jpeg) == "9d7ef3a0d5e08ef1bce71b4b5c7e50360040e57768f5541eaec023eead6d59f0")
  }
}
