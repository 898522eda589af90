import Foundation
import HeraldCore
import Testing

/// The URL Standard's parser against the Web Platform Tests' own cases
/// (Fixtures/urltestdata.json, from web-platform-tests/wpt `url/resources/`, BSD-3-Clause).
@Suite("URL Standard parser")
struct StandardURLTests {
    struct Case {
        var input: String
        var base: String?
        var expected: [String: String]?  // nil: the parser must fail
    }

    static func cases() throws -> [Case] {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/urltestdata.json")
        let bytes = try [UInt8](Data(contentsOf: file))
        guard case .array(let entries) = try JSONReader.parse(bytes, limits: JSONLimits(maximumBytes: 1 << 22, maximumDepth: 8)) else { return [] }
        return entries.compactMap { entry in
            guard case .object(let o) = entry, let input = o["input"]?.stringValue else { return nil }  // comments are strings
            if o["failure"] == .bool(true) { return Case(input: input, base: o["base"]?.stringValue, expected: nil) }
            var expected: [String: String] = [:]
            for key in ["href", "protocol", "username", "password", "host", "hostname", "port", "pathname", "search", "hash"] {
                expected[key] = o[key]?.stringValue
            }
            return Case(input: input, base: o["base"]?.stringValue, expected: expected)
        }
    }

    /// What the parser gives, in the URL API's getters; nil when it fails.
    static func parse(_ c: Case) -> [String: String]? {
        var base: StandardURL?
        if let text = c.base {
            guard let parsed = try? StandardURL(parsing: text) else { return nil }
            base = parsed
        }
        guard let url = try? StandardURL(parsing: c.input, base: base) else { return nil }
        let port = url.port.map(String.init) ?? ""
        return ["href": url.href, "protocol": url.scheme + ":", "username": url.username, "password": url.password,
                "host": url.hostname + (port.isEmpty ? "" : ":" + port), "hostname": url.hostname, "port": port,
                "pathname": url.pathname, "search": url.search, "hash": url.hash]
    }

    @Test("every case of the Web Platform Tests' urltestdata.json, and every URL read back from its serialization")
    func webPlatformTests() throws {
        let cases = try Self.cases()
        #expect(cases.count > 800)
        var failed: [String] = []
        var roundTrips = 0
        for c in cases {
            let got = Self.parse(c)
            if got != c.expected { failed.append(c.input) }
            // The standard's promise: a URL's serialization parses back to the same URL.
            if let href = got?["href"] {
                let again = try StandardURL(parsing: href)
                #expect(again.href == href, "\(c.input.debugDescription) → \(href) → \(again.href)")
                roundTrips += 1
            }
        }
        #expect(roundTrips > 500)
        print("urltestdata.json: \(cases.count - failed.count) of \(cases.count) pass")
        for input in failed { print("  differs: \(input.debugDescription)") }
        #expect(failed.isEmpty)
    }

    @Test("domain to ASCII: the Web Platform Tests' toascii.json, as `new URL(\"https://\" + input + \"/x\")` reads it")
    func toASCII() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures/toascii.json")
        guard case .array(let entries) = try JSONReader.parse([UInt8](Data(contentsOf: file)), limits: JSONLimits(maximumBytes: 1 << 20, maximumDepth: 8)) else {
            Issue.record("toascii.json is not an array")
            return
        }
        var total = 0
        var failed: [String] = []
        for case .object(let o) in entries {
            guard let input = o["input"]?.stringValue else { continue }
            total += 1
            let got = (try? StandardURL(parsing: "https://" + input + "/x"))?.hostname
            if got != o["output"]?.stringValue { failed.append(input) }
        }
        print("toascii.json: \(total - failed.count) of \(total) pass")
        for input in failed { print("  differs: \(input.debugDescription)") }
        #expect(total > 50)
        #expect(failed.isEmpty)
    }
}
