/// What a Live Activity push carries for the activity itself, beside its event and timestamp
/// (reference §4: `content-state`, `stale-date`, `dismissal-date`, `relevance-score`,
/// `attributes-type`, `attributes`): ActivityKit's `ActivityContent` and the start's attributes.
/// A push as the device reads it (``LiveActivityUpdate``) and a send as a provider plans it
/// (`LiveActivitySend`) both hold one. Codable with the property names as keys.
public struct LiveActivityContent: Sendable, Hashable, Codable {
    public var contentState: [String: JSONValue]?
    /// UNIX seconds.
    public var staleDate: Int64?
    /// UNIX seconds.
    public var dismissalDate: Int64?
    public var relevanceScore: Double?
    public var attributesType: String?
    public var attributes: [String: JSONValue]?

    public init(
        contentState: [String: JSONValue]? = nil, staleDate: Int64? = nil, dismissalDate: Int64? = nil,
        relevanceScore: Double? = nil, attributesType: String? = nil, attributes: [String: JSONValue]? = nil
    ) {
        self.contentState = contentState
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.attributesType = attributesType
        self.attributes = attributes
    }

    /// Writes its `aps` keys.
    public func write(into aps: inout APS) {
        aps.contentState = contentState
        aps.staleDate = staleDate
        aps.dismissalDate = dismissalDate
        aps.relevanceScore = relevanceScore
        aps.attributesType = attributesType
        aps.attributes = attributes
    }

    /// Reads its `aps` keys.
    public init(aps: APS) {
        self.init(
            contentState: aps.contentState, staleDate: aps.staleDate, dismissalDate: aps.dismissalDate,
            relevanceScore: aps.relevanceScore, attributesType: aps.attributesType, attributes: aps.attributes)
    }
}
