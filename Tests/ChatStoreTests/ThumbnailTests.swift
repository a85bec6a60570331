import ChatStore
import Foundation
import TestSupport
import Testing

/// Thumbnails by libvips (loaded on first use): the image's size, a JPEG within the
/// box and the byte limit, and a clear refusal of what is not an image.
@Suite(.ownThreads) struct ThumbnailTests {
  /// A `width` x `height` binary PPM (P6) of noisy colours, which no encoder squeezes
  /// much: the byte limit has to be met by the quality and box steps.
  static func ppm(width: Int, height: Int) -> [UInt8] {
    var bytes = Array("P6\n\(width) \(height)\n255\n".utf8)
    var state: UInt32 = 12_345
    bytes.reserveCapacity(bytes.count + width * height * 3)
    for y in 0..<height {
      for x in 0..<width {
        state = state &* 1_103_515_245 &+ 12_345
        bytes += [UInt8(truncatingIfNeeded: x), UInt8(truncatingIfNeeded: y), UInt8(truncatingIfNeeded: state >> 16)]
      }
    }
    return bytes
  }

  @Test func aLargeImageShrinksToAJPEGWithinTheBoxAndTheLimit() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("thumb-\(UUID().uuidString).ppm").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    try Data(Self.ppm(width: 2_000, height: 1_500)).write(to: URL(fileURLWithPath: path))
    let thumbnail = try Thumbnail(of: path)
    #expect(thumbnail.width == 2_000 && thumbnail.height == 1_500)
    #expect(thumbnail.jpeg.starts(with: [0xFF, 0xD8, 0xFF]))
    #expect(thumbnail.jpeg.count <= Thumbnail.maximumBytes)
    // Read back by libvips itself: at most 320 px a side, the proportions kept.
    let back = path + ".jpg"
    defer { try? FileManager.default.removeItem(atPath: back) }
    try Data(thumbnail.jpeg).write(to: URL(fileURLWithPath: back))
    let again = try Thumbnail(of: back)
    #expect(max(again.width, again.height) <= 320 && again.width > again.height)
  }

  @Test func whatIsNotAnImageIsRefusedNamingTheFile() throws {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("thumb-\(UUID().uuidString).txt").path
    defer { try? FileManager.default.removeItem(atPath: path) }
    try Data("hello".utf8).write(to: URL(fileURLWithPath: path))
    #expect {
      try Thumbnail(of: path)
    } throws: { error in
      guard let error = error as? StoreError else { return false }
      return error.kind == .badInput && error.message.contains(path)
    }
  }
}
