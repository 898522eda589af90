import Crypto
import Foundation

/// What a user agent hands an application server for one Web Push subscription (RFC 8291 §2):
/// its P-256 public key (`p256dh`, the 65-byte uncompressed point) and a 16-byte auth secret.
public struct WebPushSubscriptionKeys: Sendable, Hashable {
    public let p256dh: [UInt8]
    public let auth: [UInt8]

    /// `nil` unless `p256dh` is a point on P-256 in uncompressed form and `auth` is 16 bytes.
    public init?(p256dh: [UInt8], auth: [UInt8]) {
        guard p256dh.count == 65, p256dh.first == 0x04, auth.count == 16,
              (try? P256.KeyAgreement.PublicKey(x963Representation: p256dh)) != nil else { return nil }
        self.p256dh = p256dh
        self.auth = auth
    }

    /// From the base64url texts of a `PushSubscription`'s `keys` (padding tolerated).
    public init?(p256dh: String, auth: String) {
        guard p256dh.utf8.count <= 200, auth.utf8.count <= 64,
              let point = Base64URL.decode(Substring(p256dh)), let secret = Base64URL.decode(Substring(auth)) else { return nil }
        self.init(p256dh: point, auth: secret)
    }
}

/// An application server's public key as a subscription names it (RFC 8292 §3.2, the Push API's
/// `applicationServerKey`): an uncompressed point on P-256, 65 bytes.
public enum ApplicationServerKey {
    public static func isValid(_ bytes: [UInt8]) -> Bool {
        bytes.count == 65 && bytes.first == 0x04 && (try? P256.Signing.PublicKey(x963Representation: bytes)) != nil
    }
}

/// The user agent's half of a subscription: the private key and the auth secret. It never
/// leaves the user agent; only ``subscriptionKeys`` is given out.
public struct WebPushUserAgentKeys: Sendable {
    public let privateKey: P256.KeyAgreement.PrivateKey
    public let auth: [UInt8]

    public init(privateKey: P256.KeyAgreement.PrivateKey, auth: [UInt8]) {
        self.privateKey = privateKey
        self.auth = auth
    }

    /// A fresh key pair and auth secret.
    public static func generate() -> WebPushUserAgentKeys {
        WebPushUserAgentKeys(privateKey: P256.KeyAgreement.PrivateKey(), auth: WebPushEncryption.randomBytes(16))
    }

    public var subscriptionKeys: WebPushSubscriptionKeys {
        WebPushSubscriptionKeys(p256dh: Array(privateKey.publicKey.x963Representation), auth: auth)!
    }
}

/// Message encryption for Web Push (RFC 8291): one `aes128gcm` record (RFC 8188) keyed by ECDH
/// between an ephemeral sender key and the subscription's key, and the subscription's auth
/// secret. Only the user agent can decrypt; a push service passes the body on as it is.
public enum WebPushEncryption {
    /// The most a push message body may be (RFC 8291 §4).
    public static let maximumBody = 4_096
    /// The header of the one record: salt (16), record size (4), key id length (1), the sender's
    /// public key (65).
    public static let headerLength = 86
    /// The most plaintext one message carries: 4096 − header − tag (16) − delimiter (1).
    public static let maximumPlaintext = maximumBody - headerLength - 16 - 1

    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        case tooLong(Int)
        case malformedHeader(String)
        case undecryptable
        case badPadding

        public var description: String {
            switch self {
            case .tooLong(let n): "the message is \(n) bytes; Web Push carries at most \(WebPushEncryption.maximumPlaintext) bytes of plaintext"
            case .malformedHeader(let why): "not an aes128gcm body: \(why)"
            case .undecryptable: "the body does not decrypt with this subscription's keys (wrong keys, or altered on the way)"
            case .badPadding: "the decrypted record does not end as the last record of a message should"
            }
        }
    }

    /// Encrypts `plaintext` to `keys`. `senderKey` and `salt` are fresh for every message; tests
    /// pass RFC 8291 Appendix A's. `padding` zero bytes follow the delimiter (hiding the length).
    public static func encrypt(
        _ plaintext: [UInt8], to keys: WebPushSubscriptionKeys, senderKey: P256.KeyAgreement.PrivateKey = P256.KeyAgreement.PrivateKey(),
        salt: [UInt8]? = nil, padding: Int = 0
    ) throws -> [UInt8] {
        guard plaintext.count + padding <= maximumPlaintext, padding >= 0 else { throw Failure.tooLong(plaintext.count + padding) }
        let salt = salt ?? randomBytes(16)
        guard salt.count == 16 else { throw Failure.malformedHeader("a salt is 16 bytes") }
        let receiver = try P256.KeyAgreement.PublicKey(x963Representation: keys.p256dh)
        let senderPublic = Array(senderKey.publicKey.x963Representation)
        let shared = try senderKey.sharedSecretFromKeyAgreement(with: receiver)
        let (key, nonce) = contentKey(shared: shared, auth: keys.auth, receiverPublic: keys.p256dh, senderPublic: senderPublic, salt: salt)
        let record = plaintext + [0x02] + [UInt8](repeating: 0, count: padding)
        let sealed = try AES.GCM.seal(record, using: key, nonce: AES.GCM.Nonce(data: nonce))
        var body = salt
        body += [0x00, 0x00, 0x10, 0x00]  // record size 4096: one record holds the whole message
        body.append(UInt8(senderPublic.count))
        body += senderPublic
        body += sealed.ciphertext
        body += sealed.tag
        return body
    }

    /// Decrypts a message body with the user agent's keys.
    public static func decrypt(_ body: [UInt8], with keys: WebPushUserAgentKeys) throws(Failure) -> [UInt8] {
        guard body.count <= maximumBody else { throw .malformedHeader("\(body.count) bytes is more than a message may be") }
        guard body.count >= 21 else { throw .malformedHeader("shorter than the record header") }
        let salt = Array(body[0..<16])
        let recordSize = body[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let keyIDLength = Int(body[20])
        guard keyIDLength == 65 else { throw .malformedHeader("the key id is \(keyIDLength) bytes, not a 65-byte P-256 public key") }
        guard body.count >= headerLength + 17 else { throw .malformedHeader("no room for a record after the header") }
        let senderPublic = Array(body[21..<headerLength])
        let ciphertext = body[headerLength...]
        guard recordSize >= 18, ciphertext.count <= recordSize else {
            throw .malformedHeader("record size \(recordSize) does not hold the \(ciphertext.count)-byte record (one record per message)")
        }
        let plain: [UInt8]
        do {
            let sender = try P256.KeyAgreement.PublicKey(x963Representation: senderPublic)
            let shared = try keys.privateKey.sharedSecretFromKeyAgreement(with: sender)
            let receiverPublic = Array(keys.privateKey.publicKey.x963Representation)
            let (key, nonce) = contentKey(shared: shared, auth: keys.auth, receiverPublic: receiverPublic, senderPublic: senderPublic, salt: salt)
            let box = try AES.GCM.SealedBox(nonce: AES.GCM.Nonce(data: nonce), ciphertext: ciphertext.dropLast(16), tag: ciphertext.suffix(16))
            plain = Array(try AES.GCM.open(box, using: key))
        } catch { throw .undecryptable }
        // Padding is zeros after the delimiter; the last record's delimiter is 2.
        guard let end = plain.lastIndex(where: { $0 != 0 }), plain[end] == 0x02 else { throw .badPadding }
        return Array(plain[..<end])
    }

    /// RFC 8291 §3.4 and RFC 8188 §2.2: the content-encryption key and the nonce.
    static func contentKey(shared: SharedSecret, auth: [UInt8], receiverPublic: [UInt8], senderPublic: [UInt8], salt: [UInt8]) -> (SymmetricKey, [UInt8]) {
        let info = Array("WebPush: info".utf8) + [0] + receiverPublic + senderPublic
        let ikm = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: auth, sharedInfo: info, outputByteCount: 32)
        let key = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, salt: salt, info: Array("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonce = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, salt: salt, info: Array("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        return (key, nonce.withUnsafeBytes { Array($0) })
    }

    /// `count` bytes from the system's secure generator (salts, auth secrets, test bodies).
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }
}
