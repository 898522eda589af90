import HeraldCore
import HeraldNIO
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// How the client secures a connection.
public struct ClientTLS: Sendable {
    /// A PEM file of trusted roots (the gateway's development CA); `nil` uses the system's roots.
    public var trustRootsPath: String?
    /// The ALPN protocols offered, in order.
    public var applicationProtocols: [String]
    /// The name sent in SNI and checked against the certificate.
    public var serverName: String?
    /// A client certificate (PEM, followed by its chain) and its private key (PEM): certificate
    /// authentication (reference §3) instead of provider tokens.
    public var certificateChainPath: String?
    public var privateKeyPath: String?

    public init(
        trustRootsPath: String? = nil, applicationProtocols: [String] = ["h2"], serverName: String? = nil,
        certificateChainPath: String? = nil, privateKeyPath: String? = nil
    ) {
        self.certificateChainPath = certificateChainPath
        self.privateKeyPath = privateKeyPath
        self.trustRootsPath = trustRootsPath
        self.applicationProtocols = applicationProtocols
        self.serverName = serverName
    }
}
