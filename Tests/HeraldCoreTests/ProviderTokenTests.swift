import Crypto
import Foundation
import HeraldCore
import Testing

@Suite("ES256 provider tokens and the connection's token rules")
struct ProviderTokenTests {
    let key = P256.Signing.PrivateKey()
    let now: Int64 = 1_795_262_400

    func b64(_ s: String) -> String { b64(Array(s.utf8)) }
    func b64(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }
    func signed(_ header: String, _ claims: String, der: Bool = false, with signer: P256.Signing.PrivateKey? = nil) throws -> String {
        let input = "\(b64(header)).\(b64(claims))"
        let sig = try (signer ?? key).signature(for: SHA256.hash(data: Array(input.utf8)))
        return input + "." + b64(der ? Array(sig.derRepresentation) : Array(sig.rawRepresentation))
    }

    @Test("what real clients send is accepted")
    func lenient() throws {
        let cases = [
            try signed(#"{"alg":"ES256","kid":"ABCDEFGHIJ"}"#, #"{"iss":"TEAM000001","iat":\#(now)}"#),
            try signed(#"{"alg":"ES256","kid":"ABCDEFGHIJ","typ":"JWT"}"#, #"{"iss":"TEAM000001","iat":"\#(now)","kid":"ABCDEFGHIJ"}"#),
            try signed(#"{"alg":"ES256","kid":"ABCDEFGHIJ"}"#, #"{"iss":"TEAM000001","iat":\#(now).9}"#),
            try signed(#"{"alg":"ES256","kid":"ABCDEFGHIJ"}"#, #"{"iss":"TEAM000001","iat":\#(now)}"#, der: true),
        ]
        for text in cases {
            let token = try ProviderToken(parsing: text)
            #expect(token.claims == ProviderTokenClaims(keyID: "ABCDEFGHIJ", teamID: "TEAM000001", issuedAt: now))
            #expect(token.isSigned(by: key.publicKey))
        }
        let signer = ProviderTokenSigner(keyID: "ABCDEFGHIJ", teamID: "TEAM000001", privateKey: key)
        #expect(try ProviderToken(parsing: signer.token(issuedAt: now)).isSigned(by: key.publicKey))
    }

    @Test("everything else is refused")
    func strict() throws {
        #expect(throws: ProviderToken.Failure.self) { try ProviderToken(parsing: "x.y") }
        #expect(throws: ProviderToken.Failure.unsupportedAlgorithm("HS256")) {
            try ProviderToken(parsing: "\(b64(#"{"alg":"HS256","kid":"K"}"#)).\(b64(#"{"iss":"T","iat":1}"#)).\(b64("sig"))")
        }
        #expect(throws: ProviderToken.Failure.self) {
            try ProviderToken(parsing: try signed(#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":true}"#))
        }
        #expect(throws: ProviderToken.Failure.self) {
            try ProviderToken(parsing: try signed(#"{"alg":"ES256"}"#, #"{"iss":"T","iat":1}"#))
        }
        let other = try ProviderToken(parsing: try signed(#"{"alg":"ES256","kid":"K"}"#, #"{"iss":"T","iat":1}"#, with: .init()))
        #expect(!other.isSigned(by: key.publicKey))
    }

    @Test("connection rules: cache, age, refresh rate, binding, environment")
    func connectionRules() throws {
        let team = "TEAM000001"
        let providerKey = ProviderKey(keyID: "KEY0000001", teamID: team, publicKey: key.publicKey)
        let siblingKey = P256.Signing.PrivateKey()
        let sibling = ProviderKey(keyID: "KEY0000002", teamID: team, publicKey: siblingKey.publicKey)
        let sandboxKey = P256.Signing.PrivateKey()
        let sandbox = ProviderKey(keyID: "KEY0000003", teamID: team, publicKey: sandboxKey.publicKey, environment: .development)
        let keys = [providerKey.keyID: providerKey, sibling.keyID: sibling, sandbox.keyID: sandbox]
        func lookup(_ id: String) -> APNsConnectionAuthorization.KeyLookup { keys[id].map { .found($0) } ?? .absent }
        func bearer(_ k: P256.Signing.PrivateKey, _ id: String, iat: Int64) throws -> String {
            "bearer " + (try ProviderTokenSigner(keyID: id, teamID: team, privateKey: k).token(issuedAt: iat))
        }
        func reason(_ d: APNsConnectionAuthorization.Decision) -> APNsReason? {
            if case .rejected(let r) = d { return r.reason }
            return nil
        }

        var auth = APNsConnectionAuthorization(environment: .production)
        #expect(reason(auth.authorize(header: nil, nowSeconds: now, key: lookup)) == .missingProviderToken)
        #expect(reason(auth.authorize(header: "basic abc", nowSeconds: now, key: lookup)) == .missingProviderToken)
        #expect(reason(auth.authorize(header: try bearer(sandboxKey, sandbox.keyID, iat: now), nowSeconds: now, key: lookup)) == .badEnvironmentKeyIdInToken)
        let first = try bearer(key, providerKey.keyID, iat: now)
        guard case .authorized(_, isFirst: true) = auth.authorize(header: first, nowSeconds: now, key: lookup) else {
            Issue.record("the first token is not accepted"); return
        }
        guard case .authorized(_, isFirst: false) = auth.authorize(header: first, nowSeconds: now + 3600, key: lookup) else {
            Issue.record("the cached token is refused"); return
        }
        // The cached token still needs its key: not at hand, it is looked up; revoked (absent), refused.
        guard case .needsKey(providerKey.keyID) = auth.authorize(header: first, nowSeconds: now + 3600, key: { _ in .unknown }) else {
            Issue.record("the cached token's key is not looked up when it is not at hand"); return
        }
        #expect(reason(auth.authorize(header: first, nowSeconds: now + 3600, key: { _ in .absent })) == .invalidProviderToken)
        #expect(reason(auth.authorize(header: first, nowSeconds: now + 3601, key: lookup)) == .expiredProviderToken)
        #expect(reason(auth.authorize(header: try bearer(key, providerKey.keyID, iat: now + 60), nowSeconds: now + 600, key: lookup)) == .tooManyProviderTokenUpdates)
        #expect(reason(auth.authorize(header: try bearer(siblingKey, sibling.keyID, iat: now + 1300), nowSeconds: now + 1300, key: lookup)) == .unrelatedKeyIdInToken)
        guard case .authorized = auth.authorize(header: try bearer(key, providerKey.keyID, iat: now + 1300), nowSeconds: now + 1300, key: lookup) else {
            Issue.record("a refresh after 20 minutes is refused"); return
        }
        guard case .needsKey("UNKNOWN001") = auth.authorize(
            header: "bearer " + (try ProviderTokenSigner(keyID: "UNKNOWN001", teamID: team, privateKey: key).token(issuedAt: now)),
            nowSeconds: now, key: { _ in .unknown })
        else { Issue.record("an unknown key is not looked up"); return }
    }

    @Test("an InvalidProviderToken says which of the key id, team or key to check (for the operator; the answer is the reason alone)")
    func invalidTokenDetails() throws {
        let providerKey = ProviderKey(keyID: "KEY0000001", teamID: "TEAM000001", publicKey: key.publicKey)
        func detail(keyID: String, team: String, signer: P256.Signing.PrivateKey) throws -> (APNsRejection?) {
            var auth = APNsConnectionAuthorization(environment: .production)
            let header = "bearer " + (try ProviderTokenSigner(keyID: keyID, teamID: team, privateKey: signer).token(issuedAt: now))
            if case .rejected(let r) = auth.authorize(header: header, nowSeconds: now, key: { $0 == providerKey.keyID ? .found(providerKey) : .absent }) { return r }
            return nil
        }
        let unknown = try detail(keyID: "KEY9999999", team: "TEAM000001", signer: key)
        #expect(unknown?.reason == .invalidProviderToken && unknown?.detail?.contains("no key KEY9999999 is registered") == true)
        let team = try detail(keyID: "KEY0000001", team: "TEAM000002", signer: key)
        #expect(team?.detail?.contains("belongs to team TEAM000001, the token names team TEAM000002") == true)
        let wrongKey = try detail(keyID: "KEY0000001", team: "TEAM000001", signer: P256.Signing.PrivateKey())
        #expect(wrongKey?.detail?.contains("the signature does not verify with key KEY0000001") == true)
        #expect(wrongKey?.jsonBody == #"{"reason":"InvalidProviderToken"}"#)
        #expect(wrongKey == APNsRejection(.invalidProviderToken))
    }
}
