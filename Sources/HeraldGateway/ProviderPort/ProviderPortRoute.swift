import HeraldCore
import NIOCore

/// What one complete provider request asks for, decided from its head (and, on the channel
/// port, its body) alone: pure — no I/O, no clock, no connection state. The first step of every
/// stream (``ProviderPortStream``); the stream then authenticates the request and carries the route
/// out, or answers the refusal exactly as APNs does.
enum ProviderPortRoute {
    /// `POST /3/device/<token>`: a push.
    case push(APNsRequestTarget)
    /// Herald's read endpoints, authenticated like pushes: `GET /3/notifications/<apns-id>`,
    /// `GET /3/feedback/<topic>`.
    case query(ProviderPortQuery)
    /// `POST /4/broadcasts/apps/<bundle-id>`: one push to every subscriber of a channel.
    case broadcast(bundleID: String)
    /// A channel management request on the channel port.
    case channel(ChannelRequest)

    /// The route of a request, or the refusal APNs gives it (in APNs's order: the method and
    /// path, then the device token; the headers and payload are checked later).
    static func route(_ head: APNsRequestHead, body: ByteBuffer?, role: ProviderPort.Role) -> Result<ProviderPortRoute, APNsRejection> {
        if role == .channels {
            return ChannelRequest.parse(head, body: body.map { Array($0.readableBytesView) } ?? []).map(ProviderPortRoute.channel)
        }
        if head.method == "GET" {
            return ProviderPortQuery.parse(path: head.path ?? "").map(ProviderPortRoute.query)
        }
        switch APNsRequestValidation.validateTarget(head) {
        case .failure(let rejection) where rejection.reason == .badPath:
            // Not a device's path: a broadcast's, or none.
            guard let bundleID = BroadcastRequest.bundleID(fromPath: head.path) else { return .failure(rejection) }
            return .success(.broadcast(bundleID: bundleID))
        case .failure(let rejection):
            return .failure(rejection)
        case .success(let target):
            return .success(.push(target))
        }
    }

    /// Broadcast and channel answers carry `apns-request-id` instead of `apns-id` (every answer
    /// of the channel port does, refusals included).
    static func answersWithRequestID(_ route: Result<ProviderPortRoute, APNsRejection>, role: ProviderPort.Role) -> Bool {
        if role == .channels { return true }
        if case .success(.broadcast) = route { return true }
        return false
    }

    /// The app a broadcast or channel request is about: it must be the credential's.
    var appOfChannelRequest: String? {
        switch self {
        case .broadcast(let bundleID): bundleID
        case .channel(let request): request.bundleID
        case .push, .query: nil
        }
    }
}
