import Foundation
import NIOSSL
import X509

extension GatewayConfiguration.TLSFiles {
    /// How long before its end a server certificate is warned about at start and at SIGHUP.
    public static let expiryWarning: Duration = .seconds(14 * 86_400)

    /// Reads the certificate chain and the key; every refusal names its file, and a key that is
    /// not the first certificate's says so (rather than OpenSSL's bare "failed to load the
    /// private key").
    func load() throws -> (certificates: [NIOSSLCertificate], key: NIOSSLPrivateKey) {
        let certificates = try Self.certificates(certificateChainPath, what: "TLS certificate (--tls-cert)")
        let key: NIOSSLPrivateKey
        do { key = try NIOSSLPrivateKey(file: privateKeyPath, format: .pem) } catch {
            throw GatewayConfigurationError("the TLS key (--tls-key) \(privateKeyPath) cannot be used: \(Self.reason(error, path: privateKeyPath)) (a PEM private key is expected)")
        }
        if let leaf = try? Certificate(derEncoded: certificates[0].toDERBytes()),
           let pem = try? String(contentsOfFile: privateKeyPath, encoding: .utf8),
           let parsed = try? Certificate.PrivateKey(pemEncoded: pem), parsed.publicKey != leaf.publicKey {
            throw GatewayConfigurationError("the TLS key (--tls-key) \(privateKeyPath) is not the key of the certificate in \(certificateChainPath) (its public key differs): give the key the certificate was issued for")
        }
        return (certificates, key)
    }

    /// The PEM certificates of `path`, at least one; `what` names the file's role in errors.
    static func certificates(_ path: String, what: String) throws -> [NIOSSLCertificate] {
        let certificates: [NIOSSLCertificate]
        do { certificates = try NIOSSLCertificate.fromPEMFile(path) } catch {
            throw GatewayConfigurationError("the \(what) \(path) cannot be used: \(reason(error, path: path)) (PEM certificates are expected)")
        }
        guard !certificates.isEmpty else { throw GatewayConfigurationError("the \(what) \(path) holds no PEM certificate") }
        return certificates
    }

    /// Why a file could not be loaded: the system's words when it cannot be read, else what
    /// BoringSSL made of its contents.
    private static func reason(_ error: any Error, path: String) -> String {
        if access(path, R_OK) != 0 { return String(cString: strerror(errno)) }
        return "\(error)"
    }

    /// Whether both files can serve: readable, PEM, the key the certificate's (the gateway's
    /// start, SIGHUP and `herald doctor` say the same); throws naming what is wrong.
    public func check() throws { _ = try load() }

    /// Where the server certificate stands at an instant.
    public enum Validity: Sendable, Equatable {
        case valid(until: Date)
        /// Valid, but ends within ``expiryWarning``.
        case endsSoon(at: Date)
        case expired(at: Date)
        case notYetValid(from: Date)
    }

    /// The first certificate of the chain file; nil when it cannot be read (``check()`` says why).
    func leafCertificate() -> Certificate? {
        guard let first = try? NIOSSLCertificate.fromPEMFile(certificateChainPath).first else { return nil }
        return try? Certificate(derEncoded: first.toDERBytes())
    }

    /// The first certificate's validity at `nowMilliseconds`; nil when it cannot be read
    /// (``check()`` says why).
    public func validity(nowMilliseconds: Int64) -> Validity? {
        guard let leaf = leafCertificate() else { return nil }
        let now = Date(timeIntervalSince1970: Double(nowMilliseconds) / 1000)
        if leaf.notValidAfter <= now { return .expired(at: leaf.notValidAfter) }
        if leaf.notValidBefore > now { return .notYetValid(from: leaf.notValidBefore) }
        if leaf.notValidAfter.timeIntervalSince(now) <= Double(Self.expiryWarning.components.seconds) { return .endsSoon(at: leaf.notValidAfter) }
        return .valid(until: leaf.notValidAfter)
    }

    /// A warning when the server certificate has expired, is not valid yet, or ends within
    /// ``expiryWarning`` of `nowMilliseconds`; nil when it is fine (or cannot be read: loading
    /// it reports that).
    public func expiryWarning(nowMilliseconds: Int64) -> String? {
        let stamp = { (date: Date) in ISO8601DateFormatter().string(from: date) }
        switch validity(nowMilliseconds: nowMilliseconds) {
        case .expired(let end)?:
            return "the TLS certificate \(certificateChainPath) expired at \(stamp(end)): clients will refuse every connection; renew it and send SIGHUP"
        case .notYetValid(let start)?:
            return "the TLS certificate \(certificateChainPath) is not valid before \(stamp(start)): clients will refuse it until then"
        case .endsSoon(let end)?:
            let left = end.timeIntervalSince1970 - Double(nowMilliseconds) / 1000
            return "the TLS certificate \(certificateChainPath) expires at \(stamp(end)), in \(Int(left / 86_400)) days \(Int(left.truncatingRemainder(dividingBy: 86_400) / 3_600)) hours: renew it and send SIGHUP"
        case .valid?, nil:
            return nil
        }
    }
}
