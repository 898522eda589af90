/// How urgently a notification goes out: 10 now, 5 with regard to the device's power, 1 never
/// waking it. The APNs port reads it from the `apns-priority` header, whose values these are.
public struct Priority: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: Int

    /// Returns `nil` for any value other than 10, 5 or 1.
    public init?(rawValue: Int) {
        guard rawValue == 10 || rawValue == 5 || rawValue == 1 else { return nil }
        self.rawValue = rawValue
    }

    private init(known: Int) { rawValue = known }

    /// 10: deliver immediately (the default when the header is absent).
    public static let immediate = Priority(known: 10)
    /// 5: deliver with regard to the device's power; may be grouped and throttled.
    public static let conservePower = Priority(known: 5)
    /// 1: power over everything; never wakes the device.
    public static let low = Priority(known: 1)

    /// Parses the header value exactly: `"10"`, `"5"` or `"1"`.
    public init?(header: String) {
        guard let value = Int(header) else { return nil }
        self.init(rawValue: value)
    }

    public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rawValue < rhs.rawValue }
    public var description: String { String(rawValue) }
}
