import HeraldCore

/// Web Push's callbacks to the app: its subscription's endpoint, a message, and a mutable
/// declarative message the app may replace (docs/web-push.md).
extension AgentAppDelegate {
    func didSubscribeWebPush(_ subscription: WebPushSubscription) async {
        call("webPushSubscription", ["subscription": subscription.json], waiting: nil)
    }
    func didReceiveWebPush(_ message: WebPushMessageDelivery) async {
        call("webPush", RuntimeJSON.json(message), waiting: nil)
    }
    func didReceiveMutableWebPush(
        _ message: WebPushMessageDelivery, proposed: DeclarativeWebPushMessage, completion: CallbackHandler<DeclarativeWebPushMessage?>
    ) async {
        let proposedJSON = (try? JSONReader.parse(proposed.encoded()))?.objectValue?["notification"] ?? .null
        call("webPush", RuntimeJSON.json(message).merging(["proposed": proposedJSON]) { $1 }, waiting: .mutableWebPush(completion, proposed: proposed))
    }
}
