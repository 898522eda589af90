import Crypto
import Foundation

/// Hand-built JWTs, for the shapes real clients send.
enum JWTFixtures {
    static func b64(_ bytes: some Sequence<UInt8>) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static func token(header: String, claims: String, signature: [UInt8]) -> String {
        "\(b64(Array(header.utf8))).\(b64(Array(claims.utf8))).\(b64(signature))"
    }

    static func signed(header: String, claims: String, key: P256.Signing.PrivateKey, der: Bool) throws -> String {
        let input = "\(b64(Array(header.utf8))).\(b64(Array(claims.utf8)))"
        let signature = try key.signature(for: SHA256.hash(data: Array(input.utf8)))
        return input + "." + b64(der ? Array(signature.derRepresentation) : Array(signature.rawRepresentation))
    }
}
