/// A thread of its own, for work that must not wait for a pool (`LinePreparer`).
package enum DetachedThread {
  /// Runs `body` on a new detached thread. False when the system would not make one.
  package static func detach(_ body: @escaping @Sendable () -> Void) -> Bool {
    let context = Unmanaged.passRetained(Body(body)).toOpaque()
    // Allocated, not `pthread_attr_t()`: under MemberImportVisibility that zero initializer is
    // attributed to the module `_Builtin_intrinsics`, which no file should have to import.
    let attributes = UnsafeMutablePointer<pthread_attr_t>.allocate(capacity: 1)
    defer { attributes.deallocate() }
    pthread_attr_init(attributes)
    defer { pthread_attr_destroy(attributes) }
    pthread_attr_setdetachstate(attributes, Int32(PTHREAD_CREATE_DETACHED))
    #if canImport(Darwin)
    var thread: pthread_t? = nil
    #else
    var thread = pthread_t()
    #endif
    let made = pthread_create(
      &thread, attributes,
      { raw in
        let context: UnsafeMutableRawPointer? = raw
        Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
        return nil
      }, context)
    guard made == 0 else {
      Unmanaged<Body>.fromOpaque(context).release()
      return false
    }
    return true
  }

  private final class Body {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
  }
}
