import OutboxSupport

/// One `/users/track` body and, for each of its objects, the seq of the item it came from.
package struct TrackBatch: Sendable {
  /// The objects of each array as JSON text, joined by commas.
  var attributes: [UInt8] = []
  var events: [UInt8] = []
  var attributeSeqs: [UInt64] = []
  var eventSeqs: [UInt64] = []
  /// Every item the body accounts for: its objects' items and the superseded ones it replaces.
  package var seqs: [UInt64] = []

  package init() {}

  /// An empty body with room for as many bytes and objects as `full` holds: bodies of a drain are
  /// alike, so each after the first is built without growing its arrays.
  init(sizedLike full: TrackBatch) {
    attributes.reserveCapacity(full.attributes.count)
    events.reserveCapacity(full.events.count)
    attributeSeqs.reserveCapacity(full.attributeSeqs.count)
    eventSeqs.reserveCapacity(full.eventSeqs.count)
    seqs.reserveCapacity(full.seqs.count)
  }

  /// The byte count of `appendBody`'s output.
  package var bodySize: Int { attributes.count + events.count + 29 }

  package var objectCount: Int { attributeSeqs.count + eventSeqs.count }

  /// Appends the body `{"attributes":[…],"events":[…]}`.
  package func appendBody(to out: inout [UInt8]) {
    out.appendASCII("{\"attributes\":[")
    out.append(contentsOf: attributes)
    out.appendASCII("],\"events\":[")
    out.append(contentsOf: events)
    out.appendASCII("]}")
  }

  /// The item behind `input_array[index]`, as Braze names an object in its `errors`.
  package func seq(array: String, index: Int) -> UInt64? {
    let seqs = array == "events" ? eventSeqs : array == "attributes" ? attributeSeqs : []
    return index >= 0 && index < seqs.count ? seqs[index] : nil
  }

  /// Adds one object (its JSON text) for item `seq`.
  mutating func add(_ object: UnsafeRawBufferPointer, isEvent: Bool, seq: UInt64) {
    if isEvent {
      if !eventSeqs.isEmpty { events.append(UInt8(ascii: ",")) }
      events.append(contentsOf: object)
      eventSeqs.append(seq)
    } else {
      if !attributeSeqs.isEmpty { attributes.append(UInt8(ascii: ",")) }
      attributes.append(contentsOf: object)
      attributeSeqs.append(seq)
    }
  }
}
