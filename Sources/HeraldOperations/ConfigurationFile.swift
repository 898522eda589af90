import CYaml
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
    /// Any anchor or alias is refused first, from the parser's events: a settings file needs
    /// none, and expanding them (or hashing a key that is an alias) is how a few hundred bytes
    /// ("billion laughs") become gigabytes or minutes. Then the file is composed into YAML
    /// nodes and checked node by node; nothing is constructed from it. Every refusal names the
    /// file and the line.
    public static func parse(_ text: String, keys: [String: Key], command: String, source: String) throws(Refusal) -> [String: Setting] {
        guard text.utf8.count <= maximumBytes else { throw Refusal(description: "--config \(source) is larger than 1 MiB") }
        // Anchors and aliases first, from libyaml's events, before Yams composes anything: a
        // complex key that is an alias would be hashed through every level it refers to.
        if let (line, name) = Self.firstAnchorOrAlias(text) {
            throw Refusal(description: "--config \(source) line \(line): the anchor or alias \"\(name.prefix(64))\"; a settings file takes no anchors or aliases (write each value out)")
        }
        // The parser stays alive while its nodes are read.
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
        guard let root else { return [:] }
        // What a scalar is, as YAML reads it (the tag written, else the resolver's rules).
        func kind(_ node: Node) -> Tag.Name { parser.resolver.resolveTag(of: node) }
        if case .scalar = root, kind(root) == .null { return [:] }
        guard case .mapping(let mapping) = root else {
            throw refuse(root, "the file must be a mapping of settings (key: value)")
        }
        var values: [String: Setting] = [:]
        for (keyNode, value) in mapping {
            let line = keyNode.mark?.line ?? 0
            guard case .scalar(let keyScalar) = keyNode else { throw refuse(keyNode, "a key must be a flag's name") }
            let name = keyScalar.string
            guard let key = keys[name], !reservedKeys.contains(name) else {
                let known = keys.keys.filter { !reservedKeys.contains($0) }.sorted()
                throw refuse(keyNode, "unknown key \"\(name.prefix(64))\"; herald \(command) takes \(known.joined(separator: ", "))")
            }
            func scalar(_ item: Node) throws(Refusal) -> String {
                guard case .scalar(let scalar) = item, let text = Self.text(of: scalar, kind: kind(item)) else {
                    throw refuse(item, "key \"\(name)\" must be a string, a number or true/false")
                }
                return text
            }
            if !key.takesValue {
                guard case .scalar(let flag) = value, kind(value) == .bool, let bool = Bool.construct(from: flag) else {
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

    /// The line (from 1) and name of the first anchor or alias in `text`, read as libyaml's
    /// event stream (linear in the text: an alias is one event, never followed); nil when there
    /// is none or the text is not YAML (composing it says why).
    static func firstAnchorOrAlias(_ text: String) -> (line: Int, name: String)? {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { return nil }
        defer { yaml_parser_delete(&parser) }
        let bytes = Array(text.utf8)
        return bytes.withUnsafeBufferPointer { buffer -> (line: Int, name: String)? in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            while true {
                var event = yaml_event_t()
                guard yaml_parser_parse(&parser, &event) == 1 else { return nil }
                defer { yaml_event_delete(&event) }
                let anchor: UnsafeMutablePointer<yaml_char_t>? = switch event.type {
                case YAML_ALIAS_EVENT: event.data.alias.anchor
                case YAML_SCALAR_EVENT: event.data.scalar.anchor
                case YAML_SEQUENCE_START_EVENT: event.data.sequence_start.anchor
                case YAML_MAPPING_START_EVENT: event.data.mapping_start.anchor
                default: nil
                }
                if let anchor {
                    return (Int(event.start_mark.line) + 1, String(cString: anchor))
                }
                if event.type == YAML_STREAM_END_EVENT { return nil }
            }
        }
    }

    /// A scalar as a flag would be given it: a string as written, a number and true/false as
    /// YAML reads them (`0x1F` is 31, `yes` is not a switch's value); nil for null and anything else.
    private static func text(of scalar: Node.Scalar, kind: Tag.Name) -> String? {
        switch kind {
        case .str: return scalar.string
        case .int: return Int.construct(from: scalar).map { String($0) }
        case .float: return Double.construct(from: scalar).map { String($0) }
        case .bool: return Bool.construct(from: scalar).map { String($0) }
        default: return nil
        }
    }
}
