import CWebSockets
import LWSSupport

#if canImport(Glibc)
  import Glibc
#endif

/// Owns one `lws_context` and the memory its creation info keeps pointing at (the
/// protocol table, the interface name, the ping policy, the user pointer's
/// `LWSContextUser`).
///
/// Destroyed explicitly (``destroy()``) on the service thread so that the close
/// callbacks it triggers run there; `deinit` destroys it if nobody did.
final class LWSContext {
  /// The context; valid until ``destroy()``.
  let pointer: OpaquePointer
  private let protocols: UnsafeMutablePointer<lws_protocols>
  private let protocolName: UnsafeMutablePointer<CChar>
  private let interface: UnsafeMutablePointer<CChar>
  private let pingPolicy: UnsafeMutablePointer<lws_retry_bo_t>
  /// The context's user pointer: the handler of its events.
  private let user: LWSContextUser
  private var destroyed = false

  /// Creates the context and its one vhost listening on `host:port` (0 picks a free port),
  /// serving TLS with `tls`'s certificate and key when given (TLS 1.2 at least, OpenSSL's
  /// default ciphers), plain HTTP otherwise.
  ///
  /// `handler` gets every event (through ``lwsContextCallback``); it must outlive the context.
  init(host: String, port: Int, tls: RelayTLS? = nil, handler: any LWSEventHandler, pingSeconds: Int = 30)
    throws(RelayServerError)
  {
    protocolName = strdup("chat-relay")
    interface = strdup(host)
    protocols = .allocate(capacity: 2)
    protocols.initialize(repeating: lws_protocols(), count: 2)
    protocols[0].name = UnsafePointer(protocolName)
    protocols[0].callback = lwsContextCallback
    protocols[0].per_session_data_size = 0
    protocols[0].rx_buffer_size = 64 * 1024

    // Ping a socket idle for `pingSeconds`, hang up one silent for twice that: a
    // half-open TCP connection (a client gone without a FIN) ends, and so does its presence.
    pingPolicy = .allocate(capacity: 1)
    pingPolicy.initialize(to: lws_retry_bo_t())
    pingPolicy.pointee.secs_since_valid_ping = UInt16(clamping: pingSeconds)
    pingPolicy.pointee.secs_since_valid_hangup = UInt16(clamping: 2 * pingSeconds)

    var info = lws_context_creation_info()
    info.port = Int32(port)
    info.iface = UnsafePointer(interface)
    info.protocols = UnsafePointer(protocols)
    user = LWSContextUser(handler)
    info.user = user.pointer
    info.gid = -1
    info.uid = -1
    info.max_http_header_data = 8192
    // The service thread's read buffer: a request body (an upload) arrives in pieces of
    // this size at most (lws's default of 4 KiB made 1 GiB a quarter of a million calls).
    info.pt_serv_buf_size = UInt32(RelayServer.readBufferSize)
    // Slow clients (slowloris): the head within `headSeconds` of connecting, no more
    // than `bodySeconds` of silence inside a body (the whole body's deadline is the
    // relay's own, see `ServiceCore.appendBody`), idle keep-alive closed after
    // `keepAliveSeconds`. lws's defaults are the same figures; set here so they are ours.
    info.timeout_secs_ah_idle = UInt32(RelayServer.headSeconds)
    info.timeout_secs = UInt32(RelayServer.bodySeconds)
    info.keepalive_timeout = Int32(RelayServer.keepAliveSeconds)
    info.retry_and_idle_policy = UnsafePointer(pingPolicy)
    // What is not HTTP goes to the raw role on the same protocol, for a JSON 400.
    info.options = chat_lws_option_validate_utf8 | chat_lws_option_fallback_to_raw
    if !host.contains(":") { info.options |= chat_lws_option_disable_ipv6 }
    // The paths are read while the context is created; the strings live until it returns.
    let certificate = tls.map { strdup($0.certificatePath)! }
    let key = tls.map { strdup($0.keyPath)! }
    defer {
      free(certificate)
      free(key)
    }
    if tls != nil {
      info.options |= chat_lws_option_ssl_global_init | chat_lws_option_peek_for_plaintext
      info.ssl_cert_filepath = UnsafePointer(certificate)
      info.ssl_private_key_filepath = UnsafePointer(key)
      info.ssl_options_set = chat_ssl_op_below_tls_1_2
      // HTTP/1.1 only: the relay's request and answer handling is HTTP/1.1's (lws would
      // offer h2 through ALPN, and an h2 client would get no answer).
      info.alpn = UnsafeRawPointer(Self.http11.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    // An address lws cannot bind is not an error to lws (it retries every 30 s and the
    // relay would serve nothing): tried here first.
    if let refused = Self.bindProblem(host: host, port: port) {
      Self.release(protocols, protocolName, interface, pingPolicy)
      throw RelayServerError(message: "Could not listen on \(host):\(port): \(refused)", kind: .address)
    }
    // lws's own lines about a failure are replaced by one of ours (below).
    lws_set_log_level(0, nil)
    guard let context = lws_create_context(&info) else {
      Self.release(protocols, protocolName, interface, pingPolicy)
      throw Self.diagnose(host: host, port: port, tls: tls)
    }
    // Then errors only: lws logs every connection at NOTICE by default.
    lws_set_log_level(Int32(LLL_ERR), nil)
    pointer = context
  }

  /// Why `host:port` (an IPv4 address, or localhost) cannot be bound ("address already in
  /// use", "cannot assign requested address"), or nil when it can or `host` is a name or
  /// IPv6 (left to lws).
  private static func bindProblem(host: String, port: Int) -> String? {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(clamping: port)).bigEndian
    guard inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host, &address.sin_addr) == 1 else { return nil }
    let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard probe >= 0 else { return nil }
    defer { close(probe) }
    var on: Int32 = 1
    setsockopt(probe, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
    let bound = withUnsafePointer(to: &address) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
        bind(probe, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
      }
    }
    return bound == 0 ? nil : String(cString: strerror(errno)).lowercased()
  }

  /// Why the context could not be made once the address was found bindable: a certificate
  /// and key that do not serve together, else lws's own failure.
  private static func diagnose(host: String, port: Int, tls: RelayTLS?) -> RelayServerError {
    if let tls {
      var reason = [CChar](repeating: 0, count: 256)
      if chat_tls_pair_problem(tls.certificatePath, tls.keyPath, &reason, reason.count) != 0 {
        return RelayServerError(
          message:
            "\(tls.certificatePath), \(tls.keyPath): cannot serve TLS with them (\(String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)))",
          kind: .tls)
      }
    }
    return RelayServerError(
      message: "Could not listen on \(host):\(port): libwebsockets could not create its context", kind: .address)
  }

  /// The port the default vhost listens on.
  var listenPort: Int {
    guard let vhost = lws_get_vhost_by_name(pointer, "default") else { return 0 }
    return Int(lws_get_vhost_listen_port(vhost))
  }

  /// Closes every connection (their close callbacks run now, on the calling thread)
  /// and frees the context. Idempotent.
  func destroy() {
    guard !destroyed else { return }
    destroyed = true
    lws_context_destroy(pointer)
  }

  deinit {
    destroy()
    Self.release(protocols, protocolName, interface, pingPolicy)
  }

  /// The ALPN list the relay offers over TLS (lws keeps the pointer: a static string's
  /// bytes live as long as the process).
  private static let http11: StaticString = "http/1.1"

  private static func release(
    _ protocols: UnsafeMutablePointer<lws_protocols>, _ name: UnsafeMutablePointer<CChar>,
    _ interface: UnsafeMutablePointer<CChar>, _ ping: UnsafeMutablePointer<lws_retry_bo_t>
  ) {
    protocols.deinitialize(count: 2)
    protocols.deallocate()
    ping.deinitialize(count: 1)
    ping.deallocate()
    free(name)
    free(interface)
  }
}

@available(*, unavailable)
extension LWSContext: Sendable {}

/// The certificate (PEM, the chain after the server's own) and private key (PEM) the
/// relay serves TLS with.
public struct RelayTLS: Sendable, Hashable {
  /// The certificate chain's file.
  public var certificatePath: String
  /// The private key's file.
  public var keyPath: String

  /// TLS with these files.
  public init(certificatePath: String, keyPath: String) {
    self.certificatePath = certificatePath
    self.keyPath = keyPath
  }
}

/// Why a ``RelayServer`` could not start.
public struct RelayServerError: Error, CustomStringConvertible, Sendable {
  /// What failed, naming the address or the TLS files.
  public var message: String
  /// The address could not be listened on, or the TLS files cannot serve.
  public var kind: Kind = .address

  /// What kind of failure.
  public enum Kind: Sendable {
    /// The address is taken, not this machine's, or needs privileges.
    case address
    /// The certificate and key cannot serve TLS together.
    case tls
  }
  /// The message.
  public var description: String { message }
}
