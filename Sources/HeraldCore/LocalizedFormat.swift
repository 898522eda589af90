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
        var next = 0
        var chars = format[...]
        while let percent = chars.firstIndex(of: "%") {
            result += chars[..<percent]
            chars = chars[chars.index(after: percent)...]
            if chars.first == "%" {
                result += "%"
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
                result += "%"
                continue
            }
            chars = chars.dropFirst()
            let index: Int
            if let position { index = position - 1 } else { index = next; next += 1 }
            if index >= 0 && index < arguments.count { result += arguments[index] }
        }
        result += chars
        return result
    }
}
