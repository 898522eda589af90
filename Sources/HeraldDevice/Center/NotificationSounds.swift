import Foundation

/// Notification sounds (reference user-notifications §9): where a named sound is looked up, and
/// whether the file is one a device plays — Linear PCM, IMA4 (IMA ADPCM), µ-law or a-law, in an
/// AIFF/AIFC, WAV or CAF container, shorter than 30 seconds — decided from the file's own headers,
/// never from its name. Anything else plays the default sound, and the reason says why.
public enum NotificationSounds {
    /// The longest custom sound a device plays.
    public static let maximumSeconds = 30.0

    public enum Container: String, Sendable, Hashable { case aiff, aifc, wav, caf }
    public enum Encoding: String, Sendable, Hashable { case linearPCM = "linear-pcm", ima4, ulaw, alaw }

    public struct SoundFile: Sendable, Hashable {
        public var path: String
        public var container: Container
        public var encoding: Encoding
        public var seconds: Double
    }

    public enum Verdict: Sendable, Hashable {
        /// Plays this file.
        case custom(SoundFile)
        /// Plays the default sound, for this reason.
        case defaultSound(reason: String)
    }

    /// Where an app's sounds are looked up, first hit wins: the app's `Library/Sounds`, the app
    /// group's `Library/Sounds`, then the app bundle.
    public struct Locations: Sendable, Hashable {
        public var appLibrarySounds: String?
        public var appGroupLibrarySounds: String?
        public var bundle: String?
        public init(appLibrarySounds: String? = nil, appGroupLibrarySounds: String? = nil, bundle: String? = nil) {
            self.appLibrarySounds = appLibrarySounds
            self.appGroupLibrarySounds = appGroupLibrarySounds
            self.bundle = bundle
        }
        var searchOrder: [String] { [appLibrarySounds, appGroupLibrarySounds, bundle].compactMap { $0 } }
    }

    /// The sound a notification naming `name` plays.
    public static func resolve(named name: String, in locations: Locations) -> Verdict {
        if name == "default" { return .defaultSound(reason: "the notification asks for the default sound") }
        guard !name.contains("/"), !name.hasPrefix(".") else {
            return .defaultSound(reason: "\"\(name)\" is not a file name (no paths)")
        }
        for directory in locations.searchOrder {
            let path = (directory as NSString).appendingPathComponent(name)
            if FileManager.default.fileExists(atPath: path) { return inspect(path: path) }
        }
        return .defaultSound(reason: "no sound named \"\(name)\" in Library/Sounds, the app group's Library/Sounds or the app bundle")
    }

    /// Reads a sound file's headers and decides.
    public static func inspect(path: String) -> Verdict {
        guard let handle = FileHandle(forReadingAtPath: path) else { return .defaultSound(reason: "\(path) cannot be read") }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: headerBytes)) ?? Data()
        let fileSize = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value ?? Int64(data.count)
        return inspect(header: [UInt8](data), fileSize: fileSize, path: path)
    }

    /// How much of a sound file is read to decide: its headers are at the start.
    public static let headerBytes = 1 << 20

    /// Decides from the first bytes of a file (at most ``headerBytes``) and its size; `path` only
    /// names it in the reason.
    public static func inspect(header bytes: [UInt8], fileSize: Int64, path: String) -> Verdict {
        let fileSize = max(fileSize, Int64(bytes.count))
        let parsed: Result<(Container, Encoding, Double), Problem>
        if bytes.starts(with: Array("FORM".utf8)) {
            parsed = parseAIFF(bytes)
        } else if bytes.starts(with: Array("RIFF".utf8)) {
            parsed = parseWAV(bytes)
        } else if bytes.starts(with: Array("caff".utf8)) {
            parsed = parseCAF(bytes, fileSize: fileSize)
        } else {
            return .defaultSound(reason: "\(path) is not an AIFF, WAV or CAF file")
        }
        switch parsed {
        case .failure(let problem): return .defaultSound(reason: "\(path): \(problem.text)")
        case .success(let (container, encoding, seconds)):
            guard seconds < maximumSeconds else {
                return .defaultSound(reason: String(format: "%@ lasts %.1f s; custom sounds must be shorter than 30 s", path, seconds))
            }
            return .custom(SoundFile(path: path, container: container, encoding: encoding, seconds: seconds))
        }
    }

    // MARK: containers

    /// Why a file is not playable.
    struct Problem: Error, ExpressibleByStringLiteral {
        var text: String
        init(_ text: String) { self.text = text }
        init(stringLiteral text: String) { self.text = text }
    }

    private struct Reader {
        let bytes: [UInt8]
        func u16be(_ i: Int) -> Int? { i + 2 <= bytes.count ? Int(bytes[i]) << 8 | Int(bytes[i + 1]) : nil }
        func u32be(_ i: Int) -> Int? { i + 4 <= bytes.count ? (0..<4).reduce(0) { $0 << 8 | Int(bytes[i + $1]) } : nil }
        func u64be(_ i: Int) -> UInt64? { i + 8 <= bytes.count ? (0..<8).reduce(UInt64(0)) { $0 << 8 | UInt64(bytes[i + $1]) } : nil }
        func u16le(_ i: Int) -> Int? { i + 2 <= bytes.count ? Int(bytes[i]) | Int(bytes[i + 1]) << 8 : nil }
        func u32le(_ i: Int) -> Int? { i + 4 <= bytes.count ? (0..<4).reduce(0) { $0 | Int(bytes[i + $1]) << (8 * $1) } : nil }
        func tag(_ i: Int) -> String? { i + 4 <= bytes.count ? String(decoding: bytes[i..<(i + 4)], as: UTF8.self) : nil }
        func f64be(_ i: Int) -> Double? { u64be(i).map { Double(bitPattern: $0) } }
        /// The 80-bit IEEE extended float of AIFF's sample rate.
        func extended80(_ i: Int) -> Double? {
            guard let exp = u16be(i), let mantissa = u64be(i + 2) else { return nil }
            let sign = exp & 0x8000 != 0 ? -1.0 : 1.0
            let e = exp & 0x7fff
            if e == 0 && mantissa == 0 { return 0 }
            return sign * Double(mantissa) * pow(2, Double(e - 16383 - 63))
        }
    }

    private static func parseAIFF(_ bytes: [UInt8]) -> Result<(Container, Encoding, Double), Problem> {
        let r = Reader(bytes: bytes)
        guard let form = r.tag(8), form == "AIFF" || form == "AIFC" else { return .failure("a FORM file that is not AIFF or AIFC") }
        let container: Container = form == "AIFF" ? .aiff : .aifc
        var offset = 12
        while let id = r.tag(offset), let size = r.u32be(offset + 4) {
            let body = offset + 8
            if id == "COMM" {
                guard let frames = r.u32be(body + 2), let rate = r.extended80(body + 8), rate > 0 else {
                    return .failure("an incomplete COMM chunk")
                }
                var encoding = Encoding.linearPCM
                var frameCount = Double(frames)
                if container == .aifc {
                    guard let compression = r.tag(body + 18) else { return .failure("an AIFC file without a compression type") }
                    switch compression {
                    case "NONE", "sowt", "twos", "raw ", "fl32", "FL32", "fl64", "FL64", "in24", "in32", "23ni", "42ni": encoding = .linearPCM
                    // AIFC counts IMA4 in packets of 64 frames.
                    case "ima4": encoding = .ima4; frameCount *= 64
                    case "ulaw", "ULAW": encoding = .ulaw
                    case "alaw", "ALAW": encoding = .alaw
                    default: return .failure(Problem("AIFC compression \"\(compression)\" is not Linear PCM, IMA4, µ-law or a-law"))
                    }
                }
                return .success((container, encoding, frameCount / rate))
            }
            offset = body + size + (size & 1)
        }
        return .failure("no COMM chunk")
    }

    private static func parseWAV(_ bytes: [UInt8]) -> Result<(Container, Encoding, Double), Problem> {
        let r = Reader(bytes: bytes)
        guard r.tag(8) == "WAVE" else { return .failure("a RIFF file that is not WAVE") }
        var offset = 12
        var format: (encoding: Encoding, byteRate: Int, rate: Int)?
        var factFrames: Int?
        while let id = r.tag(offset), let size = r.u32le(offset + 4) {
            let body = offset + 8
            switch id {
            case "fmt ":
                guard var code = r.u16le(body), let rate = r.u32le(body + 4), let byteRate = r.u32le(body + 8), rate > 0 else {
                    return .failure("an incomplete fmt chunk")
                }
                if code == 0xFFFE, let sub = r.u16le(body + 24) { code = sub }  // WAVE_FORMAT_EXTENSIBLE
                let encoding: Encoding
                switch code {
                case 1, 3: encoding = .linearPCM
                case 6: encoding = .alaw
                case 7: encoding = .ulaw
                case 0x11: encoding = .ima4
                default: return .failure(Problem(String(format: "WAVE format 0x%04x is not Linear PCM, IMA ADPCM, µ-law or a-law", code)))
                }
                format = (encoding, byteRate, rate)
            case "fact":
                factFrames = r.u32le(body)
            case "data":
                guard let format else { return .failure("a data chunk before the fmt chunk") }
                if let factFrames, format.encoding != .linearPCM { return .success((.wav, format.encoding, Double(factFrames) / Double(format.rate))) }
                guard format.byteRate > 0 else { return .failure("a zero byte rate") }
                return .success((.wav, format.encoding, Double(size) / Double(format.byteRate)))
            default: break
            }
            offset = body + size + (size & 1)
        }
        return .failure("no data chunk")
    }

    private static func parseCAF(_ bytes: [UInt8], fileSize: Int64) -> Result<(Container, Encoding, Double), Problem> {
        let r = Reader(bytes: bytes)
        var offset = 8
        var desc: (rate: Double, encoding: Encoding, bytesPerPacket: Int, framesPerPacket: Int)?
        var validFrames: Int64?
        while let id = r.tag(offset), let size = r.u64be(offset + 4) {
            let body = offset + 12
            switch id {
            case "desc":
                guard let rate = r.f64be(body), let formatID = r.tag(body + 8), let bpp = r.u32be(body + 16), let fpp = r.u32be(body + 20), rate > 0 else {
                    return .failure("an incomplete desc chunk")
                }
                let encoding: Encoding
                switch formatID {
                case "lpcm": encoding = .linearPCM
                case "ima4": encoding = .ima4
                case "ulaw": encoding = .ulaw
                case "alaw": encoding = .alaw
                default: return .failure(Problem("CAF format \"\(formatID)\" is not Linear PCM, IMA4, µ-law or a-law"))
                }
                desc = (rate, encoding, bpp, fpp)
            case "pakt":
                if let frames = r.u64be(body + 8) { validFrames = Int64(bitPattern: frames) }
            case "data":
                guard let desc else { return .failure("a data chunk before the desc chunk") }
                if let validFrames, validFrames > 0 { return .success((.caf, desc.encoding, Double(validFrames) / desc.rate)) }
                // Size -1: the data runs to the end of the file. The first 4 bytes are the edit count.
                let dataBytes: Int64
                if size == UInt64.max {
                    dataBytes = fileSize - Int64(body) - 4
                } else {
                    guard let declared = Int64(exactly: size) else { return .failure("a data chunk larger than any file") }
                    dataBytes = declared - 4
                }
                guard dataBytes >= 0 else { return .failure("a data chunk shorter than its edit count") }
                guard desc.bytesPerPacket > 0, desc.framesPerPacket > 0 else { return .failure("variable-size packets without a pakt chunk") }
                let frames = Double(dataBytes / Int64(desc.bytesPerPacket)) * Double(desc.framesPerPacket)
                return .success((.caf, desc.encoding, frames / desc.rate))
            default: break
            }
            guard size != UInt64.max, size < UInt64(Int.max / 2) else { break }
            offset = body + Int(size)
        }
        return .failure("no data chunk")
    }
}
