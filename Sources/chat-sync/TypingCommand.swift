import ChatCLI
import ChatProtocol
import ChatStore
import ChatSync

/// `chat-sync typing --to ID`: show "typing…" to a contact for a few seconds.
enum TypingCommand: ParsableCommand {
  static let name = "typing"
  static let abstract = "Tell a contact you are typing (it shows for about 5 seconds)."
  static let discussion: String? = "Sent through a running 'chat-sync run', else on a socket of its own; never stored."

  static let examples = [
    "chat-sync typing --user 42 --to 7",
    "chat-sync typing --user 42 --to 7 --stop",
  ]

  struct Options: ParsableOptions {
    var file: ClientFile
    var relay: RelayAccess
    var to: Int64
    var stop: Bool
    init(_ o: inout OptionReader) {
      file = ClientFile(&o)
      relay = RelayAccess(&o)
      to = o.option("--to", valueName: "id", help: "The contact's user id.", required: true, parse: Parse.userID) ?? 0
      stop = o.flag("--stop", help: "Say typing stopped instead.")
    }
    func validate() throws { try file.validate() }
  }

  static func run(_ options: Options, in context: CommandContext) throws {
    let line = "typing \(options.to) \(options.stop ? 0 : 1)"
    var via = "chat-sync run"
    if !Nudge.send(line, to: options.file.target.path) {
      let (http, connector) = try options.relay.transports()
      guard try options.relay.requireIdentity(try options.file.owner(), http: http, timeout: 10) else {
        throw OnceFailure(status: .unavailable, message: "The relay could not be reached")
      }
      let event = WireJSON.string(ClientEvent.typing(TypingSignal(toUserId: options.to, typing: !options.stop)))
      let error: String? = blocking {
        do {
          let socket = try await connector.connect()
          socket.send(event)
          try? await Task.sleep(for: .milliseconds(200))
          socket.close()
          return nil
        } catch {
          return "\(error)"
        }
      }
      if let error { throw OnceFailure(status: .unavailable, message: "The relay could not be reached: \(error)") }
      via = "its own socket"
    }
    try options.file.report(
      context, Result(toUserId: options.to, typing: !options.stop, via: via),
      text: "Typing \(options.stop ? "stopped" : "shown") to user \(options.to) (via \(via)).")
  }

  /// `result`: what was said to whom, and how (`chat-sync run` or `its own socket`).
  struct Result: CommandResult {
    var toUserId: Int64
    var typing: Bool
    var via: String

    static var example: Result { Result(toUserId: 7, typing: true, via: "chat-sync run") }
  }
}
