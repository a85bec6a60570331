import ChatRelay
import ChatStore
import Foundation
import Testing

@testable import ChatSync

/// The transport `chat-sync` sends with (`HTTPTransport.libwebsockets`) against the real
/// relay server on loopback.
@Suite struct HTTPTransportTests {
  /// A relay whose one handler answers `length=<n>\nsum=<s>\nauth=<header>` for any
  /// request, except `/v2/never` (no answer), `/v2/drop` (the connection closes without
  /// one) and `/v2/throttled` (429 with `Retry-After` and `Idempotent-Replayed`).
  private static func echoServer() throws -> (RelayServer, DispatchSemaphore) {
    let handlers = RelayServer.Handlers(
      http: { request in
        switch request.path {
        case "/v2/never":
          return nil
        case "/v2/drop":
          var response = HTTPResponse(status: 200)
          response.dropConnection = true
          return response
        case "/v2/throttled":
          return HTTPResponse(
            status: 429, body: Array(#"{"error":{}}"#.utf8),
            headers: [("Retry-After", "2"), ("Idempotent-Replayed", "true")])
        default:
          break
        }
        let sum = request.body.reduce(0) { $0 &+ Int($1) }
        let text =
          "method=\(request.method)\npath=\(request.path)\nlength=\(request.body.count)\nsum=\(sum)\nauth=\(request.headers["authorization"] ?? "")"
        return HTTPResponse(status: 200, contentType: "text/plain", body: Array(text.utf8))
      })
    let server = try RelayServer(port: 0, handlers: handlers)
    let finished = DispatchSemaphore(value: 0)
    Thread.detachNewThread {
      server.run()
      finished.signal()
    }
    return (server, finished)
  }

  private static func fields(_ body: [UInt8]) -> [String: String] {
    var result: [String: String] = [:]
    for line in String(decoding: body, as: UTF8.self).split(separator: "\n") {
      let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
      result[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
    }
    return result
  }

  /// Many POSTs at once, of sizes around the points where clients split a body from its
  /// head: every body reaches the relay whole. URLSession (libcurl under Foundation on
  /// Linux) sometimes sent a POST's head and never its body, so a few of these calls
  /// failed with "no answer within 10 s" while the relay waited for the body.
  @Test func concurrentPostsAllDeliverTheirBodies() async throws {
    let (server, finished) = try Self.echoServer()
    defer {
      server.stop()
      _ = finished.wait(timeout: .now() + 10)
    }
    let transport = HTTPTransport.libwebsockets(
      base: try #require(URL(string: "http://127.0.0.1:\(server.port)")), token: "t0k")
    let sizes = [0, 1, 200, 1_023, 1_025, 3_000, 16_385, 70_000]
    let failures = try await withThrowingTaskGroup(of: [String].self) { group in
      for worker in 0..<6 {
        group.addTask {
          var failures: [String] = []
          for index in 0..<50 {
            let size = sizes[(index + worker) % sizes.count]
            let body = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ worker) }
            let sum = body.reduce(0) { $0 &+ Int($1) }
            do {
              let reply = try await transport.send(HTTPCall(method: "POST", path: "/v2/messages", body: body))
              let fields = Self.fields(reply.body)
              if reply.status != 200 || fields["length"] != "\(size)" || fields["sum"] != "\(sum)" {
                failures.append("worker \(worker) #\(index) \(size) B: \(reply.status) \(fields)")
              }
            } catch {
              failures.append("worker \(worker) #\(index) \(size) B: \(error)")
            }
          }
          return failures
        }
      }
      return try await group.reduce(into: []) { $0 += $1 }
    }
    #expect(failures == [])
  }

  @Test func aGetCarriesPathQueryAndTokenAndReadsTheAnswer() async throws {
    let (server, finished) = try Self.echoServer()
    defer {
      server.stop()
      _ = finished.wait(timeout: .now() + 10)
    }
    let transport = HTTPTransport.libwebsockets(
      base: try #require(URL(string: "http://127.0.0.1:\(server.port)")), token: "t0k")
    let reply = try await transport.send(HTTPCall(method: "GET", path: "/v2/messages?lastSyncedMessage=3&limit=2"))
    #expect(reply.status == 200)
    #expect(reply.headers["content-type"] == "text/plain")
    let fields = Self.fields(reply.body)
    #expect(fields["method"] == "GET")
    #expect(fields["path"] == "/v2/messages")
    #expect(fields["auth"] == "Bearer t0k")
  }

  @Test func nobodyListeningIsATransportError() async throws {
    // A port just released by a server that stopped: nothing listens there.
    let (server, finished) = try Self.echoServer()
    let port = server.port
    server.stop()
    _ = finished.wait(timeout: .now() + 10)
    let transport = HTTPTransport.libwebsockets(base: try #require(URL(string: "http://127.0.0.1:\(port)")), token: "t")
    await #expect(throws: TransportError.self) { try await transport.send(HTTPCall(method: "GET", path: "/v2/ping")) }
  }

  @Test func statusAndTheHeadersTheEngineReadsComeThrough() async throws {
    let (server, finished) = try Self.echoServer()
    defer {
      server.stop()
      _ = finished.wait(timeout: .now() + 10)
    }
    let transport = HTTPTransport.libwebsockets(
      base: try #require(URL(string: "http://127.0.0.1:\(server.port)")), token: "t0k")
    let reply = try await transport.send(HTTPCall(method: "POST", path: "/v2/throttled", body: Array("{}".utf8)))
    #expect(reply.status == 429)
    #expect(reply.headers["retry-after"] == "2")
    #expect(reply.headers["idempotent-replayed"] == "true")
    #expect(reply.headers["content-type"] == "application/json")
    #expect(String(decoding: reply.body, as: UTF8.self) == #"{"error":{}}"#)
  }

  @Test func aConnectionClosedWithoutAnAnswerIsATransportError() async throws {
    let (server, finished) = try Self.echoServer()
    defer {
      server.stop()
      _ = finished.wait(timeout: .now() + 10)
    }
    let transport = HTTPTransport.libwebsockets(
      base: try #require(URL(string: "http://127.0.0.1:\(server.port)")), token: "t0k")
    let error = await #expect(throws: TransportError.self) {
      try await transport.send(HTTPCall(method: "POST", path: "/v2/drop?x=1", body: [1, 2, 3]))
    }
    #expect(error?.message.hasPrefix("POST /v2/drop: ") == true)
    #expect(error?.message.contains("t0k") == false)
  }

  @Test func anUnansweredRequestEndsAtItsTimeout() async throws {
    let (server, finished) = try Self.echoServer()
    defer {
      server.stop()
      _ = finished.wait(timeout: .now() + 10)
    }
    let transport = HTTPTransport.libwebsockets(
      base: try #require(URL(string: "http://127.0.0.1:\(server.port)")), token: "t0k")
    let error = await #expect(throws: TransportError.self) {
      try await transport.send(HTTPCall(method: "GET", path: "/v2/never", timeout: 1))
    }
    #expect(error?.message == "no answer within 1 s")
    // The transport still works afterwards.
    #expect(try await transport.send(HTTPCall(method: "GET", path: "/v2/ping")).status == 200)
  }

  @Test func cancellingTheCallerEndsTheExchange() async throws {
    let (server, finished) = try Self.echoServer()
    defer {
      server.stop()
      _ = finished.wait(timeout: .now() + 10)
    }
    let transport = HTTPTransport.libwebsockets(
      base: try #require(URL(string: "http://127.0.0.1:\(server.port)")), token: "t0k")
    let call = Task { try await transport.send(HTTPCall(method: "GET", path: "/v2/never?secret=1", timeout: 60)) }
    try await Task.sleep(for: .milliseconds(200))
    call.cancel()
    let error = await #expect(throws: TransportError.self) { try await call.value }
    #expect(error?.message == "GET /v2/never: cancelled")
  }
}
