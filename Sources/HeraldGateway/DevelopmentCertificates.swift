import Crypto
import Foundation
import HeraldCore
import SwiftASN1
import X509

/// A development certificate authority and a server certificate signed by it, valid for
/// `localhost` and `127.0.0.1`, kept in the gateway's data directory so that clients can trust
/// the CA once (`curl --cacert DIR/tls/ca.pem`) across restarts.
public struct DevelopmentCertificates: Sendable {
    /// `DIR/tls/ca.pem`: the CA's certificate, to give clients as their trust root.
    public var caCertificatePath: String
    /// `DIR/tls/server.pem`: the server's certificate followed by the CA's.
    public var serverCertificatePath: String
    /// `DIR/tls/server-key.pem`: the server's private key (PKCS#8).
    public var serverKeyPath: String

    /// Loads the files from `dataDirectory/tls`, creating whichever are missing.
    public static func loadOrCreate(in dataDirectory: String, clock: any WallClock) throws -> DevelopmentCertificates {
        let directory = (dataDirectory as NSString).appendingPathComponent("tls")
        let files = DevelopmentCertificates(
            caCertificatePath: (directory as NSString).appendingPathComponent("ca.pem"),
            serverCertificatePath: (directory as NSString).appendingPathComponent("server.pem"),
            serverKeyPath: (directory as NSString).appendingPathComponent("server-key.pem"))
        let fm = FileManager.default
        if fm.fileExists(atPath: files.caCertificatePath), fm.fileExists(atPath: files.serverCertificatePath),
           fm.fileExists(atPath: files.serverKeyPath) {
            return files
        }
        try fm.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let caKeyPath = (directory as NSString).appendingPathComponent("ca-key.pem")
        let now = Date(timeIntervalSince1970: Double(clock.nowMilliseconds()) / 1000)

        // The CA: reuse it when present, so that clients that already trust it keep working.
        let caKey: P256.Signing.PrivateKey
        let caCertificate: Certificate
        if fm.fileExists(atPath: files.caCertificatePath), fm.fileExists(atPath: caKeyPath) {
            caKey = try P256.Signing.PrivateKey(pemRepresentation: String(contentsOfFile: caKeyPath, encoding: .utf8))
            caCertificate = try Certificate(pemEncoded: String(contentsOfFile: files.caCertificatePath, encoding: .utf8))
        } else {
            caKey = P256.Signing.PrivateKey()
            let caName = try DistinguishedName {
                OrganizationName("Herald")
                CommonName("Herald Development CA")
            }
            caCertificate = try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(),
                publicKey: Certificate.PublicKey(caKey.publicKey),
                notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(10 * 365 * 86400),
                issuer: caName, subject: caName, signatureAlgorithm: .ecdsaWithSHA256,
                extensions: try Certificate.Extensions {
                    Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                    Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                    SubjectKeyIdentifier(hash: Certificate.PublicKey(caKey.publicKey))
                },
                issuerPrivateKey: Certificate.PrivateKey(caKey))
            try write(caKey.pemRepresentation, to: caKeyPath, mode: 0o600)
            try write(try caCertificate.serializeAsPEM().pemString, to: files.caCertificatePath, mode: 0o644)
        }

        let serverKey = P256.Signing.PrivateKey()
        let serverName = try DistinguishedName {
            OrganizationName("Herald")
            CommonName("localhost")
        }
        let serverCertificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(),
            publicKey: Certificate.PublicKey(serverKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(825 * 86400),
            issuer: caCertificate.subject, subject: serverName, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([
                    .dnsName("localhost"),
                    .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                ])
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey))
        try write(serverKey.pemRepresentation, to: files.serverKeyPath, mode: 0o600)
        try write(
            try serverCertificate.serializeAsPEM().pemString + "\n" + caCertificate.serializeAsPEM().pemString + "\n",
            to: files.serverCertificatePath, mode: 0o644)
        return files
    }

    private static func write(_ text: String, to path: String, mode: Int) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: mode]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
    }
}
