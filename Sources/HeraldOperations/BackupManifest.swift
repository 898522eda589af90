import HeraldCore

/// What a backup directory lists (`herald backup`, `herald restore`): every file it holds, with
/// its size, mode and SHA-256. Written as `MANIFEST.json` at the backup's top.
public struct BackupManifest: Codable, Sendable, Equatable {
    public struct File: Codable, Sendable, Equatable {
        public var path: String
        public var bytes: Int
        public var mode: Int
        public var sha256: String
        /// Where a file from outside the data directory came from (the gateway's `--tls-cert`
        /// and `--tls-key`): an absolute path that `herald restore` puts it back at. Absent for
        /// the data directory's own files.
        public var origin: String?

        public init(path: String, bytes: Int, mode: Int, sha256: String, origin: String? = nil) {
            self.path = path
            self.bytes = bytes
            self.mode = mode
            self.sha256 = sha256
            self.origin = origin
        }
    }
    public var format = 1
    public var created: String
    public var files: [File]

    public init(created: String, files: [File]) {
        self.created = created
        self.files = files
    }

    public static let name = "MANIFEST.json"
    /// A manifest is small; a larger file is not one.
    public static let maximumBytes = 1 << 20

    /// A manifest refused, in words naming the file (`source`) and what is wrong.
    public struct Refusal: Error, CustomStringConvertible, Equatable {
        public var description: String
    }

    /// Reads a manifest's bytes (bounded, strict JSON) and checks what can be checked without
    /// the files: its format, that it lists the store, and that every path stays inside the
    /// backup (relative, no `.`, `..` or empty parts, at most 1,024 bytes) with a mode of 0 to
    /// 0o777. `source` names the file in messages.
    public static func read(_ bytes: [UInt8], source: String) throws(Refusal) -> BackupManifest {
        guard bytes.count <= maximumBytes else { throw Refusal(description: "\(source) is larger than 1 MiB: it is not a herald backup manifest") }
        let manifest: BackupManifest
        do { manifest = try JSONReader.decode(BackupManifest.self, from: bytes) } catch {
            throw Refusal(description: "\(source) is not a herald backup manifest: \(error)")
        }
        guard manifest.format == 1 else { throw Refusal(description: "\(source) is backup format \(manifest.format); this herald reads format 1") }
        guard manifest.files.contains(where: { $0.path == "herald.sqlite" }) else { throw Refusal(description: "\(source) lists no herald.sqlite") }
        for file in manifest.files {
            let parts = file.path.split(separator: "/", omittingEmptySubsequences: false)
            guard !file.path.hasPrefix("/"), !parts.contains(where: { $0 == ".." || $0 == "." || $0.isEmpty }), file.path.utf8.count <= 1_024,
                  (0...0o777).contains(file.mode), file.bytes >= 0 else {
                throw Refusal(description: "\(source) lists \"\(file.path.prefix(80))\": a backup's files stay inside it, with a mode of 0 to 777 (octal)")
            }
            if let origin = file.origin {
                let originParts = origin.split(separator: "/", omittingEmptySubsequences: true)
                guard origin.hasPrefix("/"), origin.utf8.count <= 4_096, !originParts.isEmpty,
                      !originParts.contains(where: { $0 == ".." || $0 == "." }), !origin.utf8.contains(0) else {
                    throw Refusal(description: "\(source) lists \"\(file.path.prefix(80))\" from \"\(origin.prefix(80))\": a file's origin is an absolute path without . or .. parts")
                }
            }
        }
        return manifest
    }
}
