import Foundation
import HeraldCore

/// Alert localization on the device (reference user-notifications §10): `loc-key`/`loc-args`,
/// `title-loc-key`/`title-loc-args` and `subtitle-loc-key`/`subtitle-loc-args` resolved from the
/// app's `Localizable.strings` (Apple's format; `Localizable.json`, a flat object, too) for the
/// device's preferred language. `%@` takes the arguments in order, `%n$@` the n-th, `%%` is a
/// percent sign; a missing key shows the key itself.
public struct AlertLocalization: Sendable {
    /// The app's tables by language (`fr`, `fr-CA`, `Base`, …).
    public var tables: [String: [String: String]]

    public init(tables: [String: [String: String]]) { self.tables = tables }

    /// Loads `<language>.lproj/Localizable.strings` (or `.json`) from an app bundle directory.
    public static func load(bundle: String) throws -> AlertLocalization {
        var tables: [String: [String: String]] = [:]
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: bundle)) ?? []
        for entry in entries where entry.hasSuffix(".lproj") {
            let language = String(entry.dropLast(".lproj".count))
            let directory = (bundle as NSString).appendingPathComponent(entry)
            let strings = (directory as NSString).appendingPathComponent("Localizable.strings")
            let json = (directory as NSString).appendingPathComponent("Localizable.json")
            if let data = FileManager.default.contents(atPath: strings) {
                do { tables[language] = try StringsFile.parse(data) } catch {
                    throw StringsFile.ParseError("\(strings): \(error)")
                }
            } else if let data = FileManager.default.contents(atPath: json) {
                let object: [String: JSONValue]
                do { object = try JSONReader.parseObject(data, limits: JSONLimits(maximumBytes: 16 << 20, maximumDepth: 1)) } catch {
                    throw StringsFile.ParseError("\(json): not a JSON object of strings (\(error))")
                }
                var table: [String: String] = [:]
                for (key, value) in object {
                    guard let text = value.stringValue else { throw StringsFile.ParseError("\(json): \"\(key)\" is not a string") }
                    table[key] = text
                }
                tables[language] = table
            }
        }
        return AlertLocalization(tables: tables)
    }

    /// The table for the first preferred language the app has (exactly, then its base language,
    /// e.g. `fr-CA` → `fr`), else `Base`, else `en`.
    public func table(for preferredLanguages: [String]) -> [String: String] {
        for language in preferredLanguages {
            if let table = tables[language] { return table }
            let base = String(language.split(whereSeparator: { $0 == "-" || $0 == "_" }).first ?? "")
            if let table = tables[base] { return table }
        }
        return tables["Base"] ?? tables["en"] ?? [:]
    }

    /// The text for a key: the format from the table (or the key itself when missing) with the arguments.
    public func text(key: String, arguments: [String], preferredLanguages: [String]) -> String {
        Self.format(table(for: preferredLanguages)[key] ?? key, arguments)
    }

    /// Substitutes the arguments into a format (``LocalizedFormat/format(_:_:)``).
    public static func format(_ format: String, _ arguments: [String]) -> String { LocalizedFormat.format(format, arguments) }
}

/// Apple's `.strings` format: `"key" = "value";` pairs, `/* */` and `//` comments, escapes
/// `\"`, `\\`, `\n`, `\t`, `\r`, `\Uxxxx`; unquoted keys and values of letters, digits and `_.-`;
/// UTF-8, or UTF-16 with a byte-order mark.
public enum StringsFile {
    public struct ParseError: Error, Sendable, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }

    public static func parse(_ data: Data) throws -> [String: String] {
        let text: String
        if data.starts(with: [0xFF, 0xFE]) || data.starts(with: [0xFE, 0xFF]) {
            guard let decoded = String(data: data, encoding: .utf16) else { throw ParseError("invalid UTF-16") }
            text = decoded
        } else {
            guard let decoded = String(data: data, encoding: .utf8) else { throw ParseError("not UTF-8 (or UTF-16 with a byte-order mark)") }
            text = decoded.hasPrefix("\u{FEFF}") ? String(decoded.dropFirst()) : decoded
        }
        var scanner = Scanner(chars: Array(text.unicodeScalars))
        var table: [String: String] = [:]
        while true {
            try scanner.skipSpaceAndComments()
            if scanner.atEnd { break }
            let key = try scanner.token()
            try scanner.skipSpaceAndComments()
            if scanner.peek == ";" {  // `"key";` means the key is its own value
                scanner.advance()
                table[key] = key
                continue
            }
            try scanner.expect("=")
            try scanner.skipSpaceAndComments()
            let value = try scanner.token()
            try scanner.skipSpaceAndComments()
            try scanner.expect(";")
            table[key] = value
        }
        return table
    }

    private struct Scanner {
        var chars: [Unicode.Scalar]
        var i = 0
        var line = 1
        var atEnd: Bool { i >= chars.count }
        var peek: Unicode.Scalar? { atEnd ? nil : chars[i] }
        mutating func advance() {
            if chars[i] == "\n" { line += 1 }
            i += 1
        }

        mutating func skipSpaceAndComments() throws {
            while let c = peek {
                if c.properties.isWhitespace { advance(); continue }
                if c == "/", i + 1 < chars.count, chars[i + 1] == "*" {
                    let start = line
                    i += 2
                    while !atEnd, !(chars[i] == "*" && i + 1 < chars.count && chars[i + 1] == "/") { advance() }
                    guard !atEnd else { throw ParseError("line \(start): a comment that never ends") }
                    i += 2
                    continue
                }
                if c == "/", i + 1 < chars.count, chars[i + 1] == "/" {
                    while let d = peek, d != "\n" { advance() }
                    continue
                }
                return
            }
        }

        mutating func expect(_ c: Unicode.Scalar) throws {
            guard peek == c else {
                throw ParseError("line \(line): expected \"\(c)\"\(peek.map { ", found \"\($0)\"" } ?? " before the end")")
            }
            advance()
        }

        mutating func token() throws -> String {
            guard let c = peek else { throw ParseError("line \(line): expected a string before the end") }
            if c == "\"" { return try quoted() }
            var out = String.UnicodeScalarView()
            while let d = peek, d.properties.isAlphabetic || ("0"..."9").contains(d) || "_.-:$".unicodeScalars.contains(d) {
                out.append(d)
                advance()
            }
            guard !out.isEmpty else { throw ParseError("line \(line): expected a quoted string, found \"\(c)\"") }
            return String(out)
        }

        mutating func quoted() throws -> String {
            let start = line
            advance()
            var out = String.UnicodeScalarView()
            while let c = peek {
                advance()
                switch c {
                case "\"": return String(out)
                case "\\":
                    guard let e = peek else { break }
                    advance()
                    switch e {
                    case "n": out.append("\n")
                    case "t": out.append("\t")
                    case "r": out.append("\r")
                    case "U", "u":
                        var hex = ""
                        while hex.count < 4, let h = peek, h.properties.isASCIIHexDigit { hex.unicodeScalars.append(h); advance() }
                        guard let value = UInt32(hex, radix: 16), let scalar = Unicode.Scalar(value) else {
                            throw ParseError("line \(line): \\U needs four hexadecimal digits")
                        }
                        out.append(scalar)
                    default: out.append(e)
                    }
                default: out.append(c)
                }
            }
            throw ParseError("line \(start): a string that never ends")
        }
    }
}
