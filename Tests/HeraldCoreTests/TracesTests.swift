import HeraldCore
import Testing

@Suite("Traces: W3C trace context read from hostile headers, OTLP endpoints")
struct TracesTests {
    static let valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    @Test("a W3C traceparent is kept with its tracestate, and names its trace id")
    func valid() throws {
        let carrier = try #require(Traces.Carrier(traceparent: Self.valid, tracestate: "congo=t61rcWkgMzE"))
        #expect(carrier.traceID == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(carrier.headers.map(\.name) == ["traceparent", "tracestate"])
        #expect(Traces.Carrier(traceparent: Self.valid)?.headers.count == 1)
    }

    @Test("a malformed traceparent is no trace context (the push starts its own trace, never refused)", arguments: [
        "", "00", String(repeating: "0", count: 55), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  // upper case
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  // zero trace id
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  // zero span id
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  // forbidden version
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e473é-00f067aa0ba902b7-01",
        String(repeating: "a", count: 100_000),
    ])
    func malformed(_ value: String) {
        #expect(Traces.Carrier(traceparent: value) == nil)
    }

    @Test("a tracestate longer than W3C's 512 bytes is dropped, the traceparent kept")
    func longState() throws {
        let carrier = try #require(Traces.Carrier(traceparent: Self.valid, tracestate: String(repeating: "k=v,", count: 200)))
        #expect(carrier.tracestate == nil)
    }

    @Test("an OTLP endpoint without a path gets /v1/traces; one with a path is used as it is", arguments: [
        ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
        ("http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/traces"),
        ("https://otel.example.com", "https://otel.example.com/v1/traces"),
        ("https://otel.example.com/custom/traces", "https://otel.example.com/custom/traces"),
    ])
    func endpoints(_ given: String, _ expected: String) {
        #expect(Traces.otlpTracesURL(given) == expected)
    }

    @Test("tracing is off unless enabled: nothing to record, no header read")
    func offByDefault() {
        var head = APNsRequestHead()
        head.record(name: "traceparent", value: Self.valid)
        // The test process never enables tracing (only `--otlp-endpoint` does).
        #expect(!Traces.isEnabled)
        #expect(head.traceparent == nil)
    }
}
