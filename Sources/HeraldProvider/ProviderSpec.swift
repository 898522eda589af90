import Foundation
import HeraldCore
import HeraldProviderAPI

/// The REST API's rules as `openapi.yaml` states them, enforced before the generated code decodes a
/// request: each operation's query parameters (unknown ones refused, numbers checked) and its JSON
/// body (read strictly, RFC 8259, by ``JSONReader``; then `type`, `required`, `enum`, `minimum`,
/// `maximum`, `items`, `properties`, `additionalProperties`, `allOf`, `oneOf` and `$ref` checked).
/// The errors name the field and what it must be, so that the spec, not Foundation's decoder,
/// decides what a client is told.
public struct ProviderSpec: Sendable {
    public struct Operation: Sendable {
        public var queryParameters: [String: JSONValue]
        public var body: JSONValue?
        /// `requestBody.required`: an operation whose body is optional takes none at all.
        public var bodyRequired = true
    }

    public let operations: [String: Operation]
    private let schemas: [String: JSONValue]

    /// The spec the server was generated from.
    public static let current: ProviderSpec = {
        do { return try ProviderSpec(document: Array(OpenAPIDocument.json.utf8)) } catch {
            fatalError("the committed OpenAPI document does not parse: \(error)")
        }
    }()

    public init(document: [UInt8]) throws {
        let root = JSONValue.object(try JSONReader.parseObject(document, limits: .init(maximumBytes: 4 << 20, maximumDepth: 64)))
        let components = root["components"]
        var schemas: [String: JSONValue] = [:]
        if case .object(let named)? = components?["schemas"] { schemas = named }
        var parameters: [String: JSONValue] = [:]
        if case .object(let named)? = components?["parameters"] { parameters = named }
        func resolve(_ parameter: JSONValue) -> JSONValue {
            if let ref = parameter["$ref"]?.stringValue, let name = ref.split(separator: "/").last { return parameters[String(name)] ?? parameter }
            return parameter
        }
        var operations: [String: Operation] = [:]
        if case .object(let paths)? = root["paths"] {
            for case .object(let item) in paths.values {
                let shared = item["parameters"]?.arrayValue ?? []
                for (method, operation) in item where method != "parameters" {
                    guard let id = operation["operationId"]?.stringValue else { continue }
                    var query: [String: JSONValue] = [:]
                    for parameter in (shared + (operation["parameters"]?.arrayValue ?? [])).map(resolve)
                    where parameter["in"]?.stringValue == "query" {
                        if let name = parameter["name"]?.stringValue { query[name] = parameter["schema"] ?? .object([:]) }
                    }
                    operations[id] = Operation(
                        queryParameters: query, body: operation["requestBody"]?["content"]?["application/json"]?["schema"],
                        bodyRequired: operation["requestBody"]?["required"] == .bool(true))
                }
            }
        }
        self.operations = operations
        self.schemas = schemas
    }

    /// Refuses a query parameter `operationID` does not take (naming those it does) and a value
    /// its schema does not allow. `pairs` are the query's parameters, percent-decoded.
    public func checkQuery(_ operationID: String, _ pairs: [(name: String, value: String)]) throws(ProviderError) {
        let known = operations[operationID]?.queryParameters ?? [:]
        for (name, text) in pairs {
            guard let schema = known[name] else {
                throw ProviderError(
                    .invalid, "unknown parameter \(name.prefix(64))" + (known.isEmpty ? "" : "; this list takes \(known.keys.sorted().joined(separator: ", "))"))
            }
            let value: JSONValue
            switch schema["type"]?.stringValue {
            case "integer":
                guard let integer = Int64(text) else { throw ProviderError(.invalid, "\(name) must be an integer, not \"\(text.prefix(64))\"") }
                value = .int(integer)
            case "number":
                guard let number = Double(text), number.isFinite else { throw ProviderError(.invalid, "\(name) must be a number, not \"\(text.prefix(64))\"") }
                value = .double(number)
            default:
                value = .string(text)
            }
            try check(value, against: schema, at: name, quoted: false)
        }
    }

    /// Reads `operationID`'s JSON body strictly and checks it against its schema.
    public func checkBody(_ operationID: String, _ bytes: [UInt8]) throws(ProviderError) {
        guard let operation = operations[operationID], let schema = operation.body else { return }
        if bytes.isEmpty, !operation.bodyRequired { return }
        let value: JSONValue
        do { value = try JSONReader.parse(bytes) } catch {
            throw ProviderError(.invalid, "the body must be a JSON object (RFC 8259): \(error)")
        }
        guard case .object = value else { throw ProviderError(.invalid, "the body must be a JSON object (RFC 8259)") }
        try check(value, against: schema, at: "", quoted: true)
    }

    private func resolved(_ schema: JSONValue) -> JSONValue {
        if let ref = schema["$ref"]?.stringValue, let name = ref.split(separator: "/").last, let target = schemas[String(name)] {
            return resolved(target)
        }
        return schema
    }

    private static func typeName(_ type: String) -> String {
        switch type {
        case "integer": return "an integer"
        case "number": return "a number"
        case "string": return "a string"
        case "boolean": return "true or false"
        case "array": return "an array"
        case "object": return "an object"
        case "null": return "null"
        default: return type
        }
    }

    private static func matches(_ value: JSONValue, type: String) -> Bool {
        switch (type, value) {
        case ("string", .string), ("boolean", .bool), ("array", .array), ("object", .object), ("null", .null): return true
        case ("integer", _): return value.integer(Int64.self) != nil
        case ("number", .int), ("number", .double): return true
        default: return false
        }
    }

    /// The types a schema allows, when it says (`type`, or a `oneOf` of types).
    private func types(of schema: JSONValue) -> [String]? {
        if let type = schema["type"]?.stringValue { return [type] }
        if let list = schema["type"]?.arrayValue { return list.compactMap(\.stringValue) }
        if let options = schema["oneOf"]?.arrayValue {
            let each = options.map { types(of: resolved($0)) }
            guard each.allSatisfy({ $0 != nil }) else { return nil }
            return each.flatMap { $0! }
        }
        return nil
    }

    private func check(_ value: JSONValue, against schema: JSONValue, at path: String, quoted: Bool) throws(ProviderError) {
        let schema = resolved(schema)
        let field = quoted ? "\"\(path)\"" : path
        func fail(_ what: String) -> ProviderError { ProviderError(.invalid, path.isEmpty ? "the body \(what)" : "\(field) \(what)") }
        for part in schema["allOf"]?.arrayValue ?? [] { try check(value, against: part, at: path, quoted: quoted) }
        if let allowed = types(of: schema), !allowed.contains(where: { Self.matches(value, type: $0) }) {
            let names = allowed.map(Self.typeName)
            throw fail("must be \(names.count > 1 ? names.dropLast().joined(separator: ", ") + " or " + names.last! : names[0])")
        }
        if let options = schema["enum"]?.arrayValue, !options.contains(value) {
            let list = options.map { $0.stringValue ?? "\($0)" }.joined(separator: ", ")
            throw fail("must be one of \(list)")
        }
        if let number = value.finiteDouble {
            let minimum = schema["minimum"]?.finiteDouble, maximum = schema["maximum"]?.finiteDouble
            let above = schema["exclusiveMinimum"]?.finiteDouble
            func show(_ bound: Double) -> String { bound == bound.rounded() && abs(bound) < 1e15 ? String(Int64(bound)) : String(bound) }
            if let minimum, number < minimum { throw fail("must be at least \(show(minimum))" + (maximum.map { " and at most \(show($0))" } ?? "")) }
            if let maximum, number > maximum { throw fail("must be at most \(show(maximum))" + (minimum.map { " and at least \(show($0))" } ?? "")) }
            if let above, number <= above { throw fail("must be more than \(show(above))") }
        }
        func child(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
        switch value {
        case .object(let object):
            for case .string(let key) in schema["required"]?.arrayValue ?? [] where object[key] == nil {
                throw ProviderError(.invalid, quoted ? "\"\(child(key))\" is required" : "\(child(key)) is required")
            }
            var properties: [String: JSONValue] = [:]
            if case .object(let declared)? = schema["properties"] { properties = declared }
            for (key, item) in object {
                if let property = properties[key] {
                    try check(item, against: property, at: child(key), quoted: quoted)
                } else if let extra = schema["additionalProperties"], case .object = extra {
                    try check(item, against: extra, at: child(key), quoted: quoted)
                }
            }
        case .array(let items):
            if let itemSchema = schema["items"] {
                for (index, item) in items.enumerated() { try check(item, against: itemSchema, at: "\(path)[\(index)]", quoted: quoted) }
            }
        default:
            break
        }
    }
}
