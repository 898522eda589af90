import ArgumentParser
import HeraldCore
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// `--otlp-endpoint`, shared by `gateway run` and `provider`: OpenTelemetry traces of each push
/// (``Traces``), exported over OTLP/HTTP (protobuf) to a collector. Off unless given.
struct TracingOptions: ParsableArguments {
    @Option(help: ArgumentHelp(
        "Export traces of each push over OTLP/HTTP to this collector, such as http://127.0.0.1:4318 (/v1/traces is appended when the URL has no path); off when not given. OTEL_* variables refine it (OTEL_EXPORTER_OTLP_HEADERS, OTEL_BSP_SCHEDULE_DELAY…).",
        valueName: "URL"))
    var otlpEndpoint: String?

    func validate() throws {
        guard let otlpEndpoint else { return }
        guard otlpEndpoint.utf8.count <= 2048, otlpEndpoint.hasPrefix("http://") || otlpEndpoint.hasPrefix("https://"),
              otlpEndpoint.utf8.count > "https://".utf8.count else {
            throw ValidationError("--otlp-endpoint must be an http:// or https:// URL of an OTLP collector, such as http://127.0.0.1:4318")
        }
    }

    /// Installs the exporting tracer and turns ``Traces`` on, when an endpoint was given: before
    /// the first port opens. Returns the exporter's service, to run first in the command's
    /// service group (so it stops last, after flushing what the others recorded).
    func start(serviceName: String) throws -> (any Service)? {
        guard let otlpEndpoint else { return nil }
        var configuration = OTel.Configuration.default
        configuration.serviceName = serviceName
        configuration.logs.enabled = false
        configuration.metrics.enabled = false
        configuration.traces.enabled = true
        configuration.traces.exporter = .otlp
        configuration.traces.otlpExporter.protocol = .httpProtobuf
        configuration.traces.otlpExporter.endpoint = Traces.otlpTracesURL(otlpEndpoint)
        // A second, not five: a push's spans reach the collector about when the push does.
        configuration.traces.batchSpanProcessor.scheduleDelay = .seconds(1)
        configuration.diagnosticLogLevel = .warning
        // The exporter's warnings through the process's log handler (JSON lines in JSON mode).
        configuration.diagnosticLogger = .custom(Logger(label: "herald.otel"))
        // A collector that hangs or is not there delays a stop by at most two of these (the
        // export under way, then the final flush), not by AsyncHTTPClient's 10 s and the
        // processor's 30 s: a batch a collector cannot take within 0.9 s is dropped, with a warning.
        configuration.traces.otlpExporter.timeout = .milliseconds(900)
        configuration.traces.batchSpanProcessor.exportTimeout = .milliseconds(900)
        let backend = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(backend.factory)
        Traces.enable()
        return backend.service
    }
}
