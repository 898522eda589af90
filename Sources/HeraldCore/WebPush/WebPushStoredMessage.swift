/// A Web Push message as the core keeps it: the payload of a ``StoredNotification`` of kind
/// ``PushType/webpush``. It holds the body exactly as the application server sent it (ciphertext:
/// the gateway never sees a plaintext), what the user agent needs to decrypt it (the
/// `Content-Encoding`, and for `aesgcm` the `Encryption` and `Crypto-Key` headers) and the
/// subscription's channel, so that a session can write the browser's `notification` message
/// without another lookup.
///
/// Stored as a small JSON object: `{"channel":"…","encoding":"aes128gcm","data":"<base64url>"}`,
/// with `"encryption"` and `"crypto_key"` for `aesgcm`; a message without a body has neither
/// `encoding` nor `data`.
public struct WebPushStoredMessage: Sendable, Hashable {
    public var channelID: String
    public var encoding: WebPushOptions.ContentEncoding?
    public var legacyHeaders: WebPushOptions.LegacyHeaders?
    public var body: [UInt8]

    public init(channelID: String, encoding: WebPushOptions.ContentEncoding?, legacyHeaders: WebPushOptions.LegacyHeaders?, body: [UInt8]) {
        (self.channelID, self.encoding, self.legacyHeaders, self.body) = (channelID, encoding, legacyHeaders, body)
    }

    /// Why stored bytes are not a Web Push message (a corrupt row, or a notification of another kind).
    public struct Invalid: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    /// The stored form, keys in sorted order. Written by hand: it is on the Web Push port's
    /// hot path (every accepted message).
    public func encoded() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64 + body.count * 4 / 3)
        bytes += Array(#"{"channel":"#.utf8)
        JSONText.appendString(channelID, to: &bytes)
        if !body.isEmpty {
            if let legacyHeaders {
                bytes += Array(#","crypto_key":"#.utf8)
                JSONText.appendString(legacyHeaders.cryptoKey, to: &bytes)
            }
            bytes += Array(#","data":""#.utf8)
            bytes += Array(Base64URL.encode(body).utf8)
            bytes.append(UInt8(ascii: "\""))
            if let encoding {
                bytes += Array(#","encoding":"#.utf8)
                JSONText.appendString(encoding.rawValue, to: &bytes)
            }
            if let legacyHeaders {
                bytes += Array(#","encryption":"#.utf8)
                JSONText.appendString(legacyHeaders.encryption, to: &bytes)
            }
        }
        bytes.append(UInt8(ascii: "}"))
        return bytes
    }

    /// Reads what ``encoded()`` wrote. Bounded like a payload; every field checked.
    public init(stored bytes: [UInt8]) throws(Invalid) {
        let object: [String: JSONValue]
        do { object = try JSONReader.parseObject(bytes, limits: .payload) } catch { throw Invalid("not a JSON object: \(error)") }
        try self.init(object: object)
    }

    /// Reads the stored form already parsed (a device has the push's payload as JSON): every
    /// field checked as ``init(stored:)`` checks it.
    public init(payload: JSONValue) throws(Invalid) {
        guard case .object(let object) = payload else { throw Invalid("not a JSON object") }
        try self.init(object: object)
    }

    private init(object: [String: JSONValue]) throws(Invalid) {
        guard let channel = object["channel"]?.stringValue, BrowserPushProtocol.channelID(channel) == channel else {
            throw Invalid("no valid channel")
        }
        var body: [UInt8] = []
        if let data = object["data"] {
            guard let text = data.stringValue, let decoded = Base64URL.decode(text[...]), decoded.count <= WebPushEncryption.maximumBody else {
                throw Invalid("data is not base64url of at most \(WebPushEncryption.maximumBody) bytes")
            }
            body = decoded
        }
        var encoding: WebPushOptions.ContentEncoding?
        if let text = object["encoding"] {
            guard let value = text.stringValue.flatMap(WebPushOptions.ContentEncoding.init(rawValue:)) else { throw Invalid("unknown encoding") }
            encoding = value
        }
        var legacy: WebPushOptions.LegacyHeaders?
        if let encryption = object["encryption"]?.stringValue, let cryptoKey = object["crypto_key"]?.stringValue {
            legacy = .init(encryption: encryption, cryptoKey: cryptoKey)
        }
        // Without a body there is nothing to decrypt: headers of one are not kept.
        self.init(channelID: channel, encoding: body.isEmpty ? nil : encoding, legacyHeaders: body.isEmpty ? nil : legacy, body: body)
    }

    /// The browser protocol's `notification` message for it, `version` being the message's id.
    public func browserNotification(version: String) -> [UInt8] {
        BrowserPushProtocol.notification(
            channelID: channelID, version: version, data: body.isEmpty ? nil : body, encoding: encoding, legacy: legacyHeaders)
    }
}
