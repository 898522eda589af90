import Crypto
import Foundation

/// An application server's proof of identity on a push request (RFC 8292), read from its
/// `Authorization` header: `vapid t=<JWT>, k=<public key>`, or the older draft form
/// `WebPush <JWT>` with the key in `Crypto-Key: p256ecdsa=<public key>`.
public struct VAPIDAuthorization: Sendable {
    public let token: ES256JWT
    /// The application server's public key: a 65-byte uncompressed P-256 point.
    public let publicKey: [UInt8]
    let signingKey: P256.Signing.PublicKey

    /// Why a push was refused for its VAPID header; ``status`` is what the push service answers.
    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        case missing
        case malformed(String)
        case badSignature
        case expired
        case tooFarAhead
        case wrongAudience(String)
        case noSubject
        /// The subscription was made with another application server key.
        case wrongKey

        /// 401 asks the sender to authenticate (again); 403 says this key may not push here.
        public var status: Int { self == .wrongKey ? 403 : 401 }

        public var description: String {
            switch self {
            case .missing: "this subscription was made with an application server key: send Authorization: vapid t=<JWT>, k=<key> (RFC 8292)"
            case .malformed(let why): "the VAPID authorization is malformed: \(why)"
            case .badSignature: "the VAPID token's signature does not verify with its k"
            case .expired: "the VAPID token has expired (exp is not in the future)"
            case .tooFarAhead: "the VAPID token's exp is more than 24 hours ahead"
            case .wrongAudience(let origin): "the VAPID token's aud must be this push service's origin, \(origin)"
            case .noSubject: "the VAPID token has no sub (a mailto: or https: contact)"
            case .wrongKey: "the VAPID key is not the application server key this subscription was made with"
            }
        }
    }

    /// The most an `Authorization` or `Crypto-Key` header may be before it is refused unread.
    public static let maximumHeaderBytes = 8_192

    /// Reads the header(s); throws ``Failure/missing`` when there is no VAPID authorization.
    public init(authorization: String?, cryptoKey: String?) throws(Failure) {
        guard let authorization, !authorization.isEmpty else { throw .missing }
        guard authorization.utf8.count <= Self.maximumHeaderBytes, (cryptoKey?.utf8.count ?? 0) <= Self.maximumHeaderBytes else {
            throw .malformed("a header longer than \(Self.maximumHeaderBytes) bytes")
        }
        let (scheme, rest) = Self.split(authorization)
        var tokenText: Substring?, keyText: Substring?
        switch scheme.lowercased() {
        case "vapid":
            for parameter in rest.split(separator: ",") {
                let (name, value) = Self.parameter(parameter)
                switch name.lowercased() {
                case "t": tokenText = value
                case "k": keyText = value
                default: continue
                }
            }
        case "webpush":
            tokenText = rest.trimmingCharacters(in: .whitespaces)[...]
            for entry in (cryptoKey ?? "").split(whereSeparator: { $0 == ";" || $0 == "," }) {
                let (name, value) = Self.parameter(entry)
                if name.lowercased() == "p256ecdsa" { keyText = value }
            }
        default:
            throw .malformed("the scheme is \"\(scheme.prefix(16))\", not vapid")
        }
        guard let tokenText, !tokenText.isEmpty else { throw .malformed("no token (t=)") }
        guard let keyText, !keyText.isEmpty else { throw .malformed("no public key (k=)") }
        guard let key = Base64URL.decode(keyText), key.count == 65, key.first == 0x04,
              let signingKey = try? P256.Signing.PublicKey(x963Representation: key) else {
            throw .malformed("k is not a base64url uncompressed P-256 public key")
        }
        do { token = try ES256JWT(parsing: tokenText) } catch {
            switch error {
            case .malformed(let why): throw .malformed(why)
            case .unsupportedAlgorithm(let alg): throw .malformed("alg \(alg) (VAPID tokens are ES256)")
            }
        }
        self.publicKey = key
        self.signingKey = signingKey
    }

    /// Checks the token for a push to a service whose origin is `audience`
    /// (`https://host[:port]`), at `nowSeconds`, and, when the subscription was made with an
    /// application server key, that this is it. Returns the `sub` contact.
    @discardableResult
    public func verify(audience: String, nowSeconds: Int64, subscriptionKey: [UInt8]?) throws(Failure) -> String {
        if let subscriptionKey, subscriptionKey != publicKey { throw .wrongKey }
        guard token.isSigned(by: signingKey) else { throw .badSignature }
        guard let aud = token.claims["aud"]?.stringValue else { throw .malformed("no aud claim") }
        guard Self.sameOrigin(aud, audience) else { throw .wrongAudience(audience) }
        guard let exp = token.claims["exp"].flatMap(ES256JWT.seconds) else { throw .malformed("no numeric exp claim") }
        guard exp > nowSeconds else { throw .expired }
        guard exp <= nowSeconds + 86_400 else { throw .tooFarAhead }
        guard let sub = token.claims["sub"]?.stringValue, !sub.isEmpty else { throw .noSubject }
        return sub
    }

    /// Origins compare without a trailing slash and with the scheme and host in any case.
    static func sameOrigin(_ a: String, _ b: String) -> Bool {
        func normal(_ s: String) -> String { (s.hasSuffix("/") ? String(s.dropLast()) : s).lowercased() }
        return normal(a) == normal(b)
    }

    /// `scheme rest` at the first space.
    private static func split(_ header: String) -> (Substring, Substring) {
        let trimmed = header.drop { $0 == " " }
        guard let space = trimmed.firstIndex(of: " ") else { return (trimmed, "") }
        return (trimmed[..<space], trimmed[trimmed.index(after: space)...])
    }

    /// `name=value` with spaces around either, and the value unquoted.
    private static func parameter(_ text: Substring) -> (Substring, Substring) {
        guard let equals = text.firstIndex(of: "=") else { return (text.trimmingCharacters(in: .whitespaces)[...], "") }
        let name = text[..<equals].trimmingCharacters(in: .whitespaces)
        var value = text[text.index(after: equals)...].trimmingCharacters(in: .whitespaces)[...]
        if value.count >= 2, value.first == "\"", value.last == "\"" { value = value.dropFirst().dropLast() }
        return (name[...], value)
    }
}

/// An application server's VAPID key: signs the `Authorization` of its pushes.
public struct VAPIDSigner: Sendable {
    public let privateKey: P256.Signing.PrivateKey
    /// The `sub` claim: a `mailto:` or `https:` contact for the push service's operator.
    public let subject: String

    public init(privateKey: P256.Signing.PrivateKey, subject: String) {
        self.privateKey = privateKey
        self.subject = subject
    }

    /// The application server key a page passes to `pushManager.subscribe` (base64url, 65 bytes).
    public var publicKeyText: String { Base64URL.encode(privateKey.publicKey.x963Representation) }

    /// `vapid t=…, k=…` for a push to an endpoint on `audience` (its origin), valid until
    /// `expiresAt` (seconds since 1970; at most 24 hours ahead).
    public func authorization(audience: String, expiresAt: Int64) throws -> String {
        let claims = JSONValue.object(["aud": .string(audience), "exp": .int(expiresAt), "sub": .string(subject)]).compactBytes
        let token = try ES256JWT.sign(header: #"{"typ":"JWT","alg":"ES256"}"#, claims: String(decoding: claims, as: UTF8.self), with: privateKey)
        return "vapid t=\(token), k=\(publicKeyText)"
    }

    /// The origin (`scheme://host[:port]`) of an endpoint URL, the `aud` of pushes to it.
    public static func origin(of endpoint: String) -> String? {
        guard let url = URLComponents(string: endpoint), let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else { return nil }
        let defaultPort = scheme == "https" ? 443 : scheme == "http" ? 80 : nil
        let shownHost = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        if let port = url.port, port != defaultPort { return "\(scheme)://\(shownHost):\(port)" }
        return "\(scheme)://\(shownHost)"
    }
}
