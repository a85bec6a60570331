import CThumbnail

/// A small JPEG of an image, to travel inline with its message (thumbnail first), and
/// the image's own size, made by libvips (shrink-on-load: memory stays flat for a
/// 24-megapixel photo).
///
/// ```swift
/// let thumbnail = try Thumbnail(of: "/photos/beach.jpg")
/// thumbnail.jpeg.count  // <= 20 KiB
/// (thumbnail.width, thumbnail.height)  // the photo's pixels, e.g. (6000, 4000)
/// ```
public struct Thumbnail: Sendable, Equatable {
  /// The thumbnail: a JPEG at most ``box`` pixels a side.
  public var jpeg: [UInt8]
  /// The image's width and height in pixels.
  public var width: Int64
  public var height: Int64

  /// The largest side of a thumbnail, in pixels.
  public static let box = 320
  /// The largest thumbnail, in bytes.
  public static let maximumBytes = 20 * 1024

  /// Makes the thumbnail of the image at `path`; throws `.badInput` when libvips
  /// cannot read it as an image, `.internalError` when libvips is missing.
  public init(of path: String, box: Int = Thumbnail.box, maximumBytes: Int = Thumbnail.maximumBytes) throws {
    var result = chat_thumbnail_result()
    var error = [CChar](repeating: 0, count: 256)
    guard chat_thumbnail(path, Int32(box), maximumBytes, &result, &error, error.count) == 0 else {
      let reason = String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
      throw StoreError(
        reason.hasPrefix("libvips") ? .internalError : .badInput, "\(path): no thumbnail: \(reason)", path: path)
    }
    defer { chat_thumbnail_free(&result) }
    jpeg = Array(UnsafeBufferPointer(start: result.jpeg, count: result.length))
    width = Int64(result.width)
    height = Int64(result.height)
  }
}
