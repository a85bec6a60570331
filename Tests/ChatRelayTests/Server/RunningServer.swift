import ChatRelay
import ChatStore
import Foundation

/// A ``RelayServer`` on a free loopback port, served by a background thread, with
/// every handler call recorded. Echo handlers: HTTP describes the request, a socket
/// gets `hello <user>` on open and `echo: <text>` for each message; `close me` makes
/// the server send `bye` and close.
final class RunningServer: Sendable {
  let server: RelayServer
  private let finished = DispatchSemaphore(value: 0)
  /// What the handlers saw, in order; shared with the handler closures.
  private let recorded: EventLog

  var port: Int { server.port }
  var base: String { "http://127.0.0.1:\(server.port)" }

  init() throws {
    let events = EventLog()
    let reference = ServerReference()
    let handlers = RelayServer.Handlers(
      http: { request in
        if request.path == "/retry" {
          return HTTPResponse(
            status: 503, contentType: "text/plain", body: Array("later".utf8), headers: [("Retry-After", "2")])
        }
        let query = request.query.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "&")
        let text = [
          "method=\(request.method)", "path=\(request.path)", "query=\(query)",
          "auth=\(request.headers["authorization"] ?? "-")", "type=\(request.headers["content-type"] ?? "-")",
          "length=\(request.body.count)", "sum=\(request.body.reduce(0) { $0 &+ Int($1) })",
        ].joined(separator: "\n")
        return HTTPResponse(status: 200, contentType: "text/plain", body: Array(text.utf8))
      },
      authorizeSocket: { request in
        request.headers["authorization"] == "Bearer good" ? RelayCredential(user: 42, device: 1) : nil
      },
      socketOpened: { socket, owner in
        let user = owner.user
        events.append("opened \(socket.raw) \(user)")
        reference.server?.send("hello \(user)", to: socket)
      },
      socketText: { socket, owner, text in
        let user = owner.user
        events.append("text \(socket.raw) \(user) \(text)")
        let server = reference.server
        if text == "close me" {
          server?.send("bye", to: socket)
          server?.close(socket)
        } else {
          server?.send("echo: \(text)", to: socket)
        }
      },
      socketClosed: { socket, owner in events.append("closed \(socket.raw) \(owner.user)") },
      log: { line in events.append("log \(line)") }
    )
    let server = try RelayServer(port: 0, handlers: handlers)
    reference.server = server
    self.server = server
    recorded = events
    let finished = self.finished
    Thread {
      server.run()
      finished.signal()
    }.start()
  }

  /// Everything the handlers saw so far.
  var log: [String] { recorded.lines }

  /// Stops the server; true when run() returned within `seconds`.
  @discardableResult
  func stop(within seconds: Double = 10) -> Bool {
    server.stop()
    return finished.wait(timeout: .now() + seconds) == .success
  }

  /// Waits up to `seconds` for `condition` over the recorded events.
  func waitFor(_ seconds: Double = 5, _ condition: ([String]) -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
      if condition(log) { return true }
      Thread.sleep(forTimeInterval: 0.02)
    }
    return condition(log)
  }
}

/// Lines appended from the service thread, read from the test.
final class EventLog: Sendable {
  private let storage = Locked<[String]>([])

  func append(_ line: String) { storage.withLock { $0.append(line) } }
  var lines: [String] { storage.withLock { $0 } }
}

/// The server, for handlers created before it exists.
final class ServerReference: Sendable {
  private let storage = Locked<RelayServer?>(nil)

  var server: RelayServer? {
    get { storage.withLock { $0 } }
    set { storage.withLock { $0 = newValue } }
  }
}
