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
           fm.fileExists(atPath: files.serverKeyPath), namesEveryLoopbackName(files.serverCertificatePath) {
            return files
        }
        // A server certificate an earlier Herald made (without ::1) is issued again by the same CA
        // below, so that clients which trust the CA keep working over IPv6 too.
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
                SubjectAlternativeNames(loopbackNames)
            },
            issuerPrivateKey: Certificate.PrivateKey(caKey))
        try write(serverKey.pemRepresentation, to: files.serverKeyPath, mode: 0o600)
        try write(
            try serverCertificate.serializeAsPEM().pemString + "\n" + caCertificate.serializeAsPEM().pemString + "\n",
            to: files.serverCertificatePath, mode: 0o644)
        return files
    }

    /// The names the development server certificate is valid for: `localhost`, `127.0.0.1`, `::1`.
    static let loopbackNames: [GeneralName] = [
        .dnsName("localhost"),
        .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
        .ipAddress(ASN1OctetString(contentBytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])),
    ]

    /// Whether the PEM certificate at `path` (the first of its chain) names every loopback name;
    /// false when it cannot be read.
    private static func namesEveryLoopbackName(_ path: String) -> Bool {
        guard let pem = try? String(contentsOfFile: path, encoding: .utf8),
              let first = try? PEMDocument.parseMultiple(pemString: pem).first,
              let certificate = try? Certificate(derEncoded: first.derBytes),
              let names = try? certificate.extensions.subjectAlternativeNames else { return false }
        return loopbackNames.allSatisfy { names.contains($0) }
    }

    /// The subject attribute that names the app in a push certificate (Apple's: `UID=<bundle id>`).
    public static let userIDAttribute: ASN1ObjectIdentifier = PushCertificate.userIDAttribute

    /// Issues a client certificate for an app, signed by the development CA of `dataDirectory`,
    /// with Apple's subject layout (`UID=<topic>, CN=Apple Push Services: <topic>`): what the
    /// legacy feedback port identifies the app by. Returns the certificate and key in PEM.
    public static func issueClientCertificate(
        topic: String, in dataDirectory: String, clock: any WallClock
    ) throws -> (certificatePEM: String, privateKeyPEM: String) {
        let issued = try issue(
            subject: [
                (userIDAttribute, topic), (.RDNAttributeType.commonName, "Apple Push Services: \(topic)"),
            ],
            extensions: [], in: dataDirectory, clock: clock)
        return (issued.certificatePEM, issued.privateKeyPEM)
    }

    /// A push certificate issued by ``issuePushCertificate(bundleID:teamID:variants:environment:in:clock:)``.
    public struct IssuedPushCertificate: Sendable {
        public var certificate: PushCertificate
        public var certificatePEM: String
        public var privateKeyPEM: String
        /// The certificate and its CA's, in DER, for a PKCS#12 bundle.
        public var certificateDER: [UInt8]
        public var privateKeyDER: [UInt8]
    }

    /// Issues a push certificate for a team's app, as Apple's are laid out: subject
    /// `UID=<bundle id>, CN=Apple Push Services: <bundle id>, OU=<team id>`, the topics extension
    /// listing the bundle id and the `variants`, and the environment extension (none: both).
    public static func issuePushCertificate(
        bundleID: String, teamID: String, variants: [PushCertificate.Variant], environment: PushEnvironment?,
        in dataDirectory: String, clock: any WallClock
    ) throws -> IssuedPushCertificate {
        var extensions = [Certificate.Extension(
            oid: PushCertificate.topicsExtension, critical: false,
            value: ArraySlice(try PushCertificate.topicsExtensionValue(bundleID: bundleID, variants: variants)))]
        // DER NULL: the value Apple's environment extensions carry.
        switch environment {
        case .development?: extensions.append(.init(oid: PushCertificate.developmentExtension, critical: false, value: [0x05, 0x00]))
        case .production?: extensions.append(.init(oid: PushCertificate.productionExtension, critical: false, value: [0x05, 0x00]))
        default:
            extensions.append(.init(oid: PushCertificate.developmentExtension, critical: false, value: [0x05, 0x00]))
            extensions.append(.init(oid: PushCertificate.productionExtension, critical: false, value: [0x05, 0x00]))
        }
        let issued = try issue(
            subject: [
                (userIDAttribute, bundleID), (.RDNAttributeType.commonName, "Apple Push Services: \(bundleID)"),
                (.RDNAttributeType.organizationalUnitName, teamID), (.RDNAttributeType.organizationName, "Herald"),
            ],
            extensions: extensions, in: dataDirectory, clock: clock)
        var der = DER.Serializer()
        try der.serialize(issued.certificate)
        return IssuedPushCertificate(
            certificate: try PushCertificate(issued.certificate), certificatePEM: issued.certificatePEM,
            privateKeyPEM: issued.privateKeyPEM, certificateDER: der.serializedBytes,
            privateKeyDER: Array(issued.privateKey.derRepresentation))
    }

    /// A client certificate signed by the development CA: the subject's attributes in order, and
    /// extensions beyond the client-authentication ones.
    private static func issue(
        subject attributes: [(ASN1ObjectIdentifier, String)], extensions more: [Certificate.Extension],
        in dataDirectory: String, clock: any WallClock
    ) throws -> (certificate: Certificate, privateKey: P256.Signing.PrivateKey, certificatePEM: String, privateKeyPEM: String) {
        let files = try loadOrCreate(in: dataDirectory, clock: clock)
        let caKeyPath = ((files.caCertificatePath as NSString).deletingLastPathComponent as NSString).appendingPathComponent("ca-key.pem")
        let caKey = try P256.Signing.PrivateKey(pemRepresentation: String(contentsOfFile: caKeyPath, encoding: .utf8))
        let caCertificate = try Certificate(pemEncoded: String(contentsOfFile: files.caCertificatePath, encoding: .utf8))
        let now = Date(timeIntervalSince1970: Double(clock.nowMilliseconds()) / 1000)
        let key = P256.Signing.PrivateKey()
        let subject = DistinguishedName(attributes.map { type, value in
            RelativeDistinguishedName(RelativeDistinguishedName.Attribute(type: type, utf8String: value))
        })
        var extensions = try Certificate.Extensions {
            Critical(BasicConstraints.notCertificateAuthority)
            Critical(KeyUsage(digitalSignature: true))
            try ExtendedKeyUsage([.clientAuth])
        }
        for e in more { try extensions.append(e) }
        let certificate = try Certificate(
            version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: Certificate.PublicKey(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600), notValidAfter: now.addingTimeInterval(365 * 86400),
            issuer: caCertificate.subject, subject: subject, signatureAlgorithm: .ecdsaWithSHA256,
            extensions: extensions, issuerPrivateKey: Certificate.PrivateKey(caKey))
        return (certificate, key, try certificate.serializeAsPEM().pemString + "\n", key.pemRepresentation + "\n")
    }

    /// The app a client certificate names: its `UID`, else the part of its CN after
    /// "Apple Push Services: ". `nil` when it names none.
    public static func topic(ofClientCertificate der: [UInt8]) -> String? {
        guard let certificate = try? Certificate(derEncoded: der) else { return nil }
        var commonName: String?
        for rdn in certificate.subject {
            for attribute in rdn {
                if attribute.type == userIDAttribute, let uid = String(attribute.value) { return uid }
                if attribute.type == .RDNAttributeType.commonName { commonName = String(attribute.value) }
            }
        }
        let prefix = "Apple Push Services: "
        if let commonName, commonName.hasPrefix(prefix) { return String(commonName.dropFirst(prefix.count)) }
        return nil
    }

    private static func write(_ text: String, to path: String, mode: Int) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: mode]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
    }
}
