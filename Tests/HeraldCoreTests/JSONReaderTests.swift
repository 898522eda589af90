import Foundation
import HeraldCore
import Testing

@Suite("Strict JSON reading")
struct JSONReaderTests {
    private func parse(_ text: String, _ limits: JSONLimits = .standard) throws -> JSONValue {
        try JSONReader.parse(Array(text.utf8), limits: limits)
    }

    private func refuses(_ text: String, _ limits: JSONLimits = .standard, containing words: String) {
        do {
            let value = try parse(text, limits)
            Issue.record("accepted \(text.prefix(60)) as \(value)")
        } catch let error as JSONSyntaxError {
            #expect(error.message.contains(words), "\(text.prefix(60)): \(error)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test("RFC 8259 documents are read exactly: integers stay integers, escapes and surrogate pairs decoded")
    func accepts() throws {
        #expect(try parse(#" {"a":[1,-2,3.5,1e2,true,false,null],"b":"x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"} "#) == .object([
            "a": .array([.int(1), .int(-2), .double(3.5), .double(100), .bool(true), .bool(false), .null]),
            "b": .string("x\"\\/\u{8}\u{c}\n\r\té😀"),
        ]))
        #expect(try parse("0") == .int(0))
        #expect(try parse("-0.0") == .double(-0.0))
        #expect(try parse("9223372036854775807") == .int(Int64.max))
        #expect(try parse("9223372036854775808") == .double(9223372036854775808))
        #expect(try parse("1e300") == .double(1e300))
        #expect(try parse("\"é日本\"") == .string("é日本"))
    }

    @Test("trailing commas, comments, NaN, leading zeros, bad escapes, bad UTF-8, duplicates and trailing bytes are refused")
    func refusals() {
        refuses(#"{"aps":{"alert":"hi",}}"#, containing: "trailing comma")
        refuses("[1,2,]", containing: "trailing comma")
        refuses(#"{"a":1 // x"#, containing: "in an object")
        refuses("/* c */ {}", containing: "unexpected character")
        refuses("NaN", containing: "unexpected character")
        refuses("Infinity", containing: "unexpected character")
        refuses("[01]", containing: "leading zero")
        refuses("1.", containing: "fraction")
        refuses(".5", containing: "unexpected character")
        refuses("1e", containing: "exponent")
        refuses("+1", containing: "unexpected character")
        refuses("1e400", containing: "beyond the range")
        refuses("-1e400", containing: "beyond the range")
        refuses(#""\x""#, containing: "invalid escape")
        refuses(#""\u12""#, containing: "four hex digits")
        refuses(#""\ud800""#, containing: "unpaired surrogate")
        refuses(#""\udc00""#, containing: "unpaired surrogate")
        refuses("\"a\tb\"", containing: "control character")
        refuses("\"abc", containing: "unterminated")
        refuses(#"{"a":1,"a":2}"#, containing: "duplicate key")
        refuses("{} {}", containing: "after the JSON value")
        refuses("", containing: "empty")
        refuses("   ", containing: "empty")
        refuses("{'a':1}", containing: "key must be a string")
        refuses("tru", containing: "end of the document")
        for bad: [UInt8] in [[0x22, 0xC0, 0x80, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], [0x22, 0xE2, 0x82, 0x22], [0x22, 0xFF, 0x22]] {
            #expect(throws: JSONSyntaxError.self) { try JSONReader.parse(bad) }
        }
    }

    @Test("size and depth are bounded before anything is built")
    func bounds() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        refuses(deep, containing: "nesting deeper than 64")
        refuses(String(repeating: "{\"a\":", count: 40) + "1" + String(repeating: "}", count: 40), .payload, containing: "nesting deeper than 32")
        refuses("\"" + String(repeating: "x", count: 70_000) + "\"", .payload, containing: "more than the 65536 allowed")
        #expect((try? parse(String(repeating: "[", count: 64) + String(repeating: "]", count: 64))) != nil)
    }

    @Test("validation without building agrees with parsing, and knows an object from other values")
    func validation() {
        #expect(JSONReader.isObject(Array(#"{"aps":{"alert":"x","badge":1e300}}"#.utf8)))
        #expect(!JSONReader.isObject(Array(#"{"aps":{"alert":"x",}}"#.utf8)))
        #expect(!JSONReader.isObject(Array("[1]".utf8)))
        #expect(!JSONReader.isObject(Array("  \"x\"".utf8)))
        #expect(!JSONReader.isObject(Array(#"{"a":1}x"#.utf8)))
    }

    @Test("checked accessors: exact integers in range, finite doubles, bounded strings, errors that name the field")
    func accessors() throws {
        #expect(JSONValue.double(1e300).integer(Int.self) == nil)
        #expect(JSONValue.double(3.0).integer(Int.self) == 3)
        #expect(JSONValue.double(3.5).integer(Int.self) == nil)
        #expect(JSONValue.double(-1).integer(UInt8.self) == nil)
        #expect(JSONValue.int(Int64.min).integer(Int32.self) == nil)
        #expect(JSONValue.string("3").integer(Int.self) == nil)
        #expect(JSONValue.double(.infinity).finiteDouble == nil)
        #expect(JSONValue.double(.nan).integer(Int.self) == nil)
        #expect(JSONValue.int(5).integer(in: 0...4) == nil)
        #expect(JSONValue.string("abcd").string(maximumBytes: 3) == nil)

        let fields = JSONFields(try JSONReader.parseObject(Array(#"{"badge":1e300,"priority":"10","ok":7,"alert":{"title":5}}"#.utf8)))
        #expect(throws: JSONFieldError(field: "badge", message: "must be an integer from 0 to 99")) { try fields.integer("badge", in: 0...99) }
        #expect(throws: JSONFieldError(field: "priority", message: "must be an integer from 1 to 10")) { try fields.integer("priority", in: 1...10) }
        #expect(try fields.integer("ok", in: 0...10) == 7)
        #expect(try fields.integer("absent", in: 0...10) == nil)
        let alert = try #require(try fields.object("alert"))
        #expect(throws: JSONFieldError(field: "alert.title", message: "must be a string")) { try alert.string("title") }
    }

    @Test("provider tokens: an 8 KB kid, a 1e300 iat, alg none and nested claims are refused without a trap")
    func providerTokens() {
        func base64URL(_ bytes: [UInt8]) -> String {
            Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
        func token(_ header: String, _ claims: String) -> String {
            "\(base64URL(Array(header.utf8))).\(base64URL(Array(claims.utf8))).\(base64URL([UInt8](repeating: 1, count: 64)))"
        }
        let cases = [
            token(#"{"alg":"ES256","kid":"\#(String(repeating: "K", count: 8192))"}"#, #"{"iss":"T","iat":1}"#),
            token(#"{"alg":"ES256","kid":"ABC"}"#, #"{"iss":"T","iat":1e300}"#),
            token(#"{"alg":"ES256","kid":"ABC"}"#, #"{"iss":"T","iat":-9223372036854775808}"#),
            token(#"{"alg":"ES256","kid":"ABC"}"#, #"{"iss":"T","iat":"1e300"}"#),
            token(#"{"alg":"none","kid":"ABC"}"#, #"{"iss":"T","iat":1}"#),
            token(#"{"alg":"ES256","kid":"ABC",}"#, #"{"iss":"T","iat":1}"#),
            token(#"{"alg":"ES256","kid":"ABC"}"#, #"{"iss":{"a":{"b":1}},"iat":1}"#),
        ]
        for text in cases {
            #expect(throws: ProviderToken.Failure.self) { try ProviderToken(parsing: text) }
        }
    }
}
