import Yams

/// What operators hand the long-running commands besides flags: the YAML file of
/// `--config FILE.yaml` (docs/configuration.md). Its keys are the command's flags' long names; a
/// value is a string, a number or true/false, and a list for a repeatable flag.
public enum ConfigurationFile {
    /// A file is at most this large (a larger one is refused before it is read).
    public static let maximumBytes = 1 << 20

    /// What a key of the file may be: one of the command's flags.
    public struct Key: Sendable, Hashable {
        public var takesValue: Bool
        public var repeating: Bool
        public init(takesValue: Bool, repeating: Bool) {
            self.takesValue = takesValue
            self.repeating = repeating
        }
    }

    /// Keys never taken from a file: they are about the command line itself.
    public static let reservedKeys: Set<String> = ["config", "print-config", "help", "version"]

    /// A file refused, in words that name the file, the key and what to write instead.
    public struct Refusal: Error, CustomStringConvertible, Equatable {
        public var description: String
    }

    /// Reads the text of the file at `source` (its name, for messages) against the command's
    /// `keys`: each key's values as the flags would be given them. An empty file sets nothing.
    public static func parse(_ text: String, keys: [String: Key], command: String, source: String) throws(Refusal) -> [String: [String]] {
        guard text.utf8.count <= maximumBytes else { throw Refusal(description: "--config \(source) is larger than 1 MiB") }
        let document: Any?
        do { document = try Yams.load(yaml: text) } catch { throw Refusal(description: "--config \(source) is not YAML: \(error)") }
        guard let document else { return [:] }
        guard let mapping = document as? [String: Any] else {
            throw Refusal(description: "--config \(source): the file must be a mapping of settings (key: value)")
        }
        var values: [String: [String]] = [:]
        for (name, value) in mapping {
            guard let key = keys[name], !reservedKeys.contains(name) else {
                let known = keys.keys.filter { !reservedKeys.contains($0) }.sorted()
                throw Refusal(description: "--config \(source): unknown key \"\(name.prefix(64))\"; herald \(command) takes \(known.joined(separator: ", "))")
            }
            func scalar(_ item: Any) throws(Refusal) -> String {
                switch item {
                case let text as String: return text
                case let number as Int: return String(number)
                case let number as Double: return String(number)
                case let flag as Bool: return String(flag)
                default: throw Refusal(description: "--config \(source): key \"\(name)\" must be a string, a number or true/false")
                }
            }
            if !key.takesValue {
                guard let flag = value as? Bool else { throw Refusal(description: "--config \(source): key \"\(name)\" is a switch: true or false") }
                values[name] = [String(flag)]
            } else if let list = value as? [Any] {
                guard key.repeating else { throw Refusal(description: "--config \(source): key \"\(name)\" takes one value, not a list") }
                var items: [String] = []
                for item in list { items.append(try scalar(item)) }
                values[name] = items
            } else {
                values[name] = [try scalar(value)]
            }
        }
        return values
    }
}
