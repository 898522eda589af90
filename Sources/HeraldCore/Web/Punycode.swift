/// Punycode (RFC 3492), the encoding of an internationalized domain's labels: `bücher` ↔
/// `bcher-kva`. Encode and decode; the caller adds or strips the `xn--` prefix.
enum Punycode {
    private static let base = 36, tMin = 1, tMax = 26, skew = 38, damp = 700, initialBias = 72, initialN = 0x80

    private static func adapt(_ delta: Int, _ count: Int, _ first: Bool) -> Int {
        var delta = first ? delta / damp : delta / 2
        delta += delta / count
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }

    private static func digit(_ value: Int) -> Unicode.Scalar {
        Unicode.Scalar(UInt8(value < 26 ? 0x61 + value : 0x30 + value - 26))
    }

    private static func value(_ c: Unicode.Scalar) -> Int? {
        switch c.value {
        case 0x30...0x39: Int(c.value) - 0x30 + 26
        case 0x41...0x5A: Int(c.value) - 0x41
        case 0x61...0x7A: Int(c.value) - 0x61
        default: nil
        }
    }

    /// nil when an intermediate value overflows (an input no domain has).
    static func encode(_ input: String) -> String? {
        let scalars = input.unicodeScalars.map { Int($0.value) }
        var output = String.UnicodeScalarView()
        for c in scalars where c < 0x80 { output.append(Unicode.Scalar(UInt8(c))) }
        let basicCount = output.count
        var handled = basicCount
        if basicCount > 0 { output.append("-") }
        var n = initialN, delta = 0, bias = initialBias
        while handled < scalars.count {
            guard let m = scalars.filter({ $0 >= n }).min() else { return nil }
            let (step, overflow) = (m - n).multipliedReportingOverflow(by: handled + 1)
            guard !overflow, delta <= Int(Int32.max) - step else { return nil }
            delta += step
            n = m
            for c in scalars {
                if c < n {
                    delta += 1
                    guard delta <= Int(Int32.max) else { return nil }
                }
                guard c == n else { continue }
                var q = delta
                var k = base
                while true {
                    let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                    if q < t { break }
                    output.append(digit(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digit(q))
                bias = adapt(delta, handled + 1, handled == basicCount)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return String(output)
    }

    /// nil when `input` is not valid Punycode.
    static func decode(_ input: String) -> String? {
        let scalars = Array(input.unicodeScalars)
        var output: [Int] = []
        var start = 0
        if let dash = scalars.lastIndex(of: "-") {
            for c in scalars[..<dash] {
                guard c.isASCII else { return nil }
                output.append(Int(c.value))
            }
            start = dash + 1
        }
        var n = initialN, i = 0, bias = initialBias
        var index = start
        while index < scalars.count {
            let oldI = i
            var w = 1
            var k = base
            while true {
                guard index < scalars.count, let d = value(scalars[index]) else { return nil }
                index += 1
                guard d <= (Int(Int32.max) - i) / w else { return nil }
                i += d * w
                let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                if d < t { break }
                guard w <= Int(Int32.max) / (base - t) else { return nil }
                w *= base - t
                k += base
            }
            bias = adapt(i - oldI, output.count + 1, oldI == 0)
            guard i / (output.count + 1) <= Int(Int32.max) - n else { return nil }
            n += i / (output.count + 1)
            i %= output.count + 1
            guard n >= 0x80, Unicode.Scalar(UInt32(n)) != nil else { return nil }
            output.insert(n, at: i)
            i += 1
        }
        var text = String.UnicodeScalarView()
        for c in output {
            guard let scalar = Unicode.Scalar(UInt32(c)) else { return nil }
            text.append(scalar)
        }
        return String(text)
    }
}
