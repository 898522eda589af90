import Foundation

/// Whether bytes are one well-formed JSON object (Foundation's parser reads the whole document).
enum JSONObjectSyntax {
    private struct AnyObject: Decodable {
        private struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init?(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }
        init(from decoder: Decoder) throws { _ = try decoder.container(keyedBy: Key.self) }
    }

    static func isObject(_ bytes: [UInt8]) -> Bool {
        (try? JSONDecoder().decode(AnyObject.self, from: Data(bytes))) != nil
    }
}
