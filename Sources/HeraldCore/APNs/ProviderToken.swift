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
/// Parsing is lenient where real clients differ and strict everywhere else:
/// - `iat` may be an integer, a float or a numeric string;
/// - extra header fields (`typ`) and claims (`kid`, …) are ignored;
/// - the signature may be the 64-byte R‖S form or DER (what `openssl dgst -sign` writes);
/// - `alg` must be `ES256`; `kid` and `iss` must be strings.
public struct ProviderToken: Sendable {
    public let claims: ProviderTokenClaims
    let signingInput: [UInt8]
    let signature: P256.Signing.ECDSASignature

    /// Why a token could not be parsed or verified; every case answers `InvalidProviderToken`.
    public enum Failure: Error, Hashable, Sendable {
        case malformed(String)
        case unsupportedAlgorithm(String)
        case badSignature
    }

    /// Parses the text after `bearer `.
    public init(parsing text: some StringProtocol) throws(Failure) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("a JWT has three dot-separated parts") }
        guard let headerBytes = Base64URL.decode(Substring(parts[0])),
              let claimBytes = Base64URL.decode(Substring(parts[1])),
              let signatureBytes = Base64URL.decode(Substring(parts[2]))
        else { throw .malformed("a part is not base64url") }
        let header: [String: JSONValue], claims: [String: JSONValue]
        do { header = try JSONReader.parseObject(headerBytes, limits: Self.partLimits) } catch {
            throw .malformed("the header is not a JSON object (\(error))")
        }
        guard let alg = header["alg"]?.stringValue, let kid = header["kid"]?.stringValue else {
            throw .malformed("the header is not a JSON object with string fields alg and kid")
        }
        guard alg == "ES256" else { throw .unsupportedAlgorithm(String(alg.prefix(32))) }
        guard !kid.isEmpty else { throw .malformed("empty kid") }
        guard kid.utf8.count <= Self.maximumKeyIDBytes else { throw .malformed("kid longer than \(Self.maximumKeyIDBytes) bytes") }
        do { claims = try JSONReader.parseObject(claimBytes, limits: Self.partLimits) } catch {
            throw .malformed("the claims are not a JSON object (\(error))")
        }
        guard let iss = claims["iss"]?.stringValue, let iat = claims["iat"].flatMap(Self.seconds) else {
            throw .malformed("the claims are not a JSON object with a string iss and a numeric iat")
        }
        guard !iss.isEmpty else { throw .malformed("empty iss") }

        let signature: P256.Signing.ECDSASignature
        if signatureBytes.count == 64, let raw = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes) {
            signature = raw
        } else if let der = try? P256.Signing.ECDSASignature(derRepresentation: signatureBytes) {
            signature = der
        } else {
            throw .malformed("the signature is neither raw R||S nor DER")
        }
        self.claims = ProviderTokenClaims(keyID: kid, teamID: iss, issuedAt: iat)
        self.signingInput = Array("\(parts[0]).\(parts[1])".utf8)
        self.signature = signature
    }

    /// Whether `key` signed this token.
    public func isSigned(by key: P256.Signing.PublicKey) -> Bool {
        key.isValidSignature(signature, for: SHA256.hash(data: signingInput))
    }

    /// A JWT's header or claims may not exceed 4 KiB or nest.
    static let partLimits = JSONLimits(maximumBytes: 4_096, maximumDepth: 2)
    /// Apple's key ids are 10 characters; anything past 64 bytes is not one.
    public static let maximumKeyIDBytes = 64

    /// `iat` as an integer, a float or a numeric string (within ±10¹⁵ s); booleans and anything
    /// else are refused.
    static func seconds(_ value: JSONValue) -> Int64? {
        let number: Double
        switch value {
        case .int(let i): return (-999_999_999_999_999...999_999_999_999_999).contains(i) ? i : nil
        case .double(let d): number = d
        case .string(let s):
            guard s.utf8.count <= 64, let d = Double(s.trimmingCharacters(in: .whitespaces)) else { return nil }
            number = d
        default: return nil
        }
        guard number.isFinite, abs(number) < 1e15 else { return nil }
        return Int64(number.rounded(.down))
    }
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
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"\#(keyID)"}"#.utf8))
        let claims = Base64URL.encode(Array(#"{"iss":"\#(teamID)","iat":\#(issuedAt)}"#.utf8))
        let input = "\(header).\(claims)"
        let signature = try privateKey.signature(for: SHA256.hash(data: Array(input.utf8)))
        return "\(input).\(Base64URL.encode(signature.rawRepresentation))"
    }
}
