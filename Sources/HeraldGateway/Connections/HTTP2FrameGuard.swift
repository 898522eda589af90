import Logging
import NIOCore
import NIOHTTP2

/// What an HTTP/2 connection (the provider port's, the Web Push port's) may send before it is cut off: resets of streams still in progress
/// and control frames, each counted in a window. A pure state machine over frame headers and time.
///
/// A stream is *in progress* from the peer's HEADERS until the gateway ends its answer (HEADERS or
/// DATA with END_STREAM, or RST_STREAM). Resetting a stream after its answer — as AsyncHTTPClient
/// (under APNSwift) and Go's HTTP/2 client do for every request — is harmless and never counted;
/// resetting streams in progress is what HTTP/2 Rapid Reset (CVE-2023-44487) does, and is counted
/// (the distinction Envoy draws between "premature" and other resets).
struct HTTP2FrameGuardState {
    struct Limits {
        var inProgressResets: Int
        var resetWindow: TimeAmount
        var controlFrames: Int
        var controlWindow: TimeAmount
    }

    enum Verdict: Equatable {
        case pass
        /// Send GOAWAY `ENHANCE_YOUR_CALM` and close, for this reason.
        case violation(String)
    }

    let limits: Limits
    /// Streams the peer opened that the gateway has not finished answering.
    private(set) var inProgress = Set<UInt32>()
    private var highestStream: UInt32 = 0
    private var resets: WindowedCount
    private var controlFrames: WindowedCount
    /// Streams opened since the control-frame window began.
    private var streamsOpened = 0

    init(limits: Limits) {
        self.limits = limits
        resets = WindowedCount(window: limits.resetWindow)
        controlFrames = WindowedCount(window: limits.controlWindow)
    }

    /// Events counted in a fixed window that starts again at the first event after it ends.
    struct WindowedCount {
        let window: TimeAmount
        private(set) var count = 0
        private var start: NIODeadline?

        init(window: TimeAmount) { self.window = window }

        /// Counts one event; returns true when it began a new window.
        mutating func add(at time: NIODeadline) -> Bool {
            if let start, time - start <= window {
                count += 1
                return false
            }
            start = time
            count = 1
            return true
        }
    }

    /// A frame header from the peer.
    mutating func inbound(_ frame: HTTP2FrameScanner.Frame, now: () -> NIODeadline) -> Verdict {
        switch frame.type {
        case HTTP2FrameScanner.Frame.headers:
            if frame.streamID > highestStream, frame.streamID & 1 == 1 {
                highestStream = frame.streamID
                inProgress.insert(frame.streamID)
                streamsOpened += 1
            }
        case HTTP2FrameScanner.Frame.rstStream:
            guard inProgress.remove(frame.streamID) != nil else { return .pass }
            _ = resets.add(at: now())
            if resets.count > limits.inProgressResets {
                return .violation("more than \(limits.inProgressResets) resets of streams in progress")
            }
        case HTTP2FrameScanner.Frame.ping, HTTP2FrameScanner.Frame.settings, HTTP2FrameScanner.Frame.priority,
             HTTP2FrameScanner.Frame.windowUpdate:
            if controlFrames.add(at: now()) { streamsOpened = 0 }
            if controlFrames.count > limits.controlFrames + 2 * streamsOpened {
                return .violation("more than \(limits.controlFrames) control frames (PING, SETTINGS, PRIORITY, WINDOW_UPDATE)")
            }
        default:
            break
        }
        return .pass
    }

    /// A frame header the gateway sends. Returns true for a GOAWAY that reports an error: the
    /// connection is closed once it is written (RFC 9113 §5.4.1).
    mutating func outbound(_ frame: HTTP2FrameScanner.Frame) -> Bool {
        switch frame.type {
        case HTTP2FrameScanner.Frame.headers, HTTP2FrameScanner.Frame.data:
            if frame.flags & HTTP2FrameScanner.Frame.endStream != 0 { inProgress.remove(frame.streamID) }
        case HTTP2FrameScanner.Frame.rstStream:
            inProgress.remove(frame.streamID)
        case HTTP2FrameScanner.Frame.goAway:
            return (frame.goAwayErrorCode ?? 0) != 0
        default:
            break
        }
        return false
    }
}

/// Sits between TLS (or the socket, for h2c) and NIO's HTTP/2 handler of a connection to either
/// HTTP/2 port (provider, Web Push) and applies ``HTTP2FrameGuardState``: a peer past a limit gets GOAWAY `ENHANCE_YOUR_CALM`, nothing
/// more of what it sent is read, and the connection is closed. Any GOAWAY for an error — Herald's
/// or NIO's (CONTINUATION flood, protocol errors) — closes the connection once written.
final class HTTP2FrameGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private var state: HTTP2FrameGuardState
    private var inboundScanner = HTTP2FrameScanner(inbound: true)
    private var outboundScanner = HTTP2FrameScanner(inbound: false)
    private var closing = false
    private let onViolation: (String) -> Void

    init(limits: HTTP2FrameGuardState.Limits, onViolation: @escaping (String) -> Void) {
        state = HTTP2FrameGuardState(limits: limits)
        self.onViolation = onViolation
    }

    /// The guard of a connection to `port` (the metric's label) with the gateway's limits: a
    /// violation is counted as a `flood` and logged with its reason.
    convenience init(_ limits: GatewayLimits, port: String, channel: Channel, metrics: GatewayMetrics, logger: Logger) {
        self.init(limits: .init(
            inProgressResets: limits.inProgressResetsPerWindow, resetWindow: limits.resetWindow,
            controlFrames: limits.controlFramesPerWindow, controlWindow: limits.controlFrameWindow
        )) { [weak channel] reason in
            metrics.recordPeerClosed(port: port, reason: "flood")
            logger.notice("HTTP/2 connection closed", metadata: [
                "port": "\(port)", "peer": "\(channel?.remoteAddress?.description ?? "?")", "reason": "\(reason)",
            ])
        }
    }

    /// NIO's own limits for a connection behind this guard: wide enough never to fire before it
    /// does (NIO counts every reset and control frame; the guard tells answered streams' resets
    /// apart), with `settings` as the connection's first SETTINGS.
    static func connectionConfiguration(settings: HTTP2Settings) -> NIOHTTP2Handler.ConnectionConfiguration {
        var configuration = NIOHTTP2Handler.ConnectionConfiguration()
        configuration.initialSettings = settings
        configuration.maximumBufferedControlFrames = 1_000
        configuration.controlFrameRateLimit.maximumCount = 1_000
        configuration.controlFrameRateLimit.windowLength = .microseconds(1)
        return configuration
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if closing { return }
        let buffer = unwrapInboundIn(data)
        var violation: String?
        inboundScanner.scan(buffer) { frame in
            guard violation == nil else { return }
            if case .violation(let reason) = state.inbound(frame, now: NIODeadline.now) { violation = reason }
        }
        if let violation {
            closing = true
            onViolation(violation)
            let goAway = HTTP2Frame(
                streamID: .rootStream, payload: .goAway(lastStreamID: .maxID, errorCode: .enhanceYourCalm, opaqueData: nil))
            // Through NIO's HTTP/2 handler (from the pipeline's tail), then closed once written.
            let channel = context.channel
            channel.writeAndFlush(goAway).whenComplete { _ in channel.close(promise: nil) }
            return
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        var closeAfter = false
        if case .byteBuffer(let buffer) = unwrapOutboundIn(data) {
            outboundScanner.scan(buffer) { frame in
                if state.outbound(frame) { closeAfter = true }
            }
        }
        guard closeAfter else { return context.write(data, promise: promise) }
        closing = true
        let written = promise ?? context.eventLoop.makePromise()
        let channel = context.channel
        written.futureResult.whenComplete { _ in channel.close(promise: nil) }
        context.write(data, promise: written)
        context.flush()
    }
}
