import ChatCLI
import ChatStore
import Foundation

/// `chat-sync-bench thumbnail`: the thumbnail `chat-sync` makes of an image it sends
/// (``Thumbnail``: libvips loaded on first use), written to a file, timed as JSON.
enum ThumbnailBench: ParsableCommand {
  typealias Result = EmptyResult
  static let name = "thumbnail"
  static let abstract = "Make the thumbnail of an image as chat-sync does, timing it as JSON."

  struct Options: ParsableOptions {
    var file: String
    var out: String
    init(_ o: inout OptionReader) {
      file = o.option("--file", valueName: "path", help: "The image.", required: true) ?? ""
      out = o.option("--out", valueName: "path", help: "Where to write the JPEG.", required: true) ?? ""
    }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let started = wallClock()
    let thumbnail = try Thumbnail(of: options.file)
    let seconds = wallClock() - started
    try Data(thumbnail.jpeg).write(to: URL(fileURLWithPath: options.out))
    let result: JSONValue = .object([
      "width": .int(thumbnail.width), "height": .int(thumbnail.height), "bytes": .int(Int64(thumbnail.jpeg.count)),
      "seconds": .double(seconds),
    ])
    print(result.render(pretty: false))
  }
}
