import Foundation

/// The URL Standard's host parser (§3.5): IPv6 in brackets, an opaque host for non-special
/// schemes, otherwise a domain (percent-decoded, then to ASCII) or an IPv4 address when it ends
/// in a number.
enum StandardURLHost {
    typealias Failure = StandardURL.Failure

    static func parse(_ input: [Unicode.Scalar], isOpaque: Bool) throws(Failure) -> StandardURL.Host {
        if input.first == "[" {
            guard input.last == "]", input.count >= 2 else { throw .init("an IPv6 address without its closing bracket") }
            return .ipv6(try parseIPv6(Array(input[1..<input.count - 1])))
        }
        if isOpaque {
            if let bad = input.first(where: \.isForbiddenHost) { throw .init("the host holds a forbidden code point (U+\(hex4(bad)))") }
            return .opaque(PercentEncodeSet.c0Control.encode(input))
        }
        let decoded = String(decoding: percentDecode(String(String.UnicodeScalarView(input))), as: UTF8.self)
        let ascii = try domainToASCII(decoded)
        if let bad = ascii.unicodeScalars.first(where: \.isForbiddenDomain) { throw .init("the host holds a forbidden code point (U+\(hex4(bad)))") }
        if endsInANumber(ascii) { return .ipv4(try parseIPv4(ascii)) }
        return .domain(ascii)
    }

    static func percentDecode(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == 0x25, index + 2 < bytes.count,
               let high = Unicode.Scalar(bytes[index + 1]).hexValue, let low = Unicode.Scalar(bytes[index + 2]).hexValue {
                out.append(UInt8(high << 4 | low))
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return out
    }

    private static func hex4(_ c: Unicode.Scalar) -> String {
        let digits = String(c.value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    // MARK: - Domain to ASCII

    /// Code points UTS #46 maps to nothing (soft hyphen, zero-width space and joiners' neighbours,
    /// variation selectors, the byte order mark).
    private static let ignored = Set<UInt32>([0xAD, 0x34F, 0x180B, 0x180C, 0x180D, 0x180E, 0x180F, 0x200B, 0x2060, 0x2064, 0xFEFF])
        .union(0xFE00...0xFE0F).union(0x206A...0x206F)

    /// Domain to ASCII with beStrict false: an ASCII domain is only lower-cased; otherwise each label is mapped (NFKC and lower case, UTS #46's mapping for
    /// most of Unicode), checked, and Punycode-encoded when it is not ASCII.
    static func domainToASCII(_ domain: String) throws(Failure) -> String {
        let labelsOf = { (text: String) in text.split(separator: ".", omittingEmptySubsequences: false).map(String.init) }
        // An ASCII domain is only lower-cased, `xn--` labels included: the Web Platform Tests
        // expect browsers to keep even Punycode that does not decode, or decodes to what a label
        // may not hold, as written (toascii.json: `xn--a`, `xn--zn7c.com`, `xn--ls8h=`).
        if domain.unicodeScalars.allSatisfy(\.isASCII) {
            return String(String.UnicodeScalarView(domain.unicodeScalars.map(\.asciiLowercased)))
        }
        // Ideographic and fullwidth full stops separate labels as "." does.
        var mapped = String.UnicodeScalarView()
        for c in domain.unicodeScalars where !ignored.contains(c.value) {
            if [0x3002, 0xFF0E, 0xFF61].contains(c.value) {
                mapped.append(".")
                continue
            }
            // A compatibility character that decomposes into ASCII punctuation (`‥` to `..`) is
            // disallowed by UTS #46 rather than mapped.
            if !c.isASCII, String(c).precomposedStringWithCompatibilityMapping.unicodeScalars.contains(where: { $0.isASCII && !$0.isASCIIAlpha && !$0.isASCIIDigit && $0 != "-" }) {
                throw .init("the host holds U+\(hex4(c)), which IDNA does not allow")
            }
            mapped.append(c)
        }
        let normalized = String(mapped).precomposedStringWithCompatibilityMapping.lowercased().precomposedStringWithCanonicalMapping
        var out: [String] = []
        for label in labelsOf(normalized) {
            if label.hasPrefix("xn--") {
                // Beside Unicode labels, a Punycode label that decodes must hold only what a
                // label may (toascii.json: `xn--a.ß` fails).
                guard label.unicodeScalars.allSatisfy(\.isASCII) else { throw .init("\"\(label)\" mixes Punycode and Unicode") }
                if let decoded = Punycode.decode(String(label.dropFirst(4))) { try checkLabel(decoded) }
                out.append(label)
            } else if label.unicodeScalars.allSatisfy(\.isASCII) {
                out.append(label)
            } else {
                try checkLabel(label)
                guard let encoded = Punycode.encode(label) else { throw .init("\"\(label)\" cannot be Punycode-encoded") }
                out.append("xn--" + encoded)
            }
        }
        let result = out.joined(separator: ".")
        guard !result.isEmpty else { throw .init("the host is empty after IDNA processing") }
        return result
    }

    /// What UTS #46 disallows that NFKC leaves: replacement characters, controls, spaces,
    /// unassigned and private-use code points, ideographic description characters, a label
    /// starting with a combining mark; the joiners outside their contexts (CheckJoiners: after
    /// a virama, or a non-joiner between two Arabic-script letters, an approximation of the
    /// joining-type rule); and a label mixing right-to-left script with left-to-right letters or
    /// not starting with it (CheckBidi, approximated by script ranges: Swift has no bidi class).
    private static func checkLabel(_ label: String) throws(Failure) {
        let scalars = Array(label.unicodeScalars)
        if let first = scalars.first, [.nonspacingMark, .spacingMark, .enclosingMark].contains(first.properties.generalCategory) {
            throw .init("the label \"\(label)\" starts with a combining mark")
        }
        for (index, c) in scalars.enumerated() {
            if c.value == 0x200C || c.value == 0x200D {
                let before = index > 0 ? scalars[index - 1] : nil
                if before?.properties.canonicalCombiningClass == .virama { continue }
                if c.value == 0x200C, let before, index + 1 < scalars.count, isRightToLeft(before), isRightToLeft(scalars[index + 1]),
                   before.properties.isAlphabetic, scalars[index + 1].properties.isAlphabetic { continue }
                throw .init("the host holds a joiner (U+\(hex4(c))) outside its context")
            }
            switch c.properties.generalCategory {
            case .control, .format, .unassigned, .privateUse, .surrogate, .spaceSeparator, .lineSeparator, .paragraphSeparator:
                throw .init("the host holds U+\(hex4(c)), which IDNA does not allow")
            default:
                if c.value == 0xFFFD { throw .init("the host holds U+FFFD (bytes that are not UTF-8)") }
                if (0x2FF0...0x2FFF).contains(c.value) { throw .init("the host holds U+\(hex4(c)), which IDNA does not allow") }
            }
        }
        if scalars.contains(where: isRightToLeft) {
            guard let first = scalars.first, isRightToLeft(first),
                  !scalars.contains(where: { !isRightToLeft($0) && $0.properties.isAlphabetic }) else {
                throw .init("the label \"\(label)\" mixes right-to-left and left-to-right text (RFC 5893)")
            }
        }
    }

    /// Hebrew, Arabic, Syriac, Thaana, NKo and their presentation forms and supplements.
    private static func isRightToLeft(_ c: Unicode.Scalar) -> Bool {
        switch c.value {
        case 0x0590...0x08FF, 0xFB1D...0xFDFF, 0xFE70...0xFEFF, 0x10800...0x10FFF, 0x1E800...0x1EFFF: true
        default: false
        }
    }

    // MARK: - IPv4

    static func endsInANumber(_ domain: String) -> Bool {
        var parts = domain.split(separator: ".", omittingEmptySubsequences: false)
        if parts.last?.isEmpty == true {
            if parts.count == 1 { return false }
            parts.removeLast()
        }
        guard let last = parts.last, !last.isEmpty else { return false }
        if last.unicodeScalars.allSatisfy(\.isASCIIDigit) { return true }
        return ipv4Number(Substring(last)) != nil
    }

    /// A part of an IPv4 address: decimal, `0x` hex or `0` octal; nil when it is not a number.
    /// A value too large for 64 bits reads as UInt64.max (it is out of range either way).
    static func ipv4Number(_ part: Substring) -> UInt64? {
        guard !part.isEmpty else { return nil }
        var text = part
        var radix: UInt64 = 10
        if text.hasPrefix("0x") || text.hasPrefix("0X") {
            text = text.dropFirst(2)
            radix = 16
        } else if text.count >= 2 && text.hasPrefix("0") {
            text = text.dropFirst()
            radix = 8
        }
        var value: UInt64 = 0
        for c in text.unicodeScalars {
            guard let digit = c.hexValue.map(UInt64.init), digit < radix, radix == 16 || c.isASCIIDigit else { return nil }
            let (times, overflow1) = value.multipliedReportingOverflow(by: radix)
            let (sum, overflow2) = times.addingReportingOverflow(digit)
            value = overflow1 || overflow2 ? UInt64.max : sum
        }
        return value
    }

    static func parseIPv4(_ text: String) throws(Failure) -> UInt32 {
        var parts = text.split(separator: ".", omittingEmptySubsequences: false)
        if parts.last?.isEmpty == true, parts.count > 1 { parts.removeLast() }
        guard parts.count <= 4 else { throw .init("an IPv4 address of more than four parts") }
        var numbers: [UInt64] = []
        for part in parts {
            guard let n = ipv4Number(part) else { throw .init("\"\(part)\" is not an IPv4 address's part") }
            numbers.append(n)
        }
        for n in numbers.dropLast() where n > 255 { throw .init("an IPv4 address's part is over 255") }
        let last = numbers[numbers.count - 1]
        guard last < (UInt64(1) << (8 * (5 - UInt64(numbers.count)))) else { throw .init("an IPv4 address out of range") }
        var address = last
        for (index, n) in numbers.dropLast().enumerated() { address += n << (8 * (3 - UInt64(index))) }
        return UInt32(address)
    }

    // MARK: - IPv6

    static func parseIPv6(_ input: [Unicode.Scalar]) throws(Failure) -> [UInt16] {
        var address = [UInt16](repeating: 0, count: 8)
        var pieceIndex = 0
        var compress: Int?
        var pointer = 0
        func at(_ index: Int) -> Unicode.Scalar? { index < input.count ? input[index] : nil }
        let invalid = Failure("not an IPv6 address")
        if at(0) == ":" {
            guard at(1) == ":" else { throw invalid }
            pointer += 2
            pieceIndex += 1
            compress = pieceIndex
        }
        while let c = at(pointer) {
            guard pieceIndex < 8 else { throw invalid }
            if c == ":" {
                guard compress == nil else { throw invalid }
                pointer += 1
                pieceIndex += 1
                compress = pieceIndex
                continue
            }
            var value: UInt32 = 0
            var length = 0
            while length < 4, let digit = at(pointer)?.hexValue {
                value = value * 16 + digit
                pointer += 1
                length += 1
            }
            if at(pointer) == "." {
                guard length > 0, pieceIndex <= 6 else { throw invalid }
                pointer -= length
                var numbersSeen = 0
                while at(pointer) != nil {
                    var piece: UInt32?
                    if numbersSeen > 0 {
                        guard at(pointer) == ".", numbersSeen < 4 else { throw invalid }
                        pointer += 1
                    }
                    guard at(pointer)?.isASCIIDigit == true else { throw invalid }
                    while let d = at(pointer), d.isASCIIDigit {
                        let number = d.value - 0x30
                        if let p = piece {
                            guard p != 0 else { throw invalid }
                            piece = p * 10 + number
                        } else {
                            piece = number
                        }
                        guard (piece ?? 0) <= 255 else { throw invalid }
                        pointer += 1
                    }
                    address[pieceIndex] = address[pieceIndex] &* 0x100 &+ UInt16(piece ?? 0)
                    numbersSeen += 1
                    if numbersSeen == 2 || numbersSeen == 4 { pieceIndex += 1 }
                }
                guard numbersSeen == 4 else { throw invalid }
                break
            } else if at(pointer) == ":" {
                pointer += 1
                guard at(pointer) != nil else { throw invalid }
            } else if at(pointer) != nil {
                throw invalid
            }
            address[pieceIndex] = UInt16(value)
            pieceIndex += 1
        }
        if let compress {
            var swaps = pieceIndex - compress
            pieceIndex = 7
            while pieceIndex != 0 && swaps > 0 {
                address.swapAt(pieceIndex, compress + swaps - 1)
                pieceIndex -= 1
                swaps -= 1
            }
        } else if pieceIndex != 8 {
            throw invalid
        }
        return address
    }
}
