import ChatStore
import Dispatch
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The synthetic media of a generated history (`chatdb generate --media-rate`): one
/// media on a share of the acknowledged messages, drawn from a random stream of its
/// own (`HistoryRandom.Stream.media`), so the rest of the history is the same with or
/// without them.
///
/// | kind | share | size (MB = 10⁶ bytes, log-uniform) | also |
/// | --- | --- | --- | --- |
/// | image | 70% | 0.2 to 4 MB | width and height, a thumbnail |
/// | video | 10% | 5 to 100 MB | width and height, a duration (1 to 8 Mbit/s), a thumbnail |
/// | audio | 10% | 0.5 to 10 MB | a duration (32 to 256 kbit/s) |
/// | file | 10% | 10 KB to 20 MB | |
///
/// A media's bytes are `header` (64 bytes that name the seed, the message and the
/// position, so no two are the same) and then zeros up to its size: written as a sparse
/// file (`ftruncate`), they take a block on disk whatever their size, yet hash to their
/// name like any media (`chatdb check --full` finds nothing wrong). The SHA-256 of the
/// zeros is real work (about 1.4 GB/s a core with SHA-NI), so the generator hashes a few
/// dozen media at a time on every core (``sha256s(_:)``).
struct GeneratedMedia: Sendable, Hashable {
  var kind: MediaKind
  var mime: String
  var size: Int64
  var width: Int64?
  var height: Int64?
  var durationMs: Int64?
  /// The file's first 64 bytes (``header(seed:messageID:position:)``).
  var header: [UInt8]

  /// The bytes at the start of every file: SHA-256 sees different bytes from the first
  /// block on, so every media has a name of its own.
  static let headerSize = 64

  /// Draws the media of message `messageID` (at `position` among its media).
  init(_ random: inout HistoryRandom, seed: UInt64, messageID: Int64, position: Int = 0) {
    let share = random.below(100)
    let choice = Self.kinds.first { share < $0.upTo } ?? Self.kinds[Self.kinds.count - 1]
    kind = choice.kind
    size = choice.sizes.draw(&random)
    mime = choice.mimes[random.below(choice.mimes.count)]
    switch kind {
    case .image:
      (width, height) = Self.photoSizes[random.below(Self.photoSizes.count)]
    case .video:
      (width, height) = Self.videoSizes[random.below(Self.videoSizes.count)]
      durationMs = Self.duration(of: size, bitsPerSecond: random.within(1_000_000...8_000_000))
    case .audio:
      durationMs = Self.duration(of: size, bitsPerSecond: random.within(32_000...256_000))
    case .file:
      break
    }
    header = Self.header(seed: seed, messageID: messageID, position: position)
  }

  /// What a kind's media look like; `upTo`: the kind's share ends below this many percent.
  struct Kind: Sendable {
    var kind: MediaKind
    var upTo: Int
    var sizes: LogUniform
    /// Media types, the first ones repeated to make them commoner.
    var mimes: [String]
  }

  static let kinds = [
    Kind(
      kind: .image, upTo: 70, sizes: LogUniform(200_000, 4_000_000),
      mimes: [
        "image/jpeg", "image/jpeg", "image/jpeg", "image/jpeg", "image/jpeg", "image/png", "image/heic", "image/webp",
      ]
    ),
    Kind(
      kind: .video, upTo: 80, sizes: LogUniform(5_000_000, 100_000_000),
      mimes: ["video/mp4", "video/mp4", "video/mp4", "video/quicktime"]),
    Kind(
      kind: .audio, upTo: 90, sizes: LogUniform(500_000, 10_000_000),
      mimes: ["audio/mp4", "audio/mp4", "audio/ogg", "audio/mpeg"]),
    Kind(
      kind: .file, upTo: 100, sizes: LogUniform(10_000, 20_000_000),
      mimes: ["application/pdf", "application/pdf", "application/zip", "text/plain", "application/octet-stream"]),
  ]

  /// Pixels of phone photos and screenshots, either way up.
  static let photoSizes: [(Int64, Int64)] = [
    (4032, 3024), (3024, 4032), (4000, 3000), (1920, 1080), (1080, 1920), (1600, 1200), (1170, 2532), (2048, 1536),
    (1080, 1080), (1280, 960),
  ]
  static let videoSizes: [(Int64, Int64)] = [(1920, 1080), (1080, 1920), (1280, 720), (720, 1280), (3840, 2160)]

  /// How long `size` bytes play at `bitsPerSecond`, at least a second.
  static func duration(of size: Int64, bitsPerSecond: Int64) -> Int64 {
    max(1_000, size * 8_000 / bitsPerSecond)
  }

  /// The first 64 bytes of a generated file: `chatdb generated media`, the seed and the
  /// message id in hex and the position, padded with spaces, then a newline.
  static func header(seed: UInt64, messageID: Int64, position: Int) -> [UInt8] {
    func hex(_ value: UInt64) -> String {
      let digits = String(value, radix: 16)
      return String(repeating: "0", count: 16 - digits.count) + digits
    }
    var text = Array("chatdb generated media \(hex(seed)) \(hex(UInt64(bitPattern: messageID))) \(position)".utf8)
    text = Array(text.prefix(headerSize - 1))
    text += Array(repeating: UInt8(ascii: " "), count: headerSize - 1 - text.count) + [UInt8(ascii: "\n")]
    return text
  }

  /// The attachment a message carries: named by the SHA-256 of its bytes, `local`.
  func attachment(sha256: String) -> Attachment {
    Attachment(
      sha256: sha256, mime: mime, size: size, width: width, height: height, durationMs: durationMs,
      thumbnail: kind == .image || kind == .video ? Self.thumbnail : nil, state: .local)
  }

  // MARK: - Hashing

  /// 1 MiB of zeros: the bytes after the header, a piece at a time.
  static let zeros = [UInt8](repeating: 0, count: 1 << 20)

  /// The SHA-256 of the file's bytes (`header`, then zeros up to `size`), in hex.
  func sha256() -> String {
    let hasher = SHA256.Hasher()
    header.withUnsafeBytes { hasher.update($0) }
    var left = size - Int64(header.count)
    Self.zeros.withUnsafeBytes { zeros in
      while left > 0 {
        let piece = Int(min(left, Int64(zeros.count)))
        hasher.update(UnsafeRawBufferPointer(rebasing: zeros[0..<piece]))
        left -= Int64(piece)
      }
    }
    return SHA256.hex(digest: hasher.finish())
  }

  /// The SHA-256 of each media, in order, hashed on every core (the largest first, so
  /// no core is left with a 100 MB video at the end).
  static func sha256s(_ media: [GeneratedMedia]) -> [String] {
    guard media.count > 1 else { return media.map { $0.sha256() } }
    let order = media.indices.sorted { media[$0].size > media[$1].size }
    let results = UnsafeMutableBufferPointer<String>.allocate(capacity: media.count)
    results.initialize(repeating: "")
    defer {
      _ = results.deinitialize()
      results.deallocate()
    }
    // Each iteration writes its own element: no two threads touch the same one.
    nonisolated(unsafe) let shared = results
    DispatchQueue.concurrentPerform(iterations: order.count) { step in
      let index = order[step]
      shared[index] = media[index].sha256()
    }
    return Array(results)
  }

  // MARK: - Thumbnail

  /// The thumbnail of every generated image and video: a 64x48 gradient, a real JPEG of
  /// 356 bytes (ImageMagick's `gradient:`, quality 50).
  static let thumbnail: [UInt8] = Array(
    Data(
      base64Encoded: """
        /9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdA\
        SFxOQERXRTc4UG1RV19iZ2hnPk1xeXBkeFxlZ2P/2wBDARESEhgVGC8aGi9jQjhCY2NjY2NjY2NjY2Nj\
        Y2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2P/wAARCAAwAEADASIAAhEBAxEB/8QA\
        FgABAQEAAAAAAAAAAAAAAAAAAAMC/8QAFRABAQAAAAAAAAAAAAAAAAAAABL/xAAVAQEBAAAAAAAAAAAA\
        AAAAAAAABP/EABURAQEAAAAAAAAAAAAAAAAAAAAS/9oADAMBAAIRAxEAPwDMELSSrtLKMELSSWSjBC0k\
        lkowQtJJZK8ELwQjtTKEELwQWShBC8EFkoQQvBBZK0ELwQitTKEELwQWShBC8EFkoQQvBBZL/9k=
        """)!)
}

/// A log-uniform size from `low` to `high` bytes (about as many files from 1 to 2 MB as
/// from 2 to 4 MB), made with only IEEE-exact operations: `low · (high/low)^u` as the
/// product of the square roots `(high/low)^(2^-k)` for the bits of `u`, so a seed gives
/// the same sizes on every machine (libm's `pow` and `exp` are not promised to).
struct LogUniform: Sendable {
  let low: Double
  /// `(high/low)^(1/2)`, `(high/low)^(1/4)`, … one a bit of `u`.
  let roots: [Double]
  static let bits = 20

  init(_ low: Int64, _ high: Int64) {
    self.low = Double(low)
    var root = Double(high) / Double(low)
    roots = (0..<Self.bits).map { _ in
      root = root.squareRoot()
      return root
    }
  }

  /// A size in `[low, high)`.
  func draw(_ random: inout HistoryRandom) -> Int64 {
    let u = random.next() >> UInt64(64 - Self.bits)
    var value = low
    for (bit, root) in roots.enumerated() where u & (1 << UInt64(Self.bits - 1 - bit)) != 0 { value *= root }
    return Int64(value)
  }
}

/// Messages held back until the media they carry are hashed: `HistoryGenerator` hands
/// them over in order, some dozens of media at a time (``GeneratedMedia/sha256s(_:)``
/// hashes them on every core). Memory stays bounded: at most `maximumMedia` media, a
/// GiB of their bytes or `maximumMessages` messages wait.
struct HeldMessages {
  /// A message, and its edit or tombstone when it has one.
  private var messages: [(message: Message, change: Message?)] = []
  /// The media waiting for their hash, with the index of their message in `messages`.
  private var media: [(index: Int, media: GeneratedMedia)] = []
  private var bytes: Int64 = 0
  static let maximumMedia = 64
  static let maximumBytes: Int64 = 1 << 30
  static let maximumMessages = 4_096

  var isEmpty: Bool { messages.isEmpty }
  var isFull: Bool {
    media.count >= Self.maximumMedia || bytes >= Self.maximumBytes || messages.count >= Self.maximumMessages
  }

  /// Holds a message (and its edit or tombstone), with the media it will carry.
  mutating func hold(_ message: Message, change: Message?, media generated: GeneratedMedia?) {
    if let generated {
      media.append((messages.count, generated))
      bytes += generated.size
    }
    messages.append((message, change))
  }

  /// Hashes the media and emits the messages held, in order, each with its media.
  mutating func release(_ emit: (Record) throws -> Void) rethrows {
    let hashes = GeneratedMedia.sha256s(media.map(\.media))
    for ((index, generated), sha256) in zip(media, hashes) {
      messages[index].message.attachments = [generated.attachment(sha256: sha256)]
    }
    for (message, change) in messages {
      try emit(.message(message))
      if let change { try emit(.message(change)) }
    }
    messages.removeAll(keepingCapacity: true)
    media.removeAll(keepingCapacity: true)
    bytes = 0
  }
}

/// Writes the files of generated messages' media into the media folder
/// (`chats-<id>.media/`, made 0700 when missing; files 0600, sparse) before `RecordWriter`
/// stores the messages; it stores the `Media` rows (`local`: the file is here) and the
/// `Attachments` rows as for an import, so they commit with their message. A file whose
/// row a failure rolls back stays as a stray (`chatdb check` reports it, `chatdb vacuum`
/// removes it), as after a kill.
///
/// Writing the same history again changes nothing: a file already here at its size is
/// kept, and the rows are keyed by SHA-256 and by message and position.
final class GeneratedMediaWriter {
  let db: Database
  let folder: MediaFolder
  /// The generator's seed: a file's header names it (``GeneratedMedia/header(seed:messageID:position:)``).
  let seed: UInt64
  /// Media written (rows), and their bytes.
  private(set) var count = 0
  private(set) var bytes: Int64 = 0
  private var folderMade = false

  init(database: Database, seed: UInt64) {
    db = database
    folder = MediaFolder(database: database.path)
    self.seed = seed
  }

  /// Writes the files of a message's media (none for a message without), before
  /// `RecordWriter` stores the message: it stores their rows as it does an import's, each
  /// `local` as its file is here.
  func write(_ message: Message) throws {
    for (position, attachment) in message.attachments.enumerated() {
      try writeFile(attachment, header: GeneratedMedia.header(seed: seed, messageID: message.id, position: position))
      count += 1
      bytes += attachment.size
    }
  }

  /// Writes a media's file: `header`, then a hole up to its size. A file already here at
  /// that size is kept (the same history generated again).
  private func writeFile(_ attachment: Attachment, header: [UInt8]) throws {
    if !folderMade {
      try folder.create()
      folderMade = true
    }
    let path = folder.file(attachment.sha256)
    if FileSystem.size(atPath: path) == attachment.size { return }
    let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    guard descriptor >= 0 else { throw Descriptor.error(errno, name: path, doing: "create") }
    defer { close(descriptor) }
    try header.withUnsafeBytes {
      try Descriptor.writeAll(descriptor, $0.baseAddress!, count: $0.count, name: path)
    }
    guard ftruncate(descriptor, off_t(attachment.size)) == 0 else {
      throw Descriptor.error(errno, name: path, doing: "extend")
    }
  }
}

/// What ``HistoryGenerator/write(into:pipelined:progress:)`` wrote.
public struct GeneratedSummary: Sendable, Equatable {
  /// The records, as `RecordWriter` counts them.
  public var records: ImportSummary
  /// Media written (files and rows), and their bytes.
  public var media: Int
  public var mediaBytes: Int64
}

extension HistoryGenerator {
  /// Writes the history into the file `writer` writes, as `chatdb generate` does: the
  /// records through `writer` in its batches, and with `mediaRate` the media files and
  /// rows beside them (``GeneratedMediaWriter``). `pipelined`: the records are made on a
  /// thread of their own while this one writes them. `progress` is called after every
  /// batch.
  public func write(
    into writer: RecordWriter, pipelined: Bool, progress: @escaping (ImportSummary) -> Void = { _ in }
  ) throws -> GeneratedSummary {
    let media = options.mediaRate > 0 ? GeneratedMediaWriter(database: writer.db, seed: options.seed) : nil
    let records = try writer.write(
      prepared: { emit in
        func store(_ prepared: RecordWriter.Prepared) throws {
          if let media, case .message(let message) = prepared.record { try media.write(message) }
          try emit(prepared)
        }
        let generate = { @Sendable (produce: (RecordWriter.Prepared) throws -> Void) throws in
          try self.generate { try produce(RecordWriter.Prepared($0)) }
        }
        if pipelined { try Pipeline<RecordWriter.Prepared>.run(generate, into: store) } else { try generate(store) }
      }, progress: progress)
    return GeneratedSummary(records: records, media: media?.count ?? 0, mediaBytes: media?.bytes ?? 0)
  }
}
