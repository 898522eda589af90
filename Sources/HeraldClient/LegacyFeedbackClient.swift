import HeraldCore
import NIOCore
import NIOPosix
import NIOSSL

/// A client of the legacy Feedback Service (reference §7): connects with the app's client
/// certificate, reads the tuples until the server closes, and decodes them. Works against
/// Herald's `--feedback-port` (and, historically, `feedback.push.apple.com:2196`).
public enum LegacyFeedbackClient {
    public struct Entry: Sendable, Hashable {
        /// When the service learned the app was gone (seconds since 1970).
        public var timestampSeconds: UInt32
        public var token: DeviceToken
        public init(timestampSeconds: UInt32, token: DeviceToken) {
            self.timestampSeconds = timestampSeconds
            self.token = token
        }
    }

    public struct DecodingError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Reads the feedback list (and so clears it on the server).
    public static func fetch(
        host: String, port: Int, certificatePath: String, privateKeyPath: String, trustRootsPath: String?,
        serverName: String? = "localhost", group: EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> [Entry] {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateChain = try NIOSSLCertificate.fromPEMFile(certificatePath).map { .certificate($0) }
        configuration.privateKey = .privateKey(try NIOSSLPrivateKey(file: privateKeyPath, format: .pem))
        if let trustRootsPath { configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(trustRootsPath)) }
        let context = try NIOSSLContext(configuration: configuration)
        let received = group.any().makePromise(of: ByteBuffer.self)
        // The server writes its tuples and closes; the collector completes when it has.
        _ = try await ClientBootstrap(group: group)
            .connectTimeout(.seconds(10))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLClientHandler(context: context, serverHostname: serverName))
                    try channel.pipeline.syncOperations.addHandler(Collector(done: received))
                }
            }
            .connect(host: host, port: port).get()
        return try decode(try await received.futureResult.get())
    }

    /// Decodes tuples `u32 timestamp | u16 token length | token`, big-endian.
    public static func decode(_ buffer: ByteBuffer) throws -> [Entry] {
        var buffer = buffer
        var entries: [Entry] = []
        while buffer.readableBytes > 0 {
            guard let timestamp = buffer.readInteger(endianness: .big, as: UInt32.self),
                  let length = buffer.readInteger(endianness: .big, as: UInt16.self),
                  let bytes = buffer.readBytes(length: Int(length)), let token = DeviceToken(bytes: bytes)
            else { throw DecodingError(description: "a truncated or invalid feedback tuple") }
            entries.append(Entry(timestampSeconds: timestamp, token: token))
        }
        return entries
    }

    private final class Collector: ChannelInboundHandler {
        typealias InboundIn = ByteBuffer
        private var collected = ByteBuffer()
        private let done: EventLoopPromise<ByteBuffer>

        init(done: EventLoopPromise<ByteBuffer>) { self.done = done }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            var buffer = unwrapInboundIn(data)
            collected.writeBuffer(&buffer)
        }

        func channelInactive(context: ChannelHandlerContext) {
            done.succeed(collected)
            context.fireChannelInactive()
        }

        func errorCaught(context: ChannelHandlerContext, error: Error) {
            // The server closing right after its last bytes can surface as an unclean TLS
            // shutdown; what arrived is still complete tuples (decode checks).
            if let sslError = error as? NIOSSLError, case .uncleanShutdown = sslError { return }
            done.fail(error)
            context.close(promise: nil)
        }
    }
}
