/// The URL Standard's basic URL parser (§4.4), without a state override: a state machine over
/// the input's code points, one state per section of the standard, named as it names them.
struct StandardURLParser {
    private enum State {
        case schemeStart, scheme, noScheme, specialRelativeOrAuthority, pathOrAuthority, relative, relativeSlash
        case specialAuthoritySlashes, specialAuthorityIgnoreSlashes, authority, host, port
        case file, fileSlash, fileHost, pathStart, path, opaquePath, query, fragment
    }

    /// The longest input read (a URL in a push message is far shorter; this bounds the work).
    static let maximumLength = 1 << 20

    private let input: [Unicode.Scalar]
    private let base: StandardURL?
    private var url = StandardURL()
    private var state = State.schemeStart
    private var buffer: [Unicode.Scalar] = []
    private var pointer = 0
    private var atSignSeen = false, insideBrackets = false, passwordTokenSeen = false

    init(input: String, base: StandardURL?) {
        // Leading and trailing C0 controls and spaces go; tabs and newlines anywhere go.
        var scalars = Array(input.unicodeScalars)
        let start = scalars.firstIndex { $0.value > 0x20 } ?? scalars.endIndex
        let end = scalars.lastIndex { $0.value > 0x20 }.map { $0 + 1 } ?? start
        scalars = Array(scalars[start..<max(start, end)])
        scalars.removeAll { $0 == "\t" || $0 == "\n" || $0 == "\r" }
        self.input = scalars
        self.base = base
    }

    private var c: Unicode.Scalar? { pointer >= 0 && pointer < input.count ? input[pointer] : nil }
    private func remaining(_ offset: Int) -> Unicode.Scalar? {
        let index = pointer + offset
        return index >= 0 && index < input.count ? input[index] : nil
    }
    private var isSpecial: Bool { url.isSpecial }
    // The path and the fragment are built here and put in `url` at the end, so that appending
    // to them never copies what `url` holds (a long input stays linear).
    private var segments: [String] = []
    private var opaquePath: String?
    private var fragment = ""

    private mutating func takePath(of base: StandardURL) {
        switch base.path {
        case .opaque(let text): (opaquePath, segments) = (text, [])
        case .segments(let baseSegments): (opaquePath, segments) = (nil, baseSegments)
        }
    }

    mutating func run() throws(StandardURL.Failure) -> StandardURL {
        guard input.count <= Self.maximumLength else { throw .init("longer than \(Self.maximumLength) code points") }
        while true {
            try step()
            if pointer >= input.count { break }
            pointer += 1
        }
        url.path = opaquePath.map(StandardURL.Path.opaque) ?? .segments(segments)
        if url.fragment != nil { url.fragment = fragment }
        return url
    }

    /// One run of the state machine: one case per state of the standard, in its order.
    private mutating func step() throws(StandardURL.Failure) {
        let c = self.c
        switch state {
        case .schemeStart:
            if let c, c.isASCIIAlpha {
                buffer.append(c.asciiLowercased)
                state = .scheme
            } else {
                state = .noScheme
                pointer -= 1
            }

        case .scheme:
            if let c, c.isASCIIAlpha || c.isASCIIDigit || c == "+" || c == "-" || c == "." {
                buffer.append(c.asciiLowercased)
            } else if c == ":" {
                url.scheme = String(String.UnicodeScalarView(buffer))
                buffer = []
                if url.scheme == "file" {
                    state = .file
                } else if isSpecial, let base, base.scheme == url.scheme {
                    state = .specialRelativeOrAuthority
                } else if isSpecial {
                    state = .specialAuthoritySlashes
                } else if remaining(1) == "/" {
                    state = .pathOrAuthority
                    pointer += 1
                } else {
                    opaquePath = ""
                    state = .opaquePath
                }
            } else {
                buffer = []
                state = .noScheme
                pointer = -1
            }

        case .noScheme:
            guard let base else { throw .init("a relative reference without a base URL") }
            if case .opaque = base.path {
                guard c == "#" else { throw .init("a relative reference to a URL that cannot be a base (\(base.scheme):)") }
                url.scheme = base.scheme
                takePath(of: base)
                url.query = base.query
                url.fragment = ""
                fragment = ""
                state = .fragment
            } else if base.scheme != "file" {
                state = .relative
                pointer -= 1
            } else {
                state = .file
                pointer -= 1
            }

        case .specialRelativeOrAuthority:
            if c == "/" && remaining(1) == "/" {
                state = .specialAuthorityIgnoreSlashes
                pointer += 1
            } else {
                state = .relative
                pointer -= 1
            }

        case .pathOrAuthority:
            if c == "/" { state = .authority } else { state = .path; pointer -= 1 }

        case .relative:
            guard let base else { throw .init("a relative reference without a base URL") }
            url.scheme = base.scheme
            if c == "/" || (isSpecial && c == "\\") {
                state = .relativeSlash
            } else {
                (url.username, url.password, url.host, url.port) = (base.username, base.password, base.host, base.port)
                takePath(of: base)
                url.query = base.query
                if c == "?" {
                    url.query = ""
                    state = .query
                } else if c == "#" {
                    url.fragment = ""
                    state = .fragment
                } else if c != nil {
                    url.query = nil
                    shortenPath()
                    state = .path
                    pointer -= 1
                }
            }

        case .relativeSlash:
            if isSpecial && (c == "/" || c == "\\") {
                state = .specialAuthorityIgnoreSlashes
            } else if c == "/" {
                state = .authority
            } else {
                guard let base else { throw .init("a relative reference without a base URL") }
                (url.username, url.password, url.host, url.port) = (base.username, base.password, base.host, base.port)
                state = .path
                pointer -= 1
            }

        case .specialAuthoritySlashes:
            if c == "/" && remaining(1) == "/" {
                state = .specialAuthorityIgnoreSlashes
                pointer += 1
            } else {
                state = .specialAuthorityIgnoreSlashes
                pointer -= 1
            }

        case .specialAuthorityIgnoreSlashes:
            if c != "/" && c != "\\" {
                state = .authority
                pointer -= 1
            }

        case .authority:
            if c == "@" {
                if atSignSeen { buffer.insert(contentsOf: "%40".unicodeScalars, at: 0) }
                atSignSeen = true
                for scalar in buffer {
                    if scalar == ":" && !passwordTokenSeen {
                        passwordTokenSeen = true
                        continue
                    }
                    if passwordTokenSeen {
                        PercentEncodeSet.userinfo.encode(scalar, into: &url.password)
                    } else {
                        PercentEncodeSet.userinfo.encode(scalar, into: &url.username)
                    }
                }
                buffer = []
            } else if c == nil || c == "/" || c == "?" || c == "#" || (isSpecial && c == "\\") {
                if atSignSeen && buffer.isEmpty { throw .init("credentials without a host") }
                pointer -= buffer.count + 1
                buffer = []
                state = .host
            } else if let c {
                buffer.append(c)
            }

        case .host:
            if c == ":" && !insideBrackets {
                guard !buffer.isEmpty else { throw .init("a port without a host") }
                url.host = try StandardURLHost.parse(buffer, isOpaque: !isSpecial)
                buffer = []
                state = .port
            } else if c == nil || c == "/" || c == "?" || c == "#" || (isSpecial && c == "\\") {
                pointer -= 1
                if isSpecial && buffer.isEmpty { throw .init("a \(url.scheme): URL needs a host") }
                url.host = try StandardURLHost.parse(buffer, isOpaque: !isSpecial)
                buffer = []
                state = .pathStart
            } else if let c {
                if c == "[" { insideBrackets = true }
                if c == "]" { insideBrackets = false }
                buffer.append(c)
            }

        case .port:
            if let c, c.isASCIIDigit {
                buffer.append(c)
            } else if c == nil || c == "/" || c == "?" || c == "#" || (isSpecial && c == "\\") {
                if !buffer.isEmpty {
                    var port = 0
                    for digit in buffer {
                        port = port * 10 + Int(digit.value - 0x30)
                        if port > 65535 { throw .init("port \(String(String.UnicodeScalarView(buffer))) is out of range (0-65535)") }
                    }
                    let defaultPort = StandardURL.specialSchemes[url.scheme] ?? nil
                    url.port = UInt16(port) == defaultPort ? nil : UInt16(port)
                    buffer = []
                }
                state = .pathStart
                pointer -= 1
            } else {
                throw .init("the port is not a number")
            }

        case .file:
            url.scheme = "file"
            url.host = .empty
            if c == "/" || c == "\\" {
                state = .fileSlash
            } else if let base, base.scheme == "file" {
                url.host = base.host
                takePath(of: base)
                url.query = base.query
                if c == "?" {
                    url.query = ""
                    state = .query
                } else if c == "#" {
                    url.fragment = ""
                    state = .fragment
                } else if c != nil {
                    url.query = nil
                    if !startsWithWindowsDriveLetter(pointer) { shortenPath() } else { segments = [] }
                    state = .path
                    pointer -= 1
                }
            } else {
                state = .path
                pointer -= 1
            }

        case .fileSlash:
            if c == "/" || c == "\\" {
                state = .fileHost
            } else {
                if let base, base.scheme == "file" {
                    url.host = base.host
                    if !startsWithWindowsDriveLetter(pointer), case .segments(let baseSegments) = base.path,
                       let first = baseSegments.first, Self.isWindowsDriveLetter(Array(first.unicodeScalars), normalized: true) {
                        segments.append(first)
                    }
                }
                state = .path
                pointer -= 1
            }

        case .fileHost:
            if c == nil || c == "/" || c == "\\" || c == "?" || c == "#" {
                pointer -= 1
                if Self.isWindowsDriveLetter(buffer, normalized: false) {
                    state = .path
                } else if buffer.isEmpty {
                    url.host = .empty
                    state = .pathStart
                } else {
                    var host = try StandardURLHost.parse(buffer, isOpaque: false)
                    if host == .domain("localhost") { host = .empty }
                    url.host = host
                    buffer = []
                    state = .pathStart
                }
            } else if let c {
                buffer.append(c)
            }

        case .pathStart:
            if isSpecial {
                state = .path
                if c != "/" && c != "\\" { pointer -= 1 }
            } else if c == "?" {
                url.query = ""
                state = .query
            } else if c == "#" {
                url.fragment = ""
                state = .fragment
            } else if c != nil {
                state = .path
                if c != "/" { pointer -= 1 }
            }

        case .path:
            let slash = c == "/" || (isSpecial && c == "\\")
            if c == nil || slash || c == "?" || c == "#" {
                let segment = String(String.UnicodeScalarView(buffer))
                if Self.isDoubleDot(segment) {
                    shortenPath()
                    if !slash { segments.append("") }
                } else if Self.isSingleDot(segment) {
                    if !slash { segments.append("") }
                } else {
                    var segment = segment
                    if url.scheme == "file" && segments.isEmpty && Self.isWindowsDriveLetter(buffer, normalized: false) {
                        segment = String(buffer[0]) + ":"
                    }
                    segments.append(segment)
                }
                buffer = []
                if c == "?" {
                    url.query = ""
                    state = .query
                } else if c == "#" {
                    url.fragment = ""
                    state = .fragment
                }
            } else if let c {
                var encoded = ""
                PercentEncodeSet.path.encode(c, into: &encoded)
                buffer.append(contentsOf: encoded.unicodeScalars)
            }

        case .opaquePath:
            if c == "?" {
                url.query = ""
                state = .query
            } else if c == "#" {
                url.fragment = ""
                state = .fragment
            } else if c == " " {
                // A space before the query or fragment is encoded, so that it survives them being removed.
                let beforeQueryOrFragment = remaining(1) == "?" || remaining(1) == "#"
                opaquePath? += beforeQueryOrFragment ? "%20" : " "
            } else if let c, opaquePath != nil {
                PercentEncodeSet.c0Control.encode(c, into: &opaquePath!)
            }

        case .query:
            if c == "#" || c == nil {
                let set: PercentEncodeSet = isSpecial ? .specialQuery : .query
                url.query = (url.query ?? "") + set.encode(buffer)
                buffer = []
                if c == "#" {
                    url.fragment = ""
                    state = .fragment
                }
            } else if let c {
                buffer.append(c)
            }

        case .fragment:
            if let c { PercentEncodeSet.fragment.encode(c, into: &fragment) }
        }
    }

    private mutating func shortenPath() {
        if url.scheme == "file", segments.count == 1, Self.isWindowsDriveLetter(Array(segments[0].unicodeScalars), normalized: true) { return }
        if !segments.isEmpty { segments.removeLast() }
    }

    private func startsWithWindowsDriveLetter(_ at: Int) -> Bool {
        guard at >= 0, input.count - at >= 2, Self.isWindowsDriveLetter(Array(input[at..<at + 2]), normalized: false) else { return false }
        if input.count - at == 2 { return true }
        return ["/", "\\", "?", "#"].contains(input[at + 2])
    }

    static func isWindowsDriveLetter(_ scalars: [Unicode.Scalar], normalized: Bool) -> Bool {
        scalars.count == 2 && scalars[0].isASCIIAlpha && (scalars[1] == ":" || (!normalized && scalars[1] == "|"))
    }

    static func isSingleDot(_ segment: String) -> Bool { segment == "." || segment.lowercased() == "%2e" }

    static func isDoubleDot(_ segment: String) -> Bool {
        [".." as String, ".%2e", "%2e.", "%2e%2e"].contains(segment.lowercased())
    }
}
