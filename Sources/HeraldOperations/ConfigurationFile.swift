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

    /// One key of the file: its values as the flags would be given them, and the line it is on.
    public struct Setting: Sendable, Equatable {
        public var values: [String]
        public var line: Int
    }

    /// Keys never taken from a file: they are about the command line itself.
    public static let reservedKeys: Set<String> = ["config", "print-config", "help", "version"]

    /// A file refused, in words that name the file, the key and what to write instead.
    public struct Refusal: Error, CustomStringConvertible, Equatable {
        public var description: String
    }

    /// Reads the text of the file at `source` (its name, for messages) against the command's
    /// `keys`: each key's values as the flags would be given them. An empty file sets nothing.
    ///
    /// The file is composed into YAML nodes and checked node by node; nothing is constructed
    /// from it. Anchors and aliases are refused where they stand: a settings file needs none, and
    /// expanding them first is how a few hundred bytes ("billion laughs") become gigabytes.
    /// Every refusal names the file and the line.
    public static func parse(_ text: String, keys: [String: Key], command: String, source: String) throws(Refusal) -> [String: Setting] {
        guard text.utf8.count <= maximumBytes else { throw Refusal(description: "--config \(source) is larger than 1 MiB") }
        // The parser stays alive while its nodes are read: it owns their anchors.
        let parser: Parser
        let root: Node?
        do {
            parser = try Parser(yaml: text)
            root = try parser.singleRoot()
        } catch {
            throw Refusal(description: "--config \(source) is not YAML: \(error)")
        }
        func refuse(_ node: Node?, _ message: String) -> Refusal {
            let line = node?.mark.map { " line \($0.line)" } ?? ""
            return Refusal(description: "--config \(source)\(line): \(message)")
        }
        func checkNoAnchor(_ node: Node, _ name: String) throws(Refusal) {
            if let anchor = node.anchor {
                throw refuse(node, "key \"\(name.prefix(64))\" uses the anchor or alias \"\(anchor.rawValue.prefix(64))\"; a settings file takes no anchors or aliases (write the value out)")
            }
        }
        guard let root else { return [:] }
        if case .scalar(let scalar) = root, scalar.tag.rawValue == Tag.Name.null.rawValue { return [:] }
        guard case .mapping(let mapping) = root else {
            throw refuse(root, "the file must be a mapping of settings (key: value)")
        }
        try checkNoAnchor(root, "(the file)")
        var values: [String: Setting] = [:]
        for (keyNode, value) in mapping {
            let line = keyNode.mark?.line ?? 0
            guard case .scalar(let keyScalar) = keyNode else { throw refuse(keyNode, "a key must be a flag's name") }
            try checkNoAnchor(keyNode, keyScalar.string)
            let name = keyScalar.string
            guard let key = keys[name], !reservedKeys.contains(name) else {
                let known = keys.keys.filter { !reservedKeys.contains($0) }.sorted()
                throw refuse(keyNode, "unknown key \"\(name.prefix(64))\"; herald \(command) takes \(known.joined(separator: ", "))")
            }
            try checkNoAnchor(value, name)
            func scalar(_ item: Node) throws(Refusal) -> String {
                try checkNoAnchor(item, name)
                guard case .scalar(let scalar) = item, let text = Self.text(of: scalar) else {
                    throw refuse(item, "key \"\(name)\" must be a string, a number or true/false")
                }
                return text
            }
            if !key.takesValue {
                guard case .scalar(let flag) = value, flag.tag.rawValue == Tag.Name.bool.rawValue, let bool = Bool.construct(from: flag) else {
                    throw refuse(value, "key \"\(name)\" is a switch: true or false")
                }
                values[name] = Setting(values: [String(bool)], line: line)
            } else if case .sequence(let list) = value {
                guard key.repeating else { throw refuse(value, "key \"\(name)\" takes one value, not a list") }
                var items: [String] = []
                for item in list { items.append(try scalar(item)) }
                values[name] = Setting(values: items, line: line)
            } else {
                values[name] = Setting(values: [try scalar(value)], line: line)
            }
        }
        return values
    }

    /// A scalar as a flag would be given it: a string as written, a number and true/false as
    /// YAML reads them (`0x1F` is 31, `yes` is not a switch's value); nil for null and anything else.
    private static func text(of scalar: Node.Scalar) -> String? {
        switch Tag.Name(rawValue: scalar.tag.rawValue) {
        case .str: return scalar.string
        case .int: return Int.construct(from: scalar).map { String($0) }
        case .float: return Double.construct(from: scalar).map { String($0) }
        case .bool: return Bool.construct(from: scalar).map { String($0) }
        default: return nil
        }
    }
}
