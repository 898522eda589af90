import Foundation

/// Mozilla's browser push protocol (the one autopush serves and Firefox's
/// `PushServiceWebSocket` speaks): JSON text messages over a WebSocket. This reads what a
/// browser sends and writes what a push service answers; the session's decisions live with the
/// port that serves it.
public enum BrowserPushProtocol {
    /// The WebSocket subprotocol Firefox asks for.
    public static let subprotocol = "push-notification"
    /// The largest message a browser sends (a `hello` naming many subscriptions); longer ones are refused unread.
    public static let maximumMessageBytes = 64 * 1024
    /// The most subscriptions a `hello` may name, and the most updates one `ack` may carry.
    public static let maximumChannelsPerHello = 1_000
    public static let maximumUpdatesPerAck = 1_000

    /// What a browser sent.
    public enum ClientMessage: Sendable, Hashable {
        /// The handshake. `uaid` only when the browser already has subscriptions (it drops them
        /// all if the answer names another); `useWebPush` false asks for the old protocol without
        /// message data.
        case hello(uaid: String?, channelIDs: [String], useWebPush: Bool)
        /// A new subscription; `key` the application server key it was made with (65 bytes).
        case register(channelID: String, key: [UInt8]?)
        case unregister(channelID: String, code: Int?)
        /// Messages handled: `code` 100 delivered, 101 decryption failed, 102 other failure.
        case ack([Ack])
        /// A message the browser could not hand to its service worker (codes 301–303).
        case nack(version: String, code: Int?)
        /// `{}` or `{"messageType":"ping"}`: answered with `{}`.
        case ping
        /// A type the push service does not use (e.g. `broadcast_subscribe`): ignored, never an error.
        case other(String)
    }

    public struct Ack: Sendable, Hashable {
        public var channelID: String
        public var version: String
        public var code: Int?
        public init(channelID: String, version: String, code: Int?) { (self.channelID, self.version, self.code) = (channelID, version, code) }
    }

    /// Why a message was refused: the session answers what it can (a register with status 400)
    /// or closes.
    public struct Invalid: Error, Hashable, Sendable, CustomStringConvertible {
        public var description: String
        public init(_ description: String) { self.description = description }
    }

    /// Reads one text message.
    public static func read(_ bytes: [UInt8]) throws(Invalid) -> ClientMessage {
        guard bytes.count <= maximumMessageBytes else { throw Invalid("a message of \(bytes.count) bytes (at most \(maximumMessageBytes))") }
        let object: [String: JSONValue]
        do { object = try JSONReader.parseObject(bytes, limits: JSONLimits(maximumBytes: maximumMessageBytes, maximumDepth: 4)) } catch {
            throw Invalid("not a JSON object: \(error)")
        }
        guard let type = object["messageType"] else { return object.isEmpty ? .ping : .other("") }
        guard let name = type.stringValue else { throw Invalid("messageType is not a string") }
        switch name.lowercased() {
        case "hello":
            var uaid: String?
            if let value = object["uaid"], value != .null {
                guard let text = value.stringValue else { throw Invalid("hello: uaid is not a string") }
                uaid = text.isEmpty ? nil : text
            }
            var channels: [String] = []
            if case .array(let items)? = object["channelIDs"] {
                guard items.count <= maximumChannelsPerHello else { throw Invalid("hello names \(items.count) channels (at most \(maximumChannelsPerHello))") }
                channels = items.compactMap { $0.stringValue.flatMap(channelID) }
            }
            let useWebPush: Bool
            if case .bool(let flag)? = object["use_webpush"] { useWebPush = flag } else { useWebPush = false }
            return .hello(uaid: uaid, channelIDs: channels, useWebPush: useWebPush)
        case "register":
            guard let id = object["channelID"]?.stringValue.flatMap(channelID) else { throw Invalid("register: channelID must be a UUID") }
            var key: [UInt8]?
            if let value = object["key"], value != .null {
                guard let text = value.stringValue, text.utf8.count <= 200, let bytes = Base64URL.decode(Substring(text)),
                      ApplicationServerKey.isValid(bytes) else {
                    throw Invalid("register: key must be the application server's P-256 public key, base64url")
                }
                key = bytes
            }
            return .register(channelID: id, key: key)
        case "unregister":
            guard let id = object["channelID"]?.stringValue.flatMap(channelID) else { throw Invalid("unregister: channelID must be a UUID") }
            return .unregister(channelID: id, code: object["code"]?.integer(in: 0...999))
        case "ack":
            guard case .array(let items)? = object["updates"] else { throw Invalid("ack: updates must be an array") }
            guard items.count <= maximumUpdatesPerAck else { throw Invalid("ack carries \(items.count) updates (at most \(maximumUpdatesPerAck))") }
            var acks: [Ack] = []
            for item in items {
                guard case .object(let update) = item, let id = update["channelID"]?.stringValue.flatMap(channelID),
                      let version = update["version"]?.stringValue, !version.isEmpty, version.utf8.count <= 256 else {
                    throw Invalid("ack: each update needs a channelID (UUID) and a version")
                }
                acks.append(Ack(channelID: id, version: version, code: update["code"]?.integer(in: 0...999)))
            }
            return .ack(acks)
        case "nack":
            guard let version = object["version"]?.stringValue, !version.isEmpty, version.utf8.count <= 256 else { throw Invalid("nack: version must be a string") }
            return .nack(version: version, code: object["code"]?.integer(in: 0...999))
        case "ping":
            return .ping
        default:
            return .other(String(name.prefix(64)))
        }
    }

    /// A channel id as Firefox makes them: a UUID, dashed (any case; lowercased here).
    public static func channelID(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return nil }
        for (i, byte) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(i) {
                guard byte == 0x2D else { return nil }
            } else {
                guard isHex(byte) else { return nil }
            }
        }
        return text.lowercased()
    }

    /// A user agent id as Herald issues them: 32 lowercase hex digits (a UUID without dashes).
    public static func isUAID(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { isHex($0) && !(0x41...0x46).contains($0) }
    }

    private static func isHex(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte) || (0x41...0x46).contains(byte) }

    // MARK: what the push service sends

    public static func helloReply(uaid: String, useWebPush: Bool) -> [UInt8] {
        encode(["messageType": .string("hello"), "uaid": .string(uaid), "status": .int(200), "use_webpush": .bool(useWebPush), "broadcasts": .object([:])])
    }

    public static func registerReply(channelID: String, status: Int, pushEndpoint: String?) -> [UInt8] {
        var object: [String: JSONValue] = ["messageType": .string("register"), "channelID": .string(channelID), "status": .int(Int64(status))]
        if let pushEndpoint { object["pushEndpoint"] = .string(pushEndpoint) }
        return encode(object)
    }

    public static func unregisterReply(channelID: String, status: Int) -> [UInt8] {
        encode(["messageType": .string("unregister"), "channelID": .string(channelID), "status": .int(Int64(status))])
    }

    /// A message for a subscription: `version` is its id (what the browser acks); `data` the body
    /// as received, base64url; `headers` what the browser needs to decrypt it (`encoding`, and
    /// for `aesgcm` `encryption` and `crypto_key`).
    public static func notification(channelID: String, version: String, data: [UInt8]?, encoding: WebPushOptions.ContentEncoding?,
                                    legacy: WebPushOptions.LegacyHeaders?) -> [UInt8] {
        var object: [String: JSONValue] = ["messageType": .string("notification"), "channelID": .string(channelID), "version": .string(version)]
        if let data, !data.isEmpty, let encoding {
            object["data"] = .string(Base64URL.encode(data))
            var headers: [String: JSONValue] = ["encoding": .string(encoding.rawValue)]
            if let legacy {
                headers["encryption"] = .string(legacy.encryption)
                headers["crypto_key"] = .string(legacy.cryptoKey)
            }
            object["headers"] = .object(headers)
        }
        return encode(object)
    }

    /// The answer to a ping.
    public static let pong: [UInt8] = Array("{}".utf8)

    private static func encode(_ object: [String: JSONValue]) -> [UInt8] { JSONValue.object(object).compactBytes }
}
