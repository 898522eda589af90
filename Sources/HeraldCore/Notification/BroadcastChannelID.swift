import Foundation

/// A broadcast channel's id: base64 of 16 random bytes, as APNs's channel ids are.
public struct BroadcastChannelID: Sendable, Hashable, CustomStringConvertible {
    public let value: String

    public init?(_ value: String) {
        guard value.utf8.count == 24, let bytes = Data(base64Encoded: value), bytes.count == 16 else { return nil }
        self.value = value
    }

    /// A fresh random channel id.
    public static func random() -> BroadcastChannelID {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return BroadcastChannelID(Data(bytes).base64EncodedString())!
    }

    public var description: String { value }
}
