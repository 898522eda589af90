import HeraldCore
import HeraldStore
import Logging
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS

/// The legacy Feedback Service (reference §7), for providers written against it: TLS with a
/// client certificate that names the app (`UID=<bundle id>`, as Apple's push certificates do,
/// signed by a CA the gateway trusts). The client sends nothing; the gateway writes the app's
/// feedback tuples `u32 timestamp (s) | u16 token length | token`, big-endian, and closes. The
/// list is read and cleared, shared with `GET /3/feedback/<topic>` on the provider port.
final class LegacyFeedbackListener: Sendable {
    let serverChannel: Channel
    var port: Int { serverChannel.localAddress?.port ?? 0 }

    private init(serverChannel: Channel) { self.serverChannel = serverChannel }

    struct Context: Sendable {
        var store: any GatewayStore
        var clock: any WallClock
        var environment: PushEnvironment
        var inactivityMilliseconds: Int64
        var logger: Logger
    }

    static func bind(
        host: String, port: Int, tls: ReloadableTLSContext, context: Context, handshakeTimeout: TimeAmount,
        connections: ConnectionsPerAddress, group: EventLoopGroup
    ) async throws -> LegacyFeedbackListener {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                // Counted with the provider port's connections (per address, and in all).
                if let refusal = connections.admit(channel) { return channel.eventLoop.makeFailedFuture(refusal) }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: tls.current))
                    try channel.pipeline.syncOperations.addHandler(ConnectionDeadline(timeout: handshakeTimeout, milestone: .tlsHandshake))
                    try channel.pipeline.syncOperations.addHandler(FeedbackHandler(context: context))
                }
            }
        return LegacyFeedbackListener(serverChannel: try await bootstrap.bind(host: host, port: port).get())
    }

    func close() async { try? await serverChannel.close() }

    /// Encodes feedback tuples (reference §7).
    static func encode(_ entries: [FeedbackEntry], into buffer: inout ByteBuffer) {
        for entry in entries {
            buffer.writeInteger(UInt32(truncatingIfNeeded: entry.atMilliseconds / 1000), endianness: .big)
            buffer.writeInteger(UInt16(entry.token.bytes.count), endianness: .big)
            buffer.writeBytes(entry.token.bytes)
        }
    }
}

private final class FeedbackHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let feedback: LegacyFeedbackListener.Context

    init(context: LegacyFeedbackListener.Context) { self.feedback = context }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard case TLSUserEvent.handshakeCompleted = event else { return context.fireUserInboundEventTriggered(event) }
        let channel = context.channel
        let feedback = self.feedback
        channel.nioSSL_peerCertificate().whenComplete { result in
            guard case .success(let certificate?) = result, let der = try? certificate.toDERBytes(),
                  let topic = DevelopmentCertificates.topic(ofClientCertificate: der) else {
                feedback.logger.notice("feedback client without a certificate naming an app (UID=<bundle id>)")
                channel.close(promise: nil)
                return
            }
            let now = feedback.clock.nowMilliseconds()
            channel.eventLoop.makeFutureWithTask {
                try await feedback.store.takeFeedback(
                    bundleID: topic, environment: feedback.environment, inactiveBefore: now - feedback.inactivityMilliseconds,
                    inactivityMilliseconds: feedback.inactivityMilliseconds)
            }.whenComplete { result in
                switch result {
                case .success(let entries):
                    var buffer = channel.allocator.buffer(capacity: entries.count * 38)
                    LegacyFeedbackListener.encode(entries, into: &buffer)
                    channel.writeAndFlush(buffer).whenComplete { _ in channel.close(promise: nil) }
                case .failure(let error):
                    feedback.logger.error("could not read the feedback list", metadata: ["error": "\(error)"])
                    channel.close(promise: nil)
                }
            }
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // The client sends nothing; anything it does send is ignored.
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        feedback.logger.debug("feedback connection error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }
}
