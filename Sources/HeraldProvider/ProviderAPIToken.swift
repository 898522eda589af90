import Foundation

/// The bearer token of the provider service's REST API: read from a file, or created at first
/// start as `DIR/api-token` (32 random bytes in hex, mode 0600).
public enum ProviderAPIToken {
    /// The file `herald provider` creates in its data directory when no token file is named.
    public static func defaultPath(in directory: String) -> String {
        (directory as NSString).appendingPathComponent("api-token")
    }

    /// Reads the token in `path`; creates it first when `create` is set and the file is missing.
    public static func load(path: String, create: Bool) throws -> String {
        let manager = FileManager.default
        if !manager.fileExists(atPath: path) {
            guard create else { throw ProviderTokenFileError("\(path) does not exist: write a token into it, or leave out --api-token-file") }
            try manager.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            var bytes = [UInt8](repeating: 0, count: 32)
            var generator = SystemRandomNumberGenerator()
            for i in bytes.indices { bytes[i] = generator.next() }
            let token = bytes.map { String(format: "%02x", $0) }.joined()
            guard manager.createFile(atPath: path, contents: Data((token + "\n").utf8), attributes: [.posixPermissions: 0o600]) else {
                throw ProviderTokenFileError("cannot create \(path)")
            }
            return token
        }
        guard let data = manager.contents(atPath: path), data.count <= 4096 else {
            throw ProviderTokenFileError("cannot read \(path) (or it is larger than 4096 bytes)")
        }
        let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard token.count >= 16, token.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
            throw ProviderTokenFileError("\(path) must hold one token of at least 16 printable ASCII characters")
        }
        return token
    }
}

/// An API token file that cannot be used, in words.
public struct ProviderTokenFileError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
