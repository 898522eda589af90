import Crypto
import Foundation

/// A provider key's identity: the 10-character Key ID Apple hands out with a `.p8` file.
public struct KeyID: Hashable, Sendable, CustomStringConvertible {
    public let value: String
    /// `nil` unless the value is 10 ASCII letters or digits.
    public init?(_ value: String) {
        guard value.utf8.count == 10, value.utf8.allSatisfy({ $0 < 128 && (isalnum(Int32($0)) != 0) }) else { return nil }
        self.value = value
    }
    /// A fresh random key id of 10 uppercase letters and digits.
    public static func random() -> KeyID {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return KeyID(String((0..<10).map { _ in alphabet.randomElement()! }))!
    }
    public var description: String { value }
}

/// A team: the 10-character Team ID, the `iss` of provider tokens.
public struct TeamID: Hashable, Sendable, CustomStringConvertible {
    public let value: String
    /// `nil` unless the value is 10 ASCII letters or digits.
    public init?(_ value: String) {
        guard value.utf8.count == 10, value.utf8.allSatisfy({ $0 < 128 && (isalnum(Int32($0)) != 0) }) else { return nil }
        self.value = value
    }
    public var description: String { value }
}

/// The claims Herald reads from a verified provider token.
public struct ProviderTokenClaims: Hashable, Sendable {
    public var keyID: String
    public var teamID: String
    /// `iat`, in whole seconds since 1970 (a fractional `iat` is truncated).
    public var issuedAt: Int64

    public init(keyID: String, teamID: String, issuedAt: Int64) {
        self.keyID = keyID
        self.teamID = teamID
        self.issuedAt = issuedAt
    }
}

/// An ES256 provider token (JWT), parsed but not yet verified.
///
/// Parsing is lenient where real clients differ and strict everywhere else (``ES256JWT`` reads
/// the token itself):
/// - `iat` may be an integer, a float or a numeric string;
/// - extra header fields (`typ`) and claims (`kid`, …) are ignored;
/// - the signature may be the 64-byte R‖S form or DER (what `openssl dgst -sign` writes);
/// - `alg` must be `ES256`; `kid` and `iss` must be strings.
public struct ProviderToken: Sendable {
    public let claims: ProviderTokenClaims
    let jwt: ES256JWT

    /// Why a token could not be parsed or verified; every case answers `InvalidProviderToken`.
    public enum Failure: Error, Hashable, Sendable {
        case malformed(String)
        case unsupportedAlgorithm(String)
        case badSignature
    }

    /// Parses the text after `bearer `.
    public init(parsing text: some StringProtocol) throws(Failure) {
        do { jwt = try ES256JWT(parsing: text) } catch {
            switch error {
            case .malformed(let why): throw .malformed(why)
            case .unsupportedAlgorithm(let alg): throw .unsupportedAlgorithm(alg)
            }
        }
        guard let kid = jwt.header["kid"]?.stringValue else {
            throw .malformed("the header is not a JSON object with string fields alg and kid")
        }
        guard !kid.isEmpty else { throw .malformed("empty kid") }
        guard kid.utf8.count <= Self.maximumKeyIDBytes else { throw .malformed("kid longer than \(Self.maximumKeyIDBytes) bytes") }
        guard let iss = jwt.claims["iss"]?.stringValue, let iat = jwt.claims["iat"].flatMap(ES256JWT.seconds) else {
            throw .malformed("the claims are not a JSON object with a string iss and a numeric iat")
        }
        guard !iss.isEmpty else { throw .malformed("empty iss") }
        self.claims = ProviderTokenClaims(keyID: kid, teamID: iss, issuedAt: iat)
    }

    /// Whether `key` signed this token.
    public func isSigned(by key: P256.Signing.PublicKey) -> Bool { jwt.isSigned(by: key) }

    /// Apple's key ids are 10 characters; anything past 64 bytes is not one.
    public static let maximumKeyIDBytes = 64
}

/// Signs provider tokens with a `.p8` key.
public struct ProviderTokenSigner: Sendable {
    public let keyID: String
    public let teamID: String
    public let privateKey: P256.Signing.PrivateKey

    public init(keyID: String, teamID: String, privateKey: P256.Signing.PrivateKey) {
        self.keyID = keyID
        self.teamID = teamID
        self.privateKey = privateKey
    }

    /// Loads a PEM PKCS#8 private key (the `.p8` format).
    public init(keyID: String, teamID: String, pem: String) throws {
        self.init(keyID: keyID, teamID: teamID, privateKey: try P256.Signing.PrivateKey(pemRepresentation: pem))
    }

    /// A signed token `header.claims.signature` with `iat` = `issuedAt` (seconds since 1970).
    public func token(issuedAt: Int64) throws -> String {
        try ES256JWT.sign(header: #"{"alg":"ES256","kid":"\#(keyID)"}"#, claims: #"{"iss":"\#(teamID)","iat":\#(issuedAt)}"#, with: privateKey)
    }
}
