import ArgumentParser
import Foundation

/// A device enrollment secret kept in a file (`herald gateway --enrollment-secret-file`,
/// `herald device run --enrollment-secret-file`): one line of 16 to 1,024 printable characters.
enum EnrollmentSecret {
    static func read(_ path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path), data.count <= 4_096 else {
            throw ValidationError("cannot read the enrollment secret file \(path) (or it is larger than 4096 bytes)")
        }
        let secret = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard (16...1_024).contains(secret.utf8.count), secret.allSatisfy({ $0.isASCII && !$0.isWhitespace }) else {
            throw ValidationError("\(path) must hold one secret of 16 to 1024 printable ASCII characters, without spaces")
        }
        return secret
    }
}
