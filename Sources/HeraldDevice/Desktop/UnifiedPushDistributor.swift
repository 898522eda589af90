import Foundation
import HeraldCore
import Logging

/// The registrations of a UnifiedPush distributor, and how D-Bus calls change them: pure (no bus,
/// no connection), so that every rule is tested at fixed inputs and the call reader is fuzzed.
/// UnifiedPush D-Bus specification 0.3.0: `org.unifiedpush.Distributor2.Register` and
/// `Unregister`, each with one `a{sv}`.
public struct UnifiedPushRegistrations: Sendable {
    /// One app's registration: its connector (a D-Bus name), the connection token it chose, and
    /// the Web Push subscription Herald made for it.
    public struct Registration: Sendable, Hashable, Codable {
        /// The app's D-Bus service name, which serves `org.unifiedpush.Connector2`.
        public var service: String
        /// The connection token (the connector's secret with the distributor).
        public var token: String
        public var description: String?
        /// The VAPID key (base64url, as the app gave it).
        public var vapid: String?
        /// The subscription's id on the device connection (a UUID).
        public var subscription: String
        public var endpoint: String?
        /// The gateway's token of the subscription: its messages carry it.
        public var gatewayToken: String?
    }

    public private(set) var byToken: [String: Registration] = [:]

    /// Registrations one distributor keeps at most (each is a token on the device).
    public static let maximumRegistrations = 64
    public static let maximumTokenBytes = 100
    public static let maximumDescriptionBytes = 100

    public init(_ registrations: [Registration] = []) {
        for registration in registrations { byToken[registration.token] = registration }
    }

    public enum RegisterOutcome: Sendable, Hashable {
        /// Registered (or already registered): the subscription is wanted from the gateway, and
        /// the connector gets `NewEndpoint` once the endpoint is known (at once if it is).
        /// `replaced` is the registration's previous subscription when the app registered the
        /// same token with another VAPID key (that subscription and its endpoint go).
        case registered(Registration, isNew: Bool, replaced: Registration? = nil)
        /// `REGISTRATION_FAILED` with the specification's reason for it (`ACTION_REQUIRED`: the
        /// user must act, here free registrations; `VAPID_REQUIRED`: a usable VAPID key is
        /// needed) and why, for the log.
        case failed(reason: String, why: String)
        /// The call itself is wrong, answered with a D-Bus error of this name
        /// (`org.freedesktop.DBus.Error.InvalidArgs` for a malformed argument, `…AccessDenied`
        /// for a token another app registered): no registration result, nothing to retry as is.
        case refused(error: String, why: String)
    }

    static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
    static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"

    /// `Register` with its arguments. `makeSubscription` names a new subscription's id.
    public mutating func register(_ args: [String: DBusArgument], makeSubscription: () -> String) -> RegisterOutcome {
        guard case .string(let service)? = args["service"], Self.isBusName(service), DeviceProtocol.isValidTopic(service) else {
            return .refused(error: Self.invalidArgs, why: "\"service\" must be the connector's D-Bus name")
        }
        guard case .string(let token)? = args["token"], !token.isEmpty, token.utf8.count <= Self.maximumTokenBytes else {
            return .refused(error: Self.invalidArgs, why: "\"token\" must be a string of 1 to \(Self.maximumTokenBytes) bytes")
        }
        var description: String?
        if let value = args["description"] {
            guard case .string(let text) = value, text.utf8.count <= Self.maximumDescriptionBytes else {
                return .refused(error: Self.invalidArgs, why: "\"description\" must be a string of at most \(Self.maximumDescriptionBytes) bytes")
            }
            description = text
        }
        var vapid: String?
        if let value = args["vapid"] {
            guard case .string(let text) = value, text.utf8.count <= 128, let key = Base64URL.decode(text[...]), ApplicationServerKey.isValid(key) else {
                return .failed(reason: "VAPID_REQUIRED", why: "\"vapid\" must be a P-256 public key, uncompressed and base64url")
            }
            vapid = text
        }
        if var existing = byToken[token] {
            guard existing.service == service else {
                return .refused(error: Self.accessDenied, why: "the token is another app's registration: choose a new random token")
            }
            guard existing.vapid.flatMap({ Base64URL.decode($0[...]) }) == vapid.flatMap({ Base64URL.decode($0[...]) }) else {
                // Another key is another subscription: the old one (and its endpoint) goes.
                let replacement = Registration(
                    service: service, token: token, description: description ?? existing.description, vapid: vapid, subscription: makeSubscription())
                byToken[token] = replacement
                return .registered(replacement, isNew: true, replaced: existing)
            }
            existing.description = description ?? existing.description
            byToken[token] = existing
            return .registered(existing, isNew: false)
        }
        guard byToken.count < Self.maximumRegistrations else {
            return .failed(reason: "ACTION_REQUIRED", why: "this distributor keeps at most \(Self.maximumRegistrations) registrations")
        }
        let registration = Registration(service: service, token: token, description: description, vapid: vapid, subscription: makeSubscription())
        byToken[token] = registration
        return .registered(registration, isNew: true)
    }

    /// `Unregister`: the registration it ends, if the token is known.
    public mutating func unregister(_ args: [String: DBusArgument]) -> Registration? {
        guard case .string(let token)? = args["token"] else { return nil }
        return byToken.removeValue(forKey: token)
    }

    /// The gateway gave a subscription its endpoint: the registration, if the endpoint is new.
    public mutating func endpoint(_ endpoint: String, gatewayToken: String, subscription: String) -> Registration? {
        guard var registration = byToken.values.first(where: { $0.subscription == subscription }) else { return nil }
        registration.gatewayToken = gatewayToken
        let changed = registration.endpoint != endpoint
        registration.endpoint = endpoint
        byToken[registration.token] = registration
        return changed ? registration : nil
    }

    /// The registration whose subscription a notification was sent to.
    public func registration(gatewayToken: String) -> Registration? {
        byToken.values.first { $0.gatewayToken == gatewayToken }
    }

    /// A D-Bus bus name (well-known): 2+ dot-separated elements of letters, digits, `_`, `-`,
    /// none starting with a digit, at most 255 bytes.
    static func isBusName(_ name: String) -> Bool {
        guard name.utf8.count <= 255, !name.hasPrefix(":") else { return false }
        let elements = name.split(separator: ".", omittingEmptySubsequences: false)
        guard elements.count >= 2 else { return false }
        return elements.allSatisfy { element in
            guard let first = element.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
            return element.utf8.allSatisfy { $0.isASCIILetterOrDigit || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
        }
    }

    /// For the fuzz target `dbus-unifiedpush`: a message's bytes read as a D-Bus call, answered
    /// as a standard interface would, and, when it is a distributor call, carried out on an empty
    /// distributor.
    public static func fuzz(_ bytes: [UInt8]) {
        guard let message = try? DBusMessage.decode(bytes) else { return }
        // The standard interfaces every exported object answers (introspection, Peer, Properties).
        _ = DBusObjects([UnifiedPushDistributor.path: UnifiedPushDistributor.introspection]).answer(message) { nil }
        guard let args = message.variantDictionary.map(DBusArgument.arguments) else { return }
        var registrations = UnifiedPushRegistrations()
        _ = registrations.register(args) { "0f8e3a52-6c1d-4b7e-9a2f-5d3c1b0e7a64" }
        _ = registrations.unregister(args)
    }
}

/// A value of an `a{sv}` argument, as far as UnifiedPush reads them.
public enum DBusArgument: Sendable, Hashable {
    case string(String)
    case other

    static func arguments(_ dictionary: [String: DBusValue]) -> [String: DBusArgument] {
        dictionary.mapValues { value in if case .string(let text) = value { .string(text) } else { .other } }
    }
}

extension UInt8 {
    fileprivate var isASCIILetterOrDigit: Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self)
    }
}

/// What the distributor did, for `herald device run`'s events.
public enum UnifiedPushEvent: Sendable, Hashable {
    case registered(service: String, description: String?, endpoint: String?)
    case refused(service: String?, reason: String, why: String)
    case unregistered(service: String)
    case message(service: String, id: String, bytes: Int)
    /// A message not handed over: the connector did not answer (it stays held by the gateway and
    /// comes again at the next connection), or it cannot be carried (empty).
    case notDelivered(service: String, id: String, why: String)
}

/// `herald device run --unifiedpush`: a UnifiedPush distributor on the session bus. Apps register
/// with `org.unifiedpush.Distributor2`; each registration is a Web Push subscription on the
/// gateway (device protocol version 3) whose endpoint the app gets through its connector's
/// `NewEndpoint`; each message is handed to the connector's `Message` as it arrived (the RFC 8291
/// ciphertext: the app decrypts it with the keys it made) and acked to the gateway once the
/// connector has answered.
public final class UnifiedPushDistributor: Sendable {
    public static let busName = "org.unifiedpush.Distributor.herald"
    static let path = "/org/unifiedpush/Distributor"
    static let interface = "org.unifiedpush.Distributor2"
    static let connectorPath = "/org/unifiedpush/Connector"
    static let connectorInterface = "org.unifiedpush.Connector2"

    private let bus: Locked<SessionBus?>
    private let state: Locked<UnifiedPushRegistrations>
    /// Messages a connector did not take, by registration token (at most
    /// ``maximumPendingPerRegistration`` each, in arrival order): handed over again when the app
    /// registers again, as it does at its start, not only at the gateway's next connection.
    private let pending = Locked([String: [DeviceNotification]]())
    static let maximumPendingPerRegistration = 64
    private let file: String
    private let connection: DeviceConnection
    private let onEvent: @Sendable (UnifiedPushEvent) -> Void
    private let logger: Logger

    private init(file: String, registrations: UnifiedPushRegistrations, connection: DeviceConnection, onEvent: @escaping @Sendable (UnifiedPushEvent) -> Void, logger: Logger) {
        self.bus = Locked(nil)
        self.state = Locked(registrations)
        self.file = file
        self.connection = connection
        self.onEvent = onEvent
        self.logger = logger
    }

    public struct Unavailable: Error, CustomStringConvertible {
        public var description: String
    }

    /// Owns ``busName`` on the session bus, asks the connection for every saved registration's
    /// subscription, and serves calls. `directory` keeps the registrations (`unifiedpush.json`).
    public static func start(
        directory: String, connection: DeviceConnection, logger: Logger, onEvent: @escaping @Sendable (UnifiedPushEvent) -> Void
    ) async throws -> UnifiedPushDistributor {
        let file = (directory as NSString).appendingPathComponent("unifiedpush.json")
        var saved: [UnifiedPushRegistrations.Registration] = []
        if let data = FileManager.default.contents(atPath: file) {
            do { saved = try JSONReader.decode([UnifiedPushRegistrations.Registration].self, from: data, limits: JSONLimits(maximumBytes: 1 << 20, maximumDepth: 8)) } catch {
                throw Unavailable(description: "\(file) is not a list of UnifiedPush registrations (\(error)); remove it to start afresh")
            }
        }
        let distributor = UnifiedPushDistributor(
            file: file, registrations: UnifiedPushRegistrations(saved), connection: connection, onEvent: onEvent, logger: logger)
        let bus: SessionBus
        do {
            bus = try SessionBus(objects: DBusObjects([path: Self.introspection]), onMethodCall: { [weak distributor] call in distributor?.handle(call) })
            try await bus.start(match: nil)
            try await bus.requestName(busName)
        } catch {
            throw Unavailable(description: "--unifiedpush needs a D-Bus session bus where \(busName) is free (run it in a desktop session or under dbus-run-session): \(error)")
        }
        distributor.bus.withLock { $0 = bus }
        for registration in saved { distributor.want(registration) }
        return distributor
    }

    public func close() { bus.withLock { $0 }?.close() }

    private func want(_ registration: UnifiedPushRegistrations.Registration) {
        connection.want(.webPush(
            topic: registration.service, subscription: registration.subscription,
            applicationServerKey: registration.vapid.flatMap { Base64URL.decode($0[...]) }))
    }

    private func save() {
        let list = state.withLock { $0.byToken.values.sorted { $0.token < $1.token } }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do { try encoder.encode(list).write(to: URL(fileURLWithPath: file), options: .atomic) } catch {
            logger.error("could not save the UnifiedPush registrations", metadata: ["file": "\(file)", "error": "\(error)"])
        }
    }

    // MARK: calls from apps

    /// What introspection shows at ``path`` (beside the standard interfaces).
    static let introspection = """
          <interface name="org.unifiedpush.Distributor2">
            <method name="Register"><arg name="args" type="a{sv}" direction="in"/><arg name="res" type="a{sv}" direction="out"/></method>
            <method name="Unregister"><arg name="args" type="a{sv}" direction="in"/><arg name="res" type="a{sv}" direction="out"/></method>
          </interface>

        """

    private func handle(_ call: DBusMessage) {
        guard let bus = bus.withLock({ $0 }) else { return }
        guard call.path == Self.path, call.interface == Self.interface || call.interface == nil,
              call.member == "Register" || call.member == "Unregister" else {
            return bus.replyError(
                to: call, name: "org.freedesktop.DBus.Error.UnknownMethod",
                "Herald serves \(Self.interface) (Register, Unregister) at \(Self.path), not \((call.interface ?? "").prefix(128)).\((call.member ?? "").prefix(64))")
        }
        guard let dictionary = call.variantDictionary else {
            return bus.replyError(to: call, name: UnifiedPushRegistrations.invalidArgs, "\(Self.interface) methods take one a{sv}")
        }
        let args = DBusArgument.arguments(dictionary)
        // Whose call it is: an app registers and unregisters only itself (the name it owns).
        Task {
            if call.member == "Register" {
                await register(args, call: call, bus: bus)
            } else {
                await unregister(args, call: call, bus: bus)
            }
        }
    }

    /// Whether `sender` (the caller's unique name) owns `service` on the bus now.
    private func owns(_ sender: String?, _ service: String, bus: SessionBus) async -> Bool {
        guard let sender, UnifiedPushRegistrations.isBusName(service) else { return false }
        let answer = try? await bus.call(
            destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus", member: "GetNameOwner",
            [.string(service)], timeout: .seconds(5))
        return answer?.body.first?.stringValue == sender
    }

    private func register(_ args: [String: DBusArgument], call: DBusMessage, bus: SessionBus) async {
        if case .string(let service)? = args["service"], UnifiedPushRegistrations.isBusName(service), !(await owns(call.sender, service, bus: bus)) {
            let why = "the caller does not own \(service.prefix(255)) on the bus: an app registers only itself, from the name it owns"
            onEvent(.refused(service: service, reason: UnifiedPushRegistrations.accessDenied, why: why))
            return bus.replyError(to: call, name: UnifiedPushRegistrations.accessDenied, why)
        }
        let outcome = state.withLock { $0.register(args) { UUID().uuidString.lowercased() } }
        let service: String? = if case .string(let service)? = args["service"] { service } else { nil }
        switch outcome {
        case .refused(let error, let why):
            onEvent(.refused(service: service, reason: error, why: why))
            bus.replyError(to: call, name: error, why)
        case .failed(let reason, let why):
            onEvent(.refused(service: service, reason: reason, why: why))
            bus.reply(to: call, [DBusMessage.variantDictionary(["success": .string("REGISTRATION_FAILED"), "reason": .string(reason)])])
        case .registered(let registration, let isNew, let replaced):
            bus.reply(to: call, [DBusMessage.variantDictionary(["success": .string("REGISTRATION_SUCCEEDED")])])
            if let replaced { drop(replaced) }
            if isNew { save() }
            onEvent(.registered(service: registration.service, description: registration.description, endpoint: registration.endpoint))
            want(registration)
            // Registered again with a known endpoint: the connector gets it at once, then what it
            // missed while it was away.
            if let endpoint = registration.endpoint { newEndpoint(registration, endpoint) }
            let missed = pending.withLock { $0.removeValue(forKey: registration.token) ?? [] }
            for push in missed { deliver(push, to: registration) }
        }
    }

    private func unregister(_ args: [String: DBusArgument], call: DBusMessage, bus: SessionBus) async {
        let empty = DBusMessage.variantDictionary([:])
        guard case .string(let token)? = args["token"] else {
            return bus.replyError(to: call, name: UnifiedPushRegistrations.invalidArgs, "Unregister takes {\"token\": s}")
        }
        guard let known = state.withLock({ $0.byToken[token] }) else { return bus.reply(to: call, [empty]) }
        guard await owns(call.sender, known.service, bus: bus) else {
            return bus.replyError(to: call, name: UnifiedPushRegistrations.accessDenied, "the token is another app's registration: an app unregisters only itself")
        }
        guard let registration = state.withLock({ $0.unregister(args) }) else { return bus.reply(to: call, [empty]) }
        bus.reply(to: call, [empty])
        save()
        drop(registration)
        onEvent(.unregistered(service: registration.service))
        bus.send(
            destination: registration.service, path: Self.connectorPath, interface: Self.connectorInterface, member: "Unregistered",
            [DBusMessage.variantDictionary(["token": .string(registration.token)])])
    }

    /// Ends a registration's subscription on the gateway (its endpoint answers 410) and forgets
    /// what was pending for it.
    private func drop(_ registration: UnifiedPushRegistrations.Registration) {
        pending.withLock { pending in pending[registration.token]?.removeAll { $0.token?.hex == registration.gatewayToken } }
        connection.drop(.webPush(
            topic: registration.service, subscription: registration.subscription,
            applicationServerKey: registration.vapid.flatMap { Base64URL.decode($0[...]) }))
    }

    private func newEndpoint(_ registration: UnifiedPushRegistrations.Registration, _ endpoint: String) {
        bus.withLock { $0 }?.send(
            destination: registration.service, path: Self.connectorPath, interface: Self.connectorInterface, member: "NewEndpoint",
            [DBusMessage.variantDictionary(["token": .string(registration.token), "endpoint": .string(endpoint)])])
    }

    // MARK: events from the device connection

    /// Takes what is the distributor's: endpoints of its subscriptions and messages sent to them
    /// (returns `true`: the device runtime does not see them).
    public func handle(_ event: DeviceEvent) -> Bool {
        switch event {
        case .frame(.webPushSubscribed(_, let subscription, let endpoint, let token)):
            guard state.withLock({ $0.byToken.values.contains { $0.subscription == subscription } }) else { return false }
            if let registration = state.withLock({ $0.endpoint(endpoint, gatewayToken: token.hex, subscription: subscription) }) {
                save()
                onEvent(.registered(service: registration.service, description: registration.description, endpoint: endpoint))
                newEndpoint(registration, endpoint)
            }
            return true
        case .frame(.webPushUnsubscribed(_, let subscription)):
            return state.withLock { $0.byToken.values.contains { $0.subscription == subscription } }
        case .frame(.notification(let push)) where push.pushType == .webpush:
            guard let token = push.token, let registration = state.withLock({ $0.registration(gatewayToken: token.hex) }) else { return false }
            deliver(push, to: registration)
            return true
        default:
            return false
        }
    }

    /// How long a connector has to answer `Message` before the message is left for the next connection.
    static let messageTimeout: Duration = .seconds(10)

    private func deliver(_ push: DeviceNotification, to registration: UnifiedPushRegistrations.Registration) {
        let id = push.apnsID
        let body: [UInt8]
        do { body = try WebPushStoredMessage(payload: push.payload).body } catch {
            onEvent(.notDelivered(service: registration.service, id: id.description, why: "not a Web Push message: \(error)"))
            return connection.acknowledge(id)
        }
        guard !body.isEmpty else {
            // UnifiedPush messages are 1 to 4096 bytes: a push without a body has nothing to carry.
            onEvent(.notDelivered(service: registration.service, id: id.description, why: "a push without a body (UnifiedPush carries 1 to 4096 bytes)"))
            return connection.acknowledge(id)
        }
        guard let bus = bus.withLock({ $0 }) else { return }
        let arguments = DBusMessage.variantDictionary([
            "token": .string(registration.token), "message": .array(element: "y", body.map(DBusValue.byte)), "id": .string(id.description),
        ])
        Task { [connection, onEvent] in
            do {
                _ = try await bus.call(
                    destination: registration.service, path: Self.connectorPath, interface: Self.connectorInterface, member: "Message",
                    [arguments], timeout: Self.messageTimeout)
                onEvent(.message(service: registration.service, id: id.description, bytes: body.count))
                connection.acknowledge(id)
            } catch {
                // Not acked: the gateway keeps it and sends it again at the next connection; the
                // distributor hands it over again as soon as the app registers again.
                self.pending.withLock { pending in
                    var list = pending[registration.token] ?? []
                    if !list.contains(where: { $0.apnsID == id }) { list.append(push) }
                    pending[registration.token] = Array(list.suffix(Self.maximumPendingPerRegistration))
                }
                onEvent(.notDelivered(service: registration.service, id: id.description, why: "the connector did not take it: \(error)"))
            }
        }
    }
}
