import ChatCLI
import ChatProtocol
import ChatStore
import ChatSync

/// `chat-sync typing --to ID`: show "typing…" to a contact for a few seconds.
enum TypingCommand: ParsableCommand {
  static let name = "typing"
  static let abstract = "Tell a contact you are typing (it shows for about 5 seconds)."
  static let discussion: String? = """
    Sent through a running 'chat-sync run' on this file, and then it returns at once. \
    Without one it opens a socket of its own and keeps it for the typing window (5 s; \
    about half a second with --stop), so the contact sees the user online and typing \
    for as long as the indicator lasts; a refusal by the relay (a user you never \
    exchanged a message with) ends it with 65. Never stored.
    """

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
      let hold: Duration = options.stop ? .milliseconds(500) : .milliseconds(ContactStatus.typingWindowMilliseconds)
      let outcome: Swift.Result<String?, any Error> = blocking {
        do {
          let socket = try await connector.connect()
          socket.send(event)
          // The relay answers a typing event only when it refuses it: an `error` event.
          let refusal = await Self.firstError(on: socket, within: hold)
          socket.close()
          return .success(refusal)
        } catch {
          return .failure(error)
        }
      }
      switch outcome {
      case .failure(let error):
        throw OnceFailure(status: .unavailable, message: "The relay could not be reached: \(error)")
      case .success(let refusal?):
        throw OnceFailure(status: .dataError, message: "The relay refused it: \(refusal)")
      case .success(nil): break
      }
      via = "its own socket"
    }
    try options.file.report(
      context, Result(toUserId: options.to, typing: !options.stop, via: via),
      text: "Typing \(options.stop ? "stopped" : "shown") to user \(options.to) (via \(via)"
        + (via == "chat-sync run" || options.stop
          ? ")." : ", held for \(ContactStatus.typingWindowMilliseconds / 1000) s)."))
  }

  /// The message of the first `error` event within `duration`, or nil.
  private static func firstError(on socket: any RelaySocket, within duration: Duration) async -> String? {
    await withTaskGroup(of: String?.self) { group in
      group.addTask {
        for await text in socket.messages {
          if case .error(let error)? = try? WireJSON.decode(ServerEvent.self, from: text) { return error.message }
        }
        return nil
      }
      group.addTask {
        try? await Task.sleep(for: duration)
        return nil
      }
      let first = await group.next() ?? nil
      group.cancelAll()
      socket.close()
      return first
    }
  }

  /// `result`: what was said to whom, and how (`chat-sync run` or `its own socket`).
  struct Result: CommandResult {
    var toUserId: Int64
    var typing: Bool
    var via: String

    static var example: Result { Result(toUserId: 7, typing: true, via: "chat-sync run") }
  }
}
