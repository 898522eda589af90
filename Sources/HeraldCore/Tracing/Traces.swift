import Instrumentation
import ServiceContextModule
import Synchronization
import Tracing

/// Herald's traces of a push (OpenTelemetry, through swift-distributed-tracing): off unless a
/// command was given an OTLP endpoint, and then a span for each hop — `herald provider`'s send and
/// its APNs request, the gateway's provider-port request, the intake's commit, the delivery to
/// the device until its ack — all in the trace the provider's `traceparent` names.
///
/// Every call site checks ``isEnabled`` first: with tracing off, a push costs one relaxed atomic
/// load per hop and nothing else (no span, no context, no header parsing).
public enum Traces {
    private static let enabled = Atomic<Bool>(false)

    /// Whether spans are recorded (``enable()`` was called, once, at start-up).
    @inline(__always)
    public static var isEnabled: Bool { enabled.load(ordering: .relaxed) }

    /// Turns tracing on: after `InstrumentationSystem.bootstrap` installed the exporting tracer,
    /// before the first request.
    public static func enable() { enabled.store(true, ordering: .relaxed) }

    /// A trace context as W3C Trace Context carries it between processes and across the
    /// asynchronous hops inside one (a stored notification waiting for its device): the
    /// `traceparent` header and, when there was one, `tracestate`.
    public struct Carrier: Sendable, Hashable {
        public var traceparent: String
        public var tracestate: String?

        /// At most this many bytes of each header are kept (W3C: `traceparent` is 55 bytes,
        /// `tracestate` at most 512); longer values are not a trace context.
        public static let maximumHeaderBytes = 512

        /// `traceparent` as a provider sent it: nil when it is absent, too long, or not of
        /// the W3C form `00-<32 hex>-<16 hex>-<2 hex>` (an invalid one starts a new trace).
        public init?(traceparent: String?, tracestate: String? = nil) {
            guard let traceparent, traceparent.utf8.count == 55, Self.isTraceparent(traceparent) else { return nil }
            self.traceparent = traceparent
            self.tracestate = tracestate.flatMap { $0.utf8.count <= Self.maximumHeaderBytes ? $0 : nil }
        }

        private static func isTraceparent(_ value: String) -> Bool {
            let bytes = Array(value.utf8)
            for (index, byte) in bytes.enumerated() {
                switch index {
                case 2, 35, 52: if byte != UInt8(ascii: "-") { return false }
                default:
                    let isHex = (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
                    if !isHex { return false }
                }
            }
            // Version ff is forbidden; an all-zero trace or span id is invalid.
            return !value.hasPrefix("ff") && !value.utf8.dropFirst(3).prefix(32).allSatisfy { $0 == UInt8(ascii: "0") }
                && !value.utf8.dropFirst(36).prefix(16).allSatisfy { $0 == UInt8(ascii: "0") }
        }

        /// The headers to send.
        public var headers: [(name: String, value: String)] {
            [("traceparent", traceparent)] + (tracestate.map { [("tracestate", $0)] } ?? [])
        }

        /// The trace id (32 hex digits), as logs show it.
        public var traceID: String { String(traceparent.dropFirst(3).prefix(32)) }
    }

    /// The context a carrier names, through the installed propagator.
    public static func context(from carrier: Carrier?) -> ServiceContext {
        var context = ServiceContext.topLevel
        guard let carrier else { return context }
        InstrumentationSystem.instrument.extract(carrier, into: &context, using: CarrierExtractor())
        return context
    }

    /// The carrier of `context` (a span's), through the installed propagator.
    public static func carrier(of context: ServiceContext) -> Carrier? {
        var carrier = Carrier(unchecked: "")
        InstrumentationSystem.instrument.inject(context, into: &carrier, using: CarrierInjector())
        return carrier.traceparent.isEmpty ? nil : carrier
    }

    /// The URL an OTLP/HTTP exporter posts spans to: a collector's address without a path gets
    /// OTLP's `/v1/traces` (as `OTEL_EXPORTER_OTLP_ENDPOINT` does); one with a path is used as
    /// it is (as `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is).
    public static func otlpTracesURL(_ endpoint: String) -> String {
        let afterScheme = endpoint.split(separator: "://", maxSplits: 1).last.map(String.init) ?? endpoint
        guard let slash = afterScheme.firstIndex(of: "/") else { return endpoint + "/v1/traces" }
        return afterScheme[slash...] == "/" ? endpoint + "v1/traces" : endpoint
    }

    /// An instant on the wall clock, in milliseconds since 1970 (Herald's clocks' unit): for
    /// spans recorded after the fact (a delivery, when its ack arrives).
    public struct Instant: TracerInstant {
        public var nanosecondsSinceEpoch: UInt64
        public init(milliseconds: Int64) { nanosecondsSinceEpoch = UInt64(clamping: milliseconds) &* 1_000_000 }
        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.nanosecondsSinceEpoch < rhs.nanosecondsSinceEpoch }
    }

    /// Records a span that already happened: from `start` to `end` (milliseconds since 1970),
    /// a child of `parent`, with `attributes`.
    public static func record(
        _ name: String, parent: Carrier, kind: SpanKind = .internal, from start: Int64, to end: Int64,
        attributes: [(String, String)] = [], failure: String? = nil
    ) {
        let span = InstrumentationSystem.tracer.startSpan(name, context: context(from: parent), ofKind: kind, at: Instant(milliseconds: start))
        for (key, value) in attributes { span.attributes[key] = value }
        if let failure { span.setStatus(SpanStatus(code: .error, message: failure)) }
        span.end(at: Instant(milliseconds: max(start, end)))
    }
}

extension Traces.Carrier {
    fileprivate init(unchecked traceparent: String) {
        self.traceparent = traceparent
        self.tracestate = nil
    }
}

private struct CarrierExtractor: Extractor {
    func extract(key: String, from carrier: Traces.Carrier) -> String? {
        switch key.lowercased() {
        case "traceparent": return carrier.traceparent
        case "tracestate": return carrier.tracestate
        default: return nil
        }
    }
}

private struct CarrierInjector: Injector {
    func inject(_ value: String, forKey key: String, into carrier: inout Traces.Carrier) {
        switch key.lowercased() {
        case "traceparent": carrier.traceparent = value
        case "tracestate": carrier.tracestate = value
        default: break
        }
    }
}
