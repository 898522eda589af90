import Crypto
import Foundation
import HeraldCore

/// A device's P-256 key pair: what enrolls it on a gateway and signs every connection's
/// challenge. Kept as `device-key.pem` (PKCS#8, mode 0600) in the device's data directory.
public struct DeviceIdentity: Sendable {
    public let privateKey: P256.Signing.PrivateKey
    public var publicKey: [UInt8] { Array(privateKey.publicKey.rawRepresentation) }
    /// The id the gateway knows the device by (derived from the public key).
    public var deviceID: String { DeviceProtocol.deviceID(publicKey: publicKey) }

    public init(privateKey: P256.Signing.PrivateKey = P256.Signing.PrivateKey()) {
        self.privateKey = privateKey
    }

    /// The hello frame answering a challenge (with the gateway's enrollment secret, when it asks
    /// for one, and the ping interval the device's network needs, when it learned one).
    public func hello(nonce: String, enrollmentSecret: String? = nil, keepaliveSeconds: Int? = nil) throws -> DeviceClientFrame {
        let signature = try privateKey.signature(for: DeviceProtocol.challengeMessage(nonce: nonce))
        return .hello(
            version: DeviceProtocol.latestVersion, publicKey: publicKey, signature: Array(signature.rawRepresentation),
            enrollmentSecret: enrollmentSecret, keepaliveSeconds: keepaliveSeconds)
    }

    public static let fileName = "device-key.pem"

    /// Loads the identity from `directory`, creating it (and the directory) on first use.
    public static func loadOrCreate(in directory: String) throws -> DeviceIdentity {
        let path = (directory as NSString).appendingPathComponent(fileName)
        if FileManager.default.fileExists(atPath: path) {
            let pem = try String(contentsOfFile: path, encoding: .utf8)
            do { return DeviceIdentity(privateKey: try P256.Signing.PrivateKey(pemRepresentation: pem)) } catch {
                throw DeviceError("\(path) is not a P-256 private key in PEM (\(error)); remove it to enroll as a new device")
            }
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let identity = DeviceIdentity()
        guard FileManager.default.createFile(
            atPath: path, contents: Data(identity.privateKey.pemRepresentation.utf8), attributes: [.posixPermissions: 0o600])
        else { throw DeviceError("could not write \(path)") }
        return identity
    }
}

/// An error of the device side, in words for a person.
public struct DeviceError: Error, Sendable, Hashable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

import NIOSSL

/// TLS for the device port.
public enum DeviceTLS {
    /// A client context that trusts the roots in `trustRootsPath` (PEM; the gateway's
    /// development CA), or the system's roots when `nil`.
    public static func makeContext(trustRootsPath: String?) throws -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.minimumTLSVersion = .tlsv12
        configuration.applicationProtocols = ["http/1.1"]
        if let trustRootsPath {
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(trustRootsPath))
        }
        return try NIOSSLContext(configuration: configuration)
    }
}
