import Foundation
import Synchronization

/// An app's notification center on a Linux device run by `herald device run`: UserNotifications'
/// UNUserNotificationCenter over the device's agent socket (docs/device-agent.md), with Swift's
/// concurrency. One center is one app process: it says `hello` when it connects, and closing it
/// (or the process ending) is the app terminated.
///
/// ```swift
/// let center = try await UserNotificationCenter.connect(app: "com.example.app", socket: "phone/agent.sock", delegate: AppDelegate())
/// guard try await center.requestAuthorization(options: [.alert, .sound, .badge]) else { return }
/// let token = try await center.registerForRemoteNotifications()
/// try await center.add(NotificationRequest(id: "standup", content: NotificationContent(title: "Stand-up"),
///                                          trigger: .calendar(matching: .init(hour: 9, minute: 55), repeats: true)))
/// ```
///
/// Every op the agent serves is a method here or, typed the same way, `send(_:)` with its
/// `AgentRequest` (the `user` and `device` ops that play the person holding the device).
public final class UserNotificationCenter: Sendable {
    /// The app's bundle id.
    public let app: String
    /// The settings the device answered `hello` with.
    public let settingsAtLaunch: NotificationSettings
    /// Every callback the device writes to this app, in order (the ones the delegate answers
    /// too): registration, languages, Web Push messages and subscriptions, launches. The newest
    /// 256 are kept for a reader that is behind.
    public let events: AsyncStream<AgentCallbackEvent>
    /// How long the delegate has to answer before the library answers for it (the device waits 30 s).
    public let answerDeadline: Duration
    /// How many callbacks the library answered because the delegate did not in time.
    public var missedDeadlines: Int { state.withLock { $0.missedDeadlines } }

    private let connection: AgentConnection
    let state: Mutex<State>
    private let eventSink: AsyncStream<AgentCallbackEvent>.Continuation

    struct State {
        var delegate: (any UserNotificationCenterDelegate)?
        var pushDelegate: (any PushRegistryDelegate)?
        var missedDeadlines = 0
        var waiters: [UUID: Waiter] = [:]
        var closed = false
    }

    /// Someone waiting for a callback (the token after `registerForRemote`, an endpoint after
    /// `webPushSubscribe`).
    struct Waiter {
        let accepts: @Sendable (AgentCallbackEvent) -> Bool
        let continuation: CheckedContinuation<AgentCallbackEvent, any Error>
    }

    private init(app: String, settings: NotificationSettings, connection: AgentConnection, delegate: (any UserNotificationCenterDelegate)?,
                 pushDelegate: (any PushRegistryDelegate)?, events: AsyncStream<AgentCallbackEvent>,
                 eventSink: AsyncStream<AgentCallbackEvent>.Continuation, answerDeadline: Duration) {
        self.app = app
        self.settingsAtLaunch = settings
        self.connection = connection
        self.state = Mutex(State(delegate: delegate, pushDelegate: pushDelegate))
        self.events = events
        self.eventSink = eventSink
        self.answerDeadline = answerDeadline
    }

    /// The agent socket named by `HERALD_AGENT_SOCKET`, if set.
    public static var defaultSocketPath: String? { ProcessInfo.processInfo.environment["HERALD_AGENT_SOCKET"] }

    /// Connects to the device at `socket` as `app` (one of the device's `--app`), in `state`.
    /// The delegate is in place before `hello`, so that nothing that arrives at once (a Web Push
    /// message kept while the app was not running) is missed. `serviceExtension`: this process
    /// is also the app's notification service extension. `pushDelegate` answers PushKit pushes
    /// (``PushRegistry``), in place before `hello` too: pushes held while the app was not running
    /// come at once.
    public static func connect(
        app: String, socket: String? = defaultSocketPath, state appState: AppState = .foreground, serviceExtension: Bool = false,
        delegate: (any UserNotificationCenterDelegate)? = nil, pushDelegate: (any PushRegistryDelegate)? = nil,
        answerDeadline: Duration = .seconds(25)
    ) async throws -> UserNotificationCenter {
        guard let socket else { throw AgentError.unreachable(path: "", reason: "no socket path: pass socket: or set HERALD_AGENT_SOCKET") }
        let (events, sink) = AsyncStream.makeStream(of: AgentCallbackEvent.self, bufferingPolicy: .bufferingNewest(256))
        let router = CallbackRouter()
        let connection = try AgentConnection(path: socket) { incoming in router.route(incoming) }
        let hello: AgentAnswer.Hello
        do {
            // The router reaches the center once it exists; callbacks before that wait in it.
            hello = try await connection.send(AgentRequest.Hello(app: app, state: appState, serviceExtension: serviceExtension ? true : nil))
        } catch {
            connection.close()
            throw error
        }
        let center = UserNotificationCenter(app: app, settings: hello.settings, connection: connection, delegate: delegate,
                                            pushDelegate: pushDelegate, events: events, eventSink: sink, answerDeadline: answerDeadline)
        router.attach(center)
        return center
    }

    /// Sends any agent request and returns its typed answer; a refusal is thrown as
    /// `AgentError.refused` with the agent's reason.
    @discardableResult
    public func send<Request: AgentRequestMessage>(_ request: Request) async throws -> Request.Answer {
        try await connection.send(request)
    }

    /// Sets (or clears) the delegate that answers the device.
    public func setDelegate(_ delegate: (any UserNotificationCenterDelegate)?) {
        state.withLock { $0.delegate = delegate }
    }

    /// Closes the connection: the device treats the app as terminated.
    public func close() {
        connection.close()
    }

    // MARK: authorization and settings

    /// Asks the user (the first time only); true when anything was granted.
    public func requestAuthorization(options: [AuthorizationOption]) async throws -> Bool {
        try await send(AgentRequest.RequestAuthorization(options: options)).granted
    }

    public func notificationSettings() async throws -> NotificationSettings {
        try await send(AgentRequest.Settings()).settings
    }

    /// The app moves to `state` (foreground, background, suspended), as its process would.
    public func setApplicationState(_ appState: AppState) async throws {
        try await send(AgentRequest.State(state: appState))
    }

    // MARK: categories

    /// Replaces the app's categories; returns the ids ignored because an earlier one had the same id.
    @discardableResult
    public func setNotificationCategories(_ categories: [NotificationCategory]) async throws -> [String] {
        try await send(AgentRequest.SetCategories(categories: categories)).ignored
    }

    public func notificationCategories() async throws -> [NotificationCategory] {
        try await send(AgentRequest.Categories()).categories
    }

    // MARK: local requests

    /// Schedules `request` (one with the same id is replaced); returns the ids dropped for good by
    /// the limit of 64 pending requests.
    @discardableResult
    public func add(_ request: NotificationRequest) async throws -> [String] {
        try await send(AgentRequest.Add(request: request)).dropped
    }

    /// Delivers `request` now, never pending (its trigger is ignored).
    public func present(_ request: NotificationRequest) async throws {
        try await send(AgentRequest.PresentNow(request: request))
    }

    /// The pending requests, soonest first, each with its next fire.
    public func pendingNotificationRequests() async throws -> [PendingNotificationRequest] {
        try await send(AgentRequest.Pending()).requests
    }

    public func removePendingNotificationRequests(withIdentifiers ids: [String]) async throws {
        try await send(AgentRequest.RemovePending(ids: ids))
    }

    public func removeAllPendingNotificationRequests() async throws {
        try await send(AgentRequest.RemoveAllPending())
    }

    /// UILocalNotification's `cancelLocalNotification:`: never fires, and a shown alert goes away.
    public func cancelLocalNotifications(withIdentifiers ids: [String]) async throws {
        try await send(AgentRequest.Cancel(ids: ids))
    }

    public func cancelAllLocalNotifications() async throws {
        try await send(AgentRequest.CancelAll())
    }

    // MARK: Notification Center

    /// What is in Notification Center for the app, oldest first.
    public func deliveredNotifications() async throws -> [DeliveredNotification] {
        try await send(AgentRequest.Delivered()).notifications
    }

    public func removeDeliveredNotifications(withIdentifiers ids: [String]) async throws {
        try await send(AgentRequest.RemoveDelivered(ids: ids))
    }

    public func removeAllDeliveredNotifications() async throws {
        try await send(AgentRequest.RemoveAllDelivered())
    }

    /// Sets the app's badge (needs badge authorization).
    public func setBadgeCount(_ count: Int) async throws {
        try await send(AgentRequest.SetBadge(badge: count))
    }

    public func badgeCount() async throws -> Int {
        try await send(AgentRequest.Badge()).badge
    }

    // MARK: remote notifications

    /// Registers for remote notifications and returns the device token (hex) the device's
    /// `registered` callback brings: send it, with the user's language, to your provider. It also
    /// comes on `events`, and again whenever it changes.
    public func registerForRemoteNotifications(timeout: Duration = .seconds(30)) async throws -> String {
        let event = try await waitForCallback(timeout: timeout, what: "the device token (is the device connected to its gateway?)") {
            if case .registered = $0 { return true }
            return false
        } trigger: {
            try await self.send(AgentRequest.RegisterForRemote())
            return nil
        }
        guard case .registered(let registered) = event else { throw AgentError.unreadable("a registration without a token") }
        return registered.token
    }

    /// Asks for the app's Live Activity push-to-start token (it arrives as `herald device run`'s
    /// `activity-push-to-start-token` event, for the provider).
    public func requestPushToStartToken() async throws {
        try await send(AgentRequest.PushToStartToken())
    }

    /// Turns the app's widget pushes on or off (the token arrives as the device's `widget-token` event).
    public func configureWidgetPushes(enabled: Bool = true) async throws {
        try await send(AgentRequest.ConfigureWidgetPushes(enabled: enabled))
    }

    // MARK: Live Activities

    /// How a Live Activity is updated remotely.
    public enum ActivityUpdates: Sendable, Hashable {
        /// Only by the app.
        case none
        /// By pushes to an update token the gateway issues (the `activity-update-token` event).
        case token
        /// By the broadcasts of a channel.
        case channel(String)

        var json: AgentJSON? {
            switch self {
            case .none: nil
            case .token: .string("token")
            case .channel(let id): .object(["channel": .string(id)])
            }
        }
    }

    /// The app's Live Activities, running and recently ended.
    public func activities() async throws -> [LiveActivity] {
        try await send(AgentRequest.Activities()).activities
    }

    /// Starts a Live Activity (ActivityKit's `Activity.request`).
    public func startActivity(
        attributesType: String, attributes: [String: AgentJSON], contentState: [String: AgentJSON],
        staleDate: Date? = nil, updates: ActivityUpdates = .none
    ) async throws -> LiveActivity {
        try await send(AgentRequest.StartActivity(
            attributesType: attributesType, attributes: attributes, contentState: contentState,
            staleDate: staleDate.map { Int($0.timeIntervalSince1970) }, pushType: updates.json)).activity
    }

    /// Ends a Live Activity with its final content; it stays until `dismissalDate` (default: four hours).
    public func endActivity(_ id: String, contentState: [String: AgentJSON]? = nil, dismissalDate: Date? = nil) async throws {
        try await send(AgentRequest.EndActivity(
            activity: id, contentState: contentState, dismissalDate: dismissalDate.map { Int($0.timeIntervalSince1970) }))
    }

    // MARK: callbacks

    /// Sends what `trigger` sends, and waits (up to `timeout`) for the first callback `accepts`
    /// takes. What `trigger` returns, when not nil, ends the wait at once.
    func waitForCallback(
        timeout: Duration, what: String, accepts: @escaping @Sendable (AgentCallbackEvent) -> Bool,
        trigger: @escaping @Sendable () async throws -> AgentCallbackEvent?
    ) async throws -> AgentCallbackEvent {
        let key = UUID()
        return try await withCheckedThrowingContinuation { continuation in
            let registered = state.withLock { state -> Bool in
                guard !state.closed else { return false }
                state.waiters[key] = Waiter(accepts: accepts, continuation: continuation)
                return true
            }
            guard registered else { return continuation.resume(throwing: AgentError.closed) }
            Task {
                do {
                    if let done = try await trigger() { return self.resumeWaiter(key, with: .success(done)) }
                } catch {
                    self.resumeWaiter(key, with: .failure(error))
                    return
                }
                try? await Task.sleep(for: timeout)
                self.resumeWaiter(key, with: .failure(AgentError.timedOut(what)))
            }
        }
    }

    private func resumeWaiter(_ key: UUID, with result: Result<AgentCallbackEvent, any Error>) {
        state.withLock { $0.waiters.removeValue(forKey: key) }?.continuation.resume(with: result)
    }

    /// A callback from the device: waiters and `events` see it; the delegate answers those that
    /// need an answer, within `answerDeadline`.
    fileprivate func received(_ event: AgentCallbackEvent) {
        let (delegate, pushDelegate, matched) = state.withLock { state -> ((any UserNotificationCenterDelegate)?, (any PushRegistryDelegate)?, [Waiter]) in
            let keys = state.waiters.filter { $0.value.accepts(event) }.map(\.key)
            return (state.delegate, state.pushDelegate, keys.compactMap { state.waiters.removeValue(forKey: $0) })
        }
        for waiter in matched { waiter.continuation.resume(returning: event) }
        eventSink.yield(event)
        switch event {
        case .willPresent(let callback):
            answer(callback.callback, fallback: AgentRequest.Complete(callback: callback.callback, options: [])) {
                AgentRequest.Complete(callback: callback.callback, options: await delegate?.willPresent(callback.notification) ?? [])
            }
        case .didReceive(let callback):
            let response = NotificationResponse(
                notification: callback.notification, actionIdentifier: callback.actionID, userText: callback.text,
                requiredUnlock: callback.requiredUnlock)
            answer(callback.callback, fallback: AgentRequest.Complete(callback: callback.callback)) {
                await delegate?.didReceive(response)
                return AgentRequest.Complete(callback: callback.callback)
            }
        case .silentPush(let callback):
            answer(callback.callback, fallback: AgentRequest.Complete(callback: callback.callback, result: .noData)) {
                AgentRequest.Complete(callback: callback.callback, result: await delegate?.didReceiveRemoteNotification(callback.payload) ?? .noData)
            }
        case .serviceExtension(let callback):
            let request = ServiceExtensionRequest(payload: callback.payload)
            answer(callback.callback, fallback: AgentRequest.Complete(callback: callback.callback, content: .object(callback.payload))) {
                let content = await delegate?.didReceive(request) ?? ServiceExtensionContent(payload: .object(callback.payload))
                return AgentRequest.Complete(callback: callback.callback, content: content.payload, communication: content.communication)
            }
        case .pushKit(let callback):
            // Push to Talk's device waits 5 s, not 30: the library answers for the app before.
            let deadline = callback.push.kind == .pushtotalk ? min(answerDeadline, .seconds(4)) : answerDeadline
            answer(callback.callback, fallback: AgentRequest.Complete(callback: callback.callback), deadline: deadline) {
                switch await pushDelegate?.didReceiveIncomingPush(callback.push) ?? .done {
                case .done: AgentRequest.Complete(callback: callback.callback)
                case .activeRemoteParticipant(let name): AgentRequest.Complete(callback: callback.callback, activeRemoteParticipant: name)
                case .leaveChannel: AgentRequest.Complete(callback: callback.callback, leaveChannel: true)
                }
            }
        case .webPush(let message):
            guard let number = message.callback else { break }
            answer(number, fallback: AgentRequest.Complete(callback: number)) {
                AgentRequest.Complete(callback: number, notification: await delegate?.replacement(forMutableWebPush: message))
            }
        case .callAction(let action):
            Task { await pushDelegate?.perform(action.action, call: action.call) }
        default:
            break
        }
    }

    /// Answers callback `number` with what `work` returns, or with `fallback` once the deadline
    /// passes first (counted in `missedDeadlines`); whichever comes second is dropped.
    private func answer(
        _ number: Int, fallback: AgentRequest.Complete, deadline: Duration? = nil, _ work: @escaping @Sendable () async -> AgentRequest.Complete
    ) {
        let answerDeadline = deadline ?? answerDeadline
        let answered = Atomic<Bool>(false)
        let deliver: @Sendable (AgentRequest.Complete, Bool) async -> Void = { complete, late in
            guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
            if late { self.state.withLock { $0.missedDeadlines += 1 } }
            _ = try? await self.connection.send(complete)
        }
        let worker = Task { await deliver(await work(), false) }
        Task {
            try? await Task.sleep(for: answerDeadline)
            if !answered.load(ordering: .acquiring) { worker.cancel() }
            await deliver(fallback, true)
        }
    }

    /// The connection ended: waiters fail, `events` finishes.
    fileprivate func ended() {
        let waiters = state.withLock { state -> [Waiter] in
            state.closed = true
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.continuation.resume(throwing: AgentError.closed) }
        eventSink.finish()
    }
}

/// Hands the reading thread's callbacks to the center, holding those that come before the
/// center exists (between `hello`'s answer and `connect` returning).
private final class CallbackRouter: Sendable {
    private let state = Mutex<(center: UserNotificationCenter?, early: [AgentConnection.Incoming])>((nil, []))

    func route(_ incoming: AgentConnection.Incoming) {
        let center = state.withLock { state -> UserNotificationCenter? in
            if state.center == nil { state.early.append(incoming) }
            return state.center
        }
        if let center { deliver(incoming, to: center) }
    }

    func attach(_ center: UserNotificationCenter) {
        // Delivered under the lock so that nothing routed meanwhile overtakes what came early.
        state.withLock { state in
            for incoming in state.early { deliver(incoming, to: center) }
            state.early.removeAll()
            state.center = center
        }
    }

    private func deliver(_ incoming: AgentConnection.Incoming, to center: UserNotificationCenter) {
        switch incoming {
        case .closed:
            center.ended()
        case .callback(let event, let line):
            // An event this library does not know (a newer runtime) is left out.
            if let decoded = try? AgentCallbackEvent.decode(event: event, from: line, with: JSONDecoder()) {
                center.received(decoded)
            }
        }
    }
}
