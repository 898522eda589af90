import Foundation
import HeraldDevice
import HeraldTesting
import Testing

/// Sounds (reference §9, scenario 49) and alert localization (§10, scenario 50).
@Suite("Sounds and localization")
struct SoundsAndLocalizationTests {
    // MARK: sound files written byte by byte

    static func be16(_ v: Int) -> [UInt8] { [UInt8(v >> 8 & 0xff), UInt8(v & 0xff)] }
    static func be32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(v >> (24 - 8 * $0) & 0xff) } }
    static func be64(_ v: UInt64) -> [UInt8] { (0..<8).map { UInt8(v >> (56 - 8 * UInt64($0)) & 0xff) } }
    static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xff), UInt8(v >> 8 & 0xff)] }
    static func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(v >> (8 * $0) & 0xff) } }
    static func tag(_ s: String) -> [UInt8] { Array(s.utf8) }

    static func wav(format: Int = 1, rate: Int = 8000, bitsPerSample: Int = 8, seconds: Double) -> [UInt8] {
        let byteRate = rate * bitsPerSample / 8
        let dataSize = Int(Double(byteRate) * seconds)
        let fmt = le16(format) + le16(1) + le32(rate) + le32(byteRate) + le16(bitsPerSample / 8) + le16(bitsPerSample)
        let body = tag("WAVE") + tag("fmt ") + le32(fmt.count) + fmt + tag("data") + le32(dataSize) + [UInt8](repeating: 0x80, count: dataSize)
        return tag("RIFF") + le32(body.count) + body
    }

    /// 80-bit extended float for an integer sample rate.
    static func extended(_ value: Int) -> [UInt8] {
        var exponent = 16383 + 63
        var mantissa = UInt64(value)
        while mantissa & (1 << 63) == 0 { mantissa <<= 1; exponent -= 1 }
        return be16(exponent) + be64(mantissa)
    }

    static func aiff(compression: String? = nil, rate: Int = 8000, frames: Int) -> [UInt8] {
        var comm = be16(1) + be32(frames) + be16(8) + extended(rate)
        if let compression { comm += tag(compression) + [0, 0] }
        let body = tag(compression == nil ? "AIFF" : "AIFC") + tag("COMM") + be32(comm.count) + comm + tag("SSND") + be32(8) + [UInt8](repeating: 0, count: 8)
        return tag("FORM") + be32(body.count) + body
    }

    static func caf(format: String, rate: Double = 8000, bytesPerPacket: Int, framesPerPacket: Int, packets: Int) -> [UInt8] {
        let desc = be64(rate.bitPattern) + tag(format) + be32(0) + be32(bytesPerPacket) + be32(framesPerPacket) + be32(1) + be32(8)
        let data = be32(0) + [UInt8](repeating: 0, count: packets * bytesPerPacket)
        return tag("caff") + be16(1) + be16(0) + tag("desc") + be64(UInt64(desc.count)) + desc + tag("data") + be64(UInt64(data.count)) + data
    }

    func write(_ bytes: [UInt8], _ name: String, in dir: String) throws -> String {
        let path = (dir as NSString).appendingPathComponent(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    func tempDir() throws -> String {
        try TemporaryDirectory.make(prefix: "herald-sounds")
    }

    @Test("accepted: Linear PCM, IMA4, µ-law, a-law in AIFF, AIFC, WAV and CAF under 30 s — read from the headers")
    func acceptedFormats() throws {
        let dir = try tempDir()
        let cases: [([UInt8], NotificationSounds.Container, NotificationSounds.Encoding, Double)] = [
            (Self.wav(seconds: 1.5), .wav, .linearPCM, 1.5),
            (Self.wav(format: 7, seconds: 2), .wav, .ulaw, 2),
            (Self.wav(format: 6, seconds: 2), .wav, .alaw, 2),
            (Self.aiff(frames: 16000), .aiff, .linearPCM, 2),
            (Self.aiff(compression: "ulaw", frames: 8000), .aifc, .ulaw, 1),
            (Self.aiff(compression: "ima4", frames: 250), .aifc, .ima4, 2),
            (Self.caf(format: "lpcm", bytesPerPacket: 2, framesPerPacket: 1, packets: 24000), .caf, .linearPCM, 3),
            (Self.caf(format: "ima4", bytesPerPacket: 34, framesPerPacket: 64, packets: 500), .caf, .ima4, 4),
        ]
        for (index, (bytes, container, encoding, seconds)) in cases.enumerated() {
            // The name says nothing: the headers decide.
            let path = try write(bytes, "sound\(index).bin", in: dir)
            guard case .custom(let file) = NotificationSounds.inspect(path: path) else {
                Issue.record("case \(index) refused: \(NotificationSounds.inspect(path: path))")
                continue
            }
            #expect(file.container == container && file.encoding == encoding, "case \(index)")
            #expect(abs(file.seconds - seconds) < 0.01, "case \(index): \(file.seconds)")
        }
    }

    @Test("refused with a reason: 30 s or longer, other encodings, other containers")
    func refused() throws {
        let dir = try tempDir()
        func reason(_ bytes: [UInt8]) throws -> String {
            guard case .defaultSound(let reason) = NotificationSounds.inspect(path: try write(bytes, "x.caf", in: dir)) else { return "" }
            return reason
        }
        #expect(try reason(Self.wav(seconds: 45)).contains("lasts 45.0 s"))
        #expect(try reason(Self.wav(seconds: 30)).contains("shorter than 30 s"))
        #expect(try reason(Self.wav(format: 0x55, seconds: 1)).contains("0x0055"))
        #expect(try reason(Self.aiff(compression: "MAC3", frames: 10)).contains("MAC3"))
        #expect(try reason(Self.caf(format: "aac ", bytesPerPacket: 0, framesPerPacket: 1024, packets: 0)).contains("aac"))
        #expect(try reason(Array("ID3\u{3}mp3 data".utf8)).contains("not an AIFF, WAV or CAF file"))
        #expect(try reason(Array("RIFF".utf8)).contains("not WAVE"))
        // A CAF data chunk declaring more than Int64 holds (found by review of what the fuzzer
        // reaches): refused, not converted with a trap.
        var huge = Self.caf(format: "lpcm", bytesPerPacket: 2, framesPerPacket: 1, packets: 4)
        let sizeAt = huge.count - 8 - 4 - 8
        huge.replaceSubrange(sizeAt..<(sizeAt + 8), with: Self.be64(1 << 63))
        #expect(try reason(huge).contains("larger than any file"))
        // A size smaller than the bytes read (a caller's mistake) is not trusted below them.
        guard case .custom(let file) = NotificationSounds.inspect(
            header: Self.caf(format: "lpcm", bytesPerPacket: 2, framesPerPacket: 1, packets: 4), fileSize: .min, path: "x")
        else { Issue.record("refused"); return }
        #expect(file.seconds == 4.0 / 8000)
    }

    @Test("49. a 45 s sound plays the default; Library/Sounds wins over the bundle; missing names fall back")
    func lookup() throws {
        let library = try tempDir(), group = try tempDir(), bundle = try tempDir()
        _ = try write(Self.wav(seconds: 1), "chime.wav", in: library)
        _ = try write(Self.wav(seconds: 2), "chime.wav", in: bundle)
        _ = try write(Self.wav(seconds: 45), "long.wav", in: bundle)
        _ = try write(Self.wav(seconds: 3), "group.wav", in: group)
        let locations = NotificationSounds.Locations(appLibrarySounds: library, appGroupLibrarySounds: group, bundle: bundle)
        guard case .custom(let chime) = NotificationSounds.resolve(named: "chime.wav", in: locations) else { Issue.record("chime"); return }
        #expect(chime.path.hasPrefix(library) && abs(chime.seconds - 1) < 0.01)
        guard case .custom(let inGroup) = NotificationSounds.resolve(named: "group.wav", in: locations) else { Issue.record("group"); return }
        #expect(inGroup.path.hasPrefix(group))
        guard case .defaultSound(let long) = NotificationSounds.resolve(named: "long.wav", in: locations) else { Issue.record("long"); return }
        #expect(long.contains("shorter than 30 s"))
        guard case .defaultSound(let missing) = NotificationSounds.resolve(named: "nope.caf", in: locations) else { Issue.record("missing"); return }
        #expect(missing.contains("no sound named"))
        guard case .defaultSound = NotificationSounds.resolve(named: "../chime.wav", in: locations) else { Issue.record("path"); return }
    }

    // MARK: localization

    @Test("50. positional arguments; a missing key shows the key")
    func positional() {
        let l10n = AlertLocalization(tables: ["en": ["GREET": "%2$@ %1$@"]])
        #expect(l10n.text(key: "GREET", arguments: ["hello", "world"], preferredLanguages: ["en"]) == "world hello")
        #expect(l10n.text(key: "MISSING", arguments: ["x"], preferredLanguages: ["en"]) == "MISSING")
        #expect(AlertLocalization.format("%@ sent %@ (100%%)", ["Ana", "a photo"]) == "Ana sent a photo (100%)")
        #expect(AlertLocalization.format("%d new, %@", ["3", "read"]) == "3 new, read")
        #expect(AlertLocalization.format("%@ and %@", ["only one"]) == "only one and ")
    }

    @Test(".strings tables: comments, escapes, unquoted tokens, UTF-16; the device's language with fallbacks")
    func stringsFiles() throws {
        let text = """
            /* A comment
               over lines */
            "GREET" = "Bonjour %@ !"; // trailing comment
            "QUOTE" = "Il a dit \\"oui\\"\\n\\U00e9t\\u00E9";
            PLAIN = value_1;
            "SELF";
            """
        let table = try StringsFile.parse(Data(text.utf8))
        #expect(table["GREET"] == "Bonjour %@ !")
        #expect(table["QUOTE"] == "Il a dit \"oui\"\nété")
        #expect(table["PLAIN"] == "value_1")
        #expect(table["SELF"] == "SELF")
        var utf16 = Data([0xFF, 0xFE])
        utf16.append(#""K" = "Grüße";"#.data(using: .utf16LittleEndian)!)
        #expect(try StringsFile.parse(utf16)["K"] == "Grüße")
        #expect(throws: StringsFile.ParseError.self) { _ = try StringsFile.parse(Data(#""K" = "unterminated"#.utf8)) }
        #expect(throws: StringsFile.ParseError.self) { _ = try StringsFile.parse(Data(#""K" "V";"#.utf8)) }

        let bundle = try TemporaryDirectory.make(prefix: "herald-l10n")
        for (language, greeting) in [("fr", "Bonjour %@"), ("en", "Hello %@")] {
            try FileManager.default.createDirectory(atPath: bundle + "/\(language).lproj", withIntermediateDirectories: true)
            try "\"GREET\" = \"\(greeting)\";".write(toFile: bundle + "/\(language).lproj/Localizable.strings", atomically: true, encoding: .utf8)
        }
        try FileManager.default.createDirectory(atPath: bundle + "/de.lproj", withIntermediateDirectories: true)
        try #"{"GREET": "Hallo %@"}"#.write(toFile: bundle + "/de.lproj/Localizable.json", atomically: true, encoding: .utf8)
        let l10n = try AlertLocalization.load(bundle: bundle)
        #expect(l10n.text(key: "GREET", arguments: ["Ana"], preferredLanguages: ["fr-CA", "en"]) == "Bonjour Ana")
        #expect(l10n.text(key: "GREET", arguments: ["Ana"], preferredLanguages: ["de-AT"]) == "Hallo Ana")
        #expect(l10n.text(key: "GREET", arguments: ["Ana"], preferredLanguages: ["ja"]) == "Hello Ana", "no Japanese table: English")
    }
}
