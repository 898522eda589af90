import ArgumentParser
import Foundation
import HeraldCore
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL

/// The benchmark's baseline: a bare SwiftNIO HTTP/2 server over TLS that answers every request
/// `HEADERS(:status 200, apns-id, END_STREAM)` and does nothing else. The gateway's throughput is
/// reported as a ratio of this one's, measured in the same run.
struct BenchBaseline: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "baseline",
        abstract: "Run a bare SwiftNIO HTTP/2 TLS responder (the benchmark baseline); prints its port as JSON.",
        discussion: "Example: herald bench baseline --tls-cert ./herald-data/tls/server.pem --tls-key ./herald-data/tls/server-key.pem (scripts/bench-gateway.sh runs it)")

    @Option(help: "The port; 0 picks a free one.")
    var port: Int = 0

    @Option(help: ArgumentHelp("The server certificate chain (PEM).", valueName: "PEM"))
    var tlsCert: String

    @Option(help: ArgumentHelp("The server key (PEM).", valueName: "PEM"))
    var tlsKey: String

    func run() async throws {
        let chain = try NIOSSLCertificate.fromPEMFile(tlsCert).map { NIOSSLCertificateSource.certificate($0) }
        var tls = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain, privateKey: .privateKey(try NIOSSLPrivateKey(file: tlsKey, format: .pem)))
        tls.applicationProtocols = ["h2"]
        let context = try NIOSSLContext(configuration: tls)
        let channel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 256)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context))
                    var configuration = NIOHTTP2Handler.ConnectionConfiguration()
                    configuration.initialSettings = [HTTP2Setting(parameter: .maxConcurrentStreams, value: 1000)]
                    _ = try channel.pipeline.syncOperations.configureHTTP2Pipeline(
                        mode: .server, connectionConfiguration: configuration, streamConfiguration: .init()
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(OKResponder())
                        }
                    }
                }
            }
            .bind(host: "127.0.0.1", port: port).get()
        printLineFlushed(#"{"port":\#(channel.localAddress?.port ?? 0)}"#)
        try await channel.closeFuture.get()
    }
}

private final class OKResponder: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload
    private var ids = NotificationID.FastGenerator()

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let ended: Bool
        switch unwrapInboundIn(data) {
        case .headers(let headers): ended = headers.endStream
        case .data(let frame): ended = frame.endStream
        default: ended = false
        }
        guard ended else { return }
        var headers = HPACKHeaders()
        headers.add(name: ":status", value: "200")
        headers.add(name: "apns-id", value: NotificationID.random(using: &ids).description, indexing: .nonIndexable)
        context.writeAndFlush(wrapOutboundOut(.headers(.init(headers: headers, endStream: true))), promise: nil)
    }
}
