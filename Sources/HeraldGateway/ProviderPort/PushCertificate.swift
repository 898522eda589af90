import Crypto
import HeraldCore
import SwiftASN1
import X509

/// What a push client certificate says, read the way APNs reads Apple's (reference §3,
/// "Certificate auth"): the app (`UID=<bundle id>` in the subject), the team (`OU=<team id>`),
/// the topics it may push to (extension 1.2.840.113635.100.6.3.6: the bundle id and its `.voip`
/// and `.complication` variants), and the environments it works in (extensions …6.3.1 for
/// development and …6.3.2 for production; a certificate with neither works in both, as the
/// "Apple Push Services" certificates do).
///
/// A certificate authenticates only while its credential is registered and not revoked: the
/// gateway looks it up like a provider key, by ``credentialID`` (derived from the certificate's
/// public key), so `herald keys revoke` stops it within seconds on every node.
public struct PushCertificate: Sendable {
    /// `cert-` and 16 hex digits of the SHA-256 of the certificate's public key.
    public var credentialID: String
    public var teamID: String
    /// The app: the certificate's `UID`.
    public var bundleID: String
    /// The topics the certificate lists, the bundle id first.
    public var topics: [String]
    /// Empty: both environments.
    public var environments: Set<PushEnvironment>
    /// The certificate's public key, compared with the registered credential's.
    public var publicKey: P256.Signing.PublicKey

    /// The variants of a bundle id a certificate may add to its topics.
    public enum Variant: String, Sendable, CaseIterable {
        case voip, complication
        var topicSuffix: String { "." + rawValue }
    }

    /// Whether the certificate works in `environment`.
    public func works(in environment: PushEnvironment) -> Bool {
        environments.isEmpty || environments.contains(environment)
    }

    /// The topic a request without `apns-topic` goes to: the bundle id when the certificate lists
    /// one topic, `nil` when it lists several (then the request is `MissingTopic`).
    public var defaultTopic: String? { topics.count == 1 ? topics[0] : nil }

    /// Whether a push of `type` to `topic` is covered: the topics the certificate lists, and the
    /// app's topics of the push types that need no certificate extension of their own (Live
    /// Activities, widgets, controls, File Provider, Push to Talk). `location` pushes take token
    /// authentication only (reference §1), and `voip`/`complication` need their listed variant.
    public func covers(topic: String, pushType: PushType) -> Bool {
        if pushType == .location || pushType == .mdm { return false }
        if topics.contains(topic) { return true }
        switch pushType {
        case .liveactivity, .widgets, .controls, .fileprovider, .pushtotalk:
            return topic == bundleID + pushType.topicSuffix
        default:
            return false
        }
    }

    // MARK: reading

    /// The subject attribute that names the app (Apple's: `UID=<bundle id>`).
    static let userIDAttribute: ASN1ObjectIdentifier = [0, 9, 2342, 19_200_300, 100, 1, 1]
    /// The extension listing a certificate's topics.
    static let topicsExtension: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 3, 6]
    /// The extensions marking a certificate for development (sandbox) and production.
    static let developmentExtension: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 3, 1]
    static let productionExtension: ASN1ObjectIdentifier = [1, 2, 840, 113_635, 100, 6, 3, 2]

    /// Why a certificate cannot be used for pushes, in words.
    public struct Unusable: Error, CustomStringConvertible {
        public var description: String
    }

    /// Reads a client certificate (DER). Throws ``Unusable`` when it names no app or team, lists
    /// topics that cannot be read, or has a key other than P-256.
    public init(derEncoded der: [UInt8]) throws {
        let certificate: Certificate
        do { certificate = try Certificate(derEncoded: der) } catch { throw Unusable(description: "not an X.509 certificate") }
        try self.init(certificate)
    }

    init(_ certificate: Certificate) throws {
        var bundleID: String?
        var teamID: String?
        for rdn in certificate.subject {
            for attribute in rdn {
                if attribute.type == Self.userIDAttribute { bundleID = String(attribute.value) }
                if attribute.type == .RDNAttributeType.organizationalUnitName { teamID = String(attribute.value) }
            }
        }
        guard let bundleID, !bundleID.isEmpty else { throw Unusable(description: "the certificate names no app (UID=<bundle id>)") }
        guard let teamID, TeamID(teamID) != nil else { throw Unusable(description: "the certificate names no team (OU=<team id>)") }
        guard let key = P256.Signing.PublicKey(certificate.publicKey) else {
            throw Unusable(description: "the certificate's key is not P-256")
        }
        var topics = [bundleID]
        var environments = Set<PushEnvironment>()
        for e in certificate.extensions {
            switch e.oid {
            case Self.topicsExtension:
                for topic in try Self.readTopics(e.value) where !topics.contains(topic) { topics.append(topic) }
            case Self.developmentExtension: environments.insert(.development)
            case Self.productionExtension: environments.insert(.production)
            default: break
            }
        }
        self.bundleID = bundleID
        self.teamID = teamID
        self.topics = topics
        self.environments = environments
        self.publicKey = key
        self.credentialID = Self.credentialID(of: key)
    }

    /// The id under which a certificate with this public key is registered.
    public static func credentialID(of key: P256.Signing.PublicKey) -> String {
        let digest = SHA256.hash(data: key.derRepresentation)
        return ProviderKey.certificateCredentialPrefix + digest.prefix(8).map { byte in
            let hex = Array("0123456789abcdef".utf8)
            return String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]], as: UTF8.self)
        }.joined()
    }

    /// The topics extension: a SEQUENCE of a topic (UTF8String) followed by a SEQUENCE naming its
    /// kind, for each topic; only the topics are read.
    static func readTopics(_ value: ArraySlice<UInt8>) throws -> [String] {
        guard value.count <= 16_384 else { throw Unusable(description: "the topics extension is too large") }
        do {
            let root = try DER.parse(value)
            guard root.identifier == .sequence, case .constructed(let children) = root.content else {
                throw Unusable(description: "the topics extension is not a SEQUENCE")
            }
            var topics: [String] = []
            for child in children where child.identifier == .utf8String {
                let topic = String(try ASN1UTF8String(derEncoded: child))
                guard !topic.isEmpty, topic.utf8.count <= APNsRequestValidation.maximumTopicByteCount else {
                    throw Unusable(description: "the topics extension lists an empty or overlong topic")
                }
                topics.append(topic)
                guard topics.count <= 64 else { throw Unusable(description: "the topics extension lists more than 64 topics") }
            }
            return topics
        } catch let error as Unusable {
            throw error
        } catch {
            throw Unusable(description: "the topics extension cannot be read: \(error)")
        }
    }

    /// Encodes the topics extension's value.
    static func topicsExtensionValue(bundleID: String, variants: [Variant]) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.appendConstructedNode(identifier: .sequence) { sequence in
            try sequence.serialize(ASN1UTF8String(bundleID))
            try sequence.appendConstructedNode(identifier: .sequence) { try $0.serialize(ASN1UTF8String("app")) }
            for variant in variants {
                try sequence.serialize(ASN1UTF8String(bundleID + variant.topicSuffix))
                try sequence.appendConstructedNode(identifier: .sequence) { try $0.serialize(ASN1UTF8String(variant.rawValue)) }
            }
        }
        return serializer.serializedBytes
    }
}
