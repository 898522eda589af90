/// Compares a secret a peer presents with the one expected, in time that depends only on their
/// lengths, never on where they first differ (bearer tokens, enrollment secrets).
public enum SecretComparison {
    public static func equal(_ given: some StringProtocol, _ expected: some StringProtocol) -> Bool {
        let x = Array(given.utf8), y = Array(expected.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<min(x.count, y.count) { difference |= x[i] ^ y[i] }
        return difference == 0
    }
}
