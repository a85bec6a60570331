import ChatRelay
import ChatStore
import Foundation
import Testing

@testable import ChatSync

/// The transport `chat-sync` sends with (`HTTPTransport.plainHTTP`) against the real
/// relay server on loopback.
@Suite struct HTTPTransportTests {
  /// A relay whose one handler answers `length=<n>\nsum=<s>\nauth=<header>` for any request.
  private static func echoServer() throws -> (RelayServer, DispatchSemaphore) {
    let handlers = RelayServer.Handlers(
      http: { request in
        let sum = request.body.reduce(0) { $0 &+ Int($1) }
        let text = "method=\(request.method)\npath=\(request.path)\nlength=\(request.body.count)\nsum=\(sum)\nauth=\(request.headers["authorization"] ?? "")"
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
    let transport = HTTPTransport.plainHTTP(base: try #require(URL(string: "http://127.0.0.1:\(server.port)")), token: "t0k")
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
              let reply = try await transport.send(HTTPCall(method: "POST", path: "/v1/messages", body: body))
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
    let transport = HTTPTransport.plainHTTP(base: try #require(URL(string: "http://127.0.0.1:\(server.port)")), token: "t0k")
    let reply = try await transport.send(HTTPCall(method: "GET", path: "/v1/messages?lastSyncedMessage=3&limit=2"))
    #expect(reply.status == 200)
    #expect(reply.headers["content-type"] == "text/plain")
    let fields = Self.fields(reply.body)
    #expect(fields["method"] == "GET")
    #expect(fields["path"] == "/v1/messages")
    #expect(fields["auth"] == "Bearer t0k")
  }

  @Test func nobodyListeningIsATransportError() async throws {
    // A port just released by a server that stopped: nothing listens there.
    let (server, finished) = try Self.echoServer()
    let port = server.port
    server.stop()
    _ = finished.wait(timeout: .now() + 10)
    let transport = HTTPTransport.plainHTTP(base: try #require(URL(string: "http://127.0.0.1:\(port)")), token: "t")
    await #expect(throws: TransportError.self) { try await transport.send(HTTPCall(method: "GET", path: "/v1/ping")) }
  }

  @Test(arguments: [
    ("HTTP/1.1 201 Created\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello", true, 201, "hello"),
    ("HTTP/1.1 200 \r\ncontent-length: 5\r\n\r\nhel", false, nil, nil),
    ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n", true, 200, "abcde"),
    ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab", false, nil, nil),
    ("HTTP/1.1 204 No Content\r\n\r\n", true, 204, ""),
    ("garbage\r\n\r\n", true, nil, nil),
  ] as [(String, Bool, Int?, String?)])
  func answersAreParsedOnlyWhenWhole(text: String, atEnd: Bool, status: Int?, body: String?) {
    let reply = PlainHTTP.parse(Array(text.utf8), atEnd: atEnd)
    #expect(reply?.status == status)
    #expect(reply.map { String(decoding: $0.body, as: UTF8.self) } == body)
  }
}
