import Crypto

/// A compact JWS signed with ES256, split and read but not yet verified: what APNs provider
/// tokens and Web Push VAPID tokens both are. The one reader of JWTs in Herald.
///
/// - three base64url parts (padding tolerated);
/// - the header and the claims are JSON objects of at most 4 KiB, without nesting
///   (``partLimits``), read by ``JSONReader``;
/// - `alg` must be `ES256`;
/// - the signature may be the 64-byte R‖S form of JWS or DER (what `openssl dgst -sign` writes).
public struct ES256JWT: Sendable {
    public let header: [String: JSONValue]
    public let claims: [String: JSONValue]
    /// `header.claims`, the bytes the signature covers.
    let signingInput: [UInt8]
    let signature: P256.Signing.ECDSASignature

    public enum Failure: Error, Hashable, Sendable {
        case malformed(String)
        case unsupportedAlgorithm(String)
    }

    /// A JWT's header or claims may not exceed 4 KiB or nest.
    public static let partLimits = JSONLimits(maximumBytes: 4_096, maximumDepth: 2)

    public init(parsing text: some StringProtocol) throws(Failure) {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("a JWT has three dot-separated parts") }
        guard let headerBytes = Base64URL.decode(Substring(parts[0])),
              let claimBytes = Base64URL.decode(Substring(parts[1])),
              let signatureBytes = Base64URL.decode(Substring(parts[2]))
        else { throw .malformed("a part is not base64url") }
        do { header = try JSONReader.parseObject(headerBytes, limits: Self.partLimits) } catch {
            throw .malformed("the header is not a JSON object (\(error))")
        }
        guard let alg = header["alg"]?.stringValue else { throw .malformed("the header has no string alg") }
        guard alg == "ES256" else { throw .unsupportedAlgorithm(String(alg.prefix(32))) }
        do { claims = try JSONReader.parseObject(claimBytes, limits: Self.partLimits) } catch {
            throw .malformed("the claims are not a JSON object (\(error))")
        }
        if signatureBytes.count == 64, let raw = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes) {
            signature = raw
        } else if let der = try? P256.Signing.ECDSASignature(derRepresentation: signatureBytes) {
            signature = der
        } else {
            throw .malformed("the signature is neither raw R||S nor DER")
        }
        signingInput = Array("\(parts[0]).\(parts[1])".utf8)
    }

    /// Whether `key` signed this token.
    public func isSigned(by key: P256.Signing.PublicKey) -> Bool {
        key.isValidSignature(signature, for: SHA256.hash(data: signingInput))
    }

    /// A signed token: `header.claims.signature`, the signature in JWS's R‖S form. `header` and
    /// `claims` are JSON object texts (the caller's, written as it wants them on the wire).
    public static func sign(header: String, claims: String, with key: P256.Signing.PrivateKey) throws -> String {
        let input = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
        let signature = try key.signature(for: SHA256.hash(data: Array(input.utf8)))
        return input + "." + Base64URL.encode(signature.rawRepresentation)
    }

    /// A numeric date claim (`iat`, `exp`): an integer, a float or a numeric string within
    /// ±10¹⁵ s, in whole seconds (a fraction is dropped); anything else is `nil`.
    public static func seconds(_ value: JSONValue) -> Int64? {
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
