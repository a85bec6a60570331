import CWebSockets

/// What answers a libwebsockets context's events: the relay's server core, the client's
/// connection core. Called on the context's service thread only.
package protocol LWSEventHandler: AnyObject {
  /// The answer to one lws callback (`0` to go on, nonzero to close the connection).
  func handle(
    _ wsi: OpaquePointer, _ reason: lws_callback_reasons, user: UnsafeMutableRawPointer?,
    input: UnsafeMutableRawPointer?, length: Int
  ) -> Int32
}

/// The context's user pointer (`lws_context_creation_info.user`): the handler that
/// ``lwsContextCallback`` hands every event to.
///
/// The owner of the context keeps this alive for the context's life; the handler is not
/// retained (it owns the context, directly or not, and outlives it).
package final class LWSContextUser {
  // unowned(unsafe): the handler outlives the context (see above), and a retain and
  // release on every event would be the only cost of a safer reference.
  private unowned(unsafe) let handler: any LWSEventHandler

  package init(_ handler: any LWSEventHandler) { self.handler = handler }

  /// The pointer to put in `lws_context_creation_info.user`.
  package var pointer: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

  fileprivate func handle(
    _ wsi: OpaquePointer, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
    _ input: UnsafeMutableRawPointer?, _ length: Int
  ) -> Int32 {
    handler.handle(wsi, reason, user: user, input: input, length: length)
  }
}

/// The C callback of every protocol of the relay's and the client's contexts: finds the
/// ``LWSContextUser`` through the context's user pointer and hands the event to its
/// handler; an event without a context (none is expected) gets lws's default answer.
///
/// See https://libwebsockets.org/lws-api-doc-v4.1-stable/html/structlws__protocols.html
package func lwsContextCallback(
  _ wsi: OpaquePointer?, _ reason: lws_callback_reasons, _ user: UnsafeMutableRawPointer?,
  _ input: UnsafeMutableRawPointer?, _ length: Int
) -> Int32 {
  guard let wsi, let context = lws_get_context(wsi), let owner = lws_context_user(context) else {
    return lws_callback_http_dummy(wsi, reason, user, input, length)
  }
  return Unmanaged<LWSContextUser>.fromOpaque(owner).takeUnretainedValue().handle(wsi, reason, user, input, length)
}

/// Wakes `lws_service` on a context from another thread.
// @unchecked: lws_cancel_service is documented as callable from any thread; an owner
// that destroys its context drops its handles first, under the lock that hands them out
// (the relay's `Outbound`), and the client's context is never destroyed.
package struct LWSWakeHandle: @unchecked Sendable {
  /// The context to wake.
  package let context: OpaquePointer

  /// A handle for `context`.
  package init(context: OpaquePointer) { self.context = context }

  /// Makes the service thread's `lws_service` return (with
  /// `LWS_CALLBACK_EVENT_WAIT_CANCELLED` on each protocol).
  package func wake() { lws_cancel_service(context) }
}
