/// A push message's delivery options, read from an RFC 8030 request's headers (§5.2–5.4), and
/// what they mean in Herald's core.
public struct WebPushOptions: Sendable, Hashable {
    /// Seconds the push service may keep the message for an absent user agent (0: now or never).
    public var ttl: Int64
    public var urgency: Urgency
    /// A newer message with the same topic replaces an undelivered older one.
    public var topic: String?
    /// `Prefer: respond-async`: the sender wants a push receipt.
    public var wantsReceipt: Bool
    /// The body's `Content-Encoding` (`nil` for a message without a body).
    public var encoding: ContentEncoding?
    /// For `aesgcm` only: the `Encryption` and `Crypto-Key` headers the user agent needs, as sent.
    public var legacyHeaders: LegacyHeaders?

    public init(ttl: Int64, urgency: Urgency = .normal, topic: String? = nil, wantsReceipt: Bool = false, encoding: ContentEncoding? = nil,
                legacyHeaders: LegacyHeaders? = nil) {
        (self.ttl, self.urgency, self.topic, self.wantsReceipt, self.encoding, self.legacyHeaders) =
            (ttl, urgency, topic, wantsReceipt, encoding, legacyHeaders)
    }

    /// RFC 8030 §5.3.
    public enum Urgency: String, Sendable, Hashable, CaseIterable {
        case veryLow = "very-low", low, normal, high

        /// Herald's priority. RFC 8030 grades when a user agent may be disturbed: `high` and
        /// `normal` even on battery (10, at once), `low` on power or Wi-Fi (5, when the device's
        /// power rules allow, as APNs priority 5), `very-low` only on both (1, never waking it).
        public var priority: Priority {
            switch self {
            case .high, .normal: .immediate
            case .low: .conservePower
            case .veryLow: .low
            }
        }
    }

    public enum ContentEncoding: String, Sendable, Hashable {
        /// RFC 8291 over RFC 8188: everything the user agent needs is in the body.
        case aes128gcm
        /// The draft scheme older senders still use: the salt and the sender key travel in headers.
        case aesgcm
    }

    public struct LegacyHeaders: Sendable, Hashable {
        public var encryption: String
        public var cryptoKey: String
        public init(encryption: String, cryptoKey: String) { (self.encryption, self.cryptoKey) = (encryption, cryptoKey) }
    }

    /// Why a push request was refused before its body was looked at; always a 400 but for
    /// ``status``.
    public struct Refusal: Error, Hashable, Sendable, CustomStringConvertible {
        public var status: Int
        public var description: String
        init(_ description: String, status: Int = 400) { (self.status, self.description) = (status, description) }
    }

    /// The longest TTL Herald keeps a message: 28 days (longer ones are kept this long; the
    /// answer's `TTL` header says so, as RFC 8030 §5.2 allows).
    public static let maximumTTL: Int64 = 28 * 86_400
    /// Topic: at most 32 characters of the base64url alphabet (RFC 8030 §5.4).
    public static let maximumTopicLength = 32
    /// Any header value longer than this is refused unread.
    public static let maximumHeaderValue = 4_096

    /// Reads the options from a request's headers (`name` lowercase). `bodyLength` is the body's
    /// length as received.
    ///
    /// - `TTL` is required (RFC 8030 §5.2 makes it a MUST for the sender): a request without one
    ///   is refused with 400, so that a sender never believes a message is kept when it is not.
    public init(headers: [(name: String, value: String)], bodyLength: Int) throws(Refusal) {
        // One pass over the headers (this is the Web Push port's hot path): the value of each
        // name read below, and how many times each was given.
        let names = ["ttl", "urgency", "topic", "prefer", "content-encoding", "encryption", "crypto-key"]
        var found = [String?](repeating: nil, count: names.count)
        var counts = [Int](repeating: 0, count: names.count)
        for header in headers {
            guard let index = names.firstIndex(of: header.name) else { continue }
            counts[index] += 1
            if counts[index] == 1 { found[index] = header.value }
        }
        func value(_ name: String) throws(Refusal) -> String? {
            guard let index = names.firstIndex(of: name) else { return nil }
            guard counts[index] <= 1 else { throw Refusal("\(name) is given \(counts[index]) times") }
            guard let value = found[index] else { return nil }
            guard value.utf8.count <= Self.maximumHeaderValue else { throw Refusal("\(name) is longer than \(Self.maximumHeaderValue) bytes", status: 431) }
            return Self.trimmingSpaces(value)
        }
        guard let ttlText = try value("ttl") else { throw Refusal("TTL is required (RFC 8030 §5.2): the seconds this message may wait for the user agent, 0 for now or never") }
        guard !ttlText.isEmpty, ttlText.utf8.count <= 12, ttlText.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let ttl = Int64(ttlText) else {
            throw Refusal("TTL must be a number of seconds, not \"\(ttlText.prefix(32))\"")
        }
        self.ttl = min(ttl, Self.maximumTTL)

        if let urgencyText = try value("urgency") {
            guard let urgency = Urgency(rawValue: urgencyText.lowercased()) else {
                throw Refusal("Urgency must be very-low, low, normal or high, not \"\(urgencyText.prefix(32))\"")
            }
            self.urgency = urgency
        } else {
            urgency = .normal
        }

        if let topic = try value("topic") {
            guard !topic.isEmpty, topic.utf8.count <= Self.maximumTopicLength, topic.utf8.allSatisfy(Self.isBase64URLCharacter) else {
                throw Refusal("Topic must be 1 to 32 characters of the base64url alphabet (RFC 8030 §5.4)")
            }
            self.topic = topic
        } else {
            topic = nil
        }

        wantsReceipt = try value("prefer").map { prefer in
            prefer.split(separator: ",").contains { Self.trimmingSpaces(String($0)).lowercased() == "respond-async" }
        } ?? false

        let encodingText = try value("content-encoding")
        guard bodyLength > 0 else {
            encoding = nil
            legacyHeaders = nil
            return
        }
        guard let encodingText else { throw Refusal("a message with a body needs Content-Encoding: aes128gcm (RFC 8291)") }
        guard let encoding = ContentEncoding(rawValue: encodingText.lowercased()) else {
            throw Refusal("Content-Encoding must be aes128gcm (or the older aesgcm), not \"\(encodingText.prefix(32))\"")
        }
        self.encoding = encoding
        if encoding == .aesgcm {
            guard let encryption = try value("encryption"), let cryptoKey = try value("crypto-key"),
                  encryption.contains("salt="), cryptoKey.contains("dh=") else {
                throw Refusal("aesgcm needs Encryption: salt=… and Crypto-Key: dh=…")
            }
            legacyHeaders = LegacyHeaders(encryption: encryption, cryptoKey: cryptoKey)
        } else {
            legacyHeaders = nil
            guard bodyLength >= WebPushEncryption.headerLength + 17 else {
                throw Refusal("an aes128gcm body is at least \(WebPushEncryption.headerLength + 17) bytes (its header and one record)")
            }
        }
    }

    /// `text` without leading and trailing spaces and tabs (a copy only when there are some).
    static func trimmingSpaces(_ text: String) -> String {
        let utf8 = text.utf8
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        guard let first = utf8.first, let last = utf8.last, isSpace(first) || isSpace(last) else { return text }
        let trimmed = utf8.drop(while: isSpace).reversed().drop(while: isSpace).reversed()
        return String(decoding: Array(trimmed), as: UTF8.self)
    }

    static func isBase64URLCharacter(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || (0x30...0x39).contains(byte) || byte == 0x2D || byte == 0x5F
    }
}
