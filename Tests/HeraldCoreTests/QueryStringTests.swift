import HeraldCore
import Testing

/// The one reader of request targets, against what hostile clients send.
@Suite("Query strings")
struct QueryStringTests {
    @Test("path and query split at the first '?'; '+' is a space; percent-encoding is decoded, UTF-8 included")
    func reads() throws {
        #expect(QueryString.path(of: "/v1/devices?connected=true") == "/v1/devices")
        #expect(QueryString.path(of: "/v1/devices") == "/v1/devices")
        #expect(QueryString.path(of: "?a=1") == "")
        #expect(QueryString.query(of: "/x") == nil && QueryString.query(of: "/x?") == "")
        #expect(try QueryString.parameters(of: "/x?zone=Europe%2FParis&q=a+b&empty=&flag&e=%E2%82%AC")
            == ["zone": "Europe/Paris", "q": "a b", "empty": "", "flag": "", "e": "€"])
        // A second '?' belongs to the query; '=' after the first is the value's.
        #expect(try QueryString.parameters(of: "/x?a=b=c?d") == ["a": "b=c?d"])
        // Empty pairs (&&, a trailing &) are skipped; pairs keep their order and repeats.
        let pairs = try QueryString.pairs("a=1&&b=2&a=3&")
        #expect(pairs.map(\.name) == ["a", "b", "a"] && pairs.map(\.value) == ["1", "2", "3"])
    }

    @Test("malformed percent-encoding and a parameter given twice are refused with what is wrong")
    func refuses() {
        for target in ["/x?a=%zz", "/x?a=%", "/x?a=%4", "/x?%=1", "/x?a=%FF%FE", "/x?a=1&b=%C3%28"] {
            #expect(throws: QueryString.Invalid("the query string is not valid percent-encoding"), "\(target)") {
                try QueryString.parameters(of: target)
            }
        }
        #expect(throws: QueryString.Invalid("topic is given twice")) { try QueryString.parameters(of: "/v1/events?topic=a&topic=b") }
        // Twice by its decoded name.
        #expect(throws: QueryString.Invalid("a b is given twice")) { try QueryString.parameters(of: "/x?a+b=1&a%20b=2") }
    }

    @Test("a huge query is read in one pass, without recursion")
    func huge() throws {
        let many = (0..<20_000).map { "k\($0)=v" }.joined(separator: "&")
        #expect(try QueryString.parameters(of: "/x?" + many).count == 20_000)
        let long = String(repeating: "%41", count: 100_000)
        #expect(try QueryString.parameters(of: "/x?a=" + long)["a"]?.count == 100_000)
    }
}
