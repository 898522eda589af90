/// The formats of localized alert strings (`Localizable.strings` values, provider templates):
/// one implementation for the device, which localizes `loc-key`/`loc-args`, and the provider,
/// which localizes its own templates.
public enum LocalizedFormat {
    /// A `loc-args`/template argument as text: strings as they are, whole numbers without a
    /// fraction, other numbers as Swift prints them, anything else empty.
    public static func argument(_ value: JSONValue) -> String {
        if let text = value.stringValue { return text }
        if let integer = value.integer(Int64.self) { return String(integer) }
        guard let number = value.finiteDouble else { return "" }
        return String(number)
    }

    /// Substitutes `%@`, `%n$@` (and `%d`/`%i`/`%s`-style specifiers, which APNs arguments, being
    /// strings, fill the same way) and `%%`. A specifier without an argument becomes empty.
    public static func format(_ format: String, _ arguments: [String]) -> String {
        var result = ""
        scan(format, literal: { result += $0 }, argument: { index in
            if index >= 0 && index < arguments.count { result += arguments[index] }
        })
        return result
    }

    /// How many arguments `format` takes: its sequential specifiers, or its highest `%n$`
    /// position, whichever is more (`"%@ and %@"` 2, `"%2$@ %1$@"` 2, `"100%%"` 0).
    public static func argumentCount(_ format: String) -> Int {
        var count = 0
        scan(format, literal: { _ in }, argument: { index in count = max(count, index + 1) })
        return count
    }

    /// Walks a format: `literal` gets the text between specifiers (`%%` as `%`), `argument` the
    /// zero-based index each specifier takes.
    private static func scan(_ format: String, literal: (Substring) -> Void, argument: (Int) -> Void) {
        var next = 0
        var chars = format[...]
        while let percent = chars.firstIndex(of: "%") {
            literal(chars[..<percent])
            chars = chars[chars.index(after: percent)...]
            if chars.first == "%" {
                literal("%")
                chars = chars.dropFirst()
                continue
            }
            var position: Int?
            let digits = chars.prefix(while: { $0.isASCII && $0.isNumber })
            if !digits.isEmpty, chars.dropFirst(digits.count).first == "$" {
                position = Int(digits)
                chars = chars.dropFirst(digits.count + 1)
            }
            // Length modifiers, then the conversion.
            chars = chars.drop(while: { "lhqLzjt".contains($0) })
            guard let conversion = chars.first, "@dDiuUxXoOfeEgGcCsSp".contains(conversion) else {
                literal("%")
                continue
            }
            chars = chars.dropFirst()
            if let position { argument(position - 1) } else {
                argument(next)
                next += 1
            }
        }
        literal(chars)
    }
}
