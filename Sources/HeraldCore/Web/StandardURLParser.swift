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

    /// One run of the state machine: one function per state of the standard, in its order.
    private mutating func step() throws(StandardURL.Failure) {
        let c = self.c
        switch state {
        case .schemeStart: try schemeStartState(c)
        case .scheme: try schemeState(c)
        case .noScheme: try noSchemeState(c)
        case .specialRelativeOrAuthority: try specialRelativeOrAuthorityState(c)
        case .pathOrAuthority: try pathOrAuthorityState(c)
        case .relative: try relativeState(c)
        case .relativeSlash: try relativeSlashState(c)
        case .specialAuthoritySlashes: try specialAuthoritySlashesState(c)
        case .specialAuthorityIgnoreSlashes: try specialAuthorityIgnoreSlashesState(c)
        case .authority: try authorityState(c)
        case .host: try hostState(c)
        case .port: try portState(c)
        case .file: try fileState(c)
        case .fileSlash: try fileSlashState(c)
        case .fileHost: try fileHostState(c)
        case .pathStart: try pathStartState(c)
        case .path: try pathState(c)
        case .opaquePath: try opaquePathState(c)
        case .query: try queryState(c)
        case .fragment: try fragmentState(c)
        }
    }

    private mutating func schemeStartState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
        if let c, c.isASCIIAlpha {
            buffer.append(c.asciiLowercased)
            state = .scheme
        } else {
            reconsume(.noScheme)
        }
    }

    private mutating func schemeState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
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
    }

    private mutating func noSchemeState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
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
            reconsume(.relative)
        } else {
            reconsume(.file)
        }
    }

    private mutating func specialRelativeOrAuthorityState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
        afterAuthoritySlashes(c, otherwise: .relative)
    }

    private mutating func pathOrAuthorityState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
        if c == "/" { state = .authority } else { reconsume(.path) }
    }

    private mutating func relativeState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
        guard let base else { throw .init("a relative reference without a base URL") }
        url.scheme = base.scheme
        if c == "/" || (isSpecial && c == "\\") {
            state = .relativeSlash
        } else {
            takeAuthority(of: base)
            continueFromBase(c, base, file: false)
        }
    }

    private mutating func relativeSlashState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
        if isSpecial && (c == "/" || c == "\\") {
            state = .specialAuthorityIgnoreSlashes
        } else if c == "/" {
            state = .authority
        } else {
            guard let base else { throw .init("a relative reference without a base URL") }
            takeAuthority(of: base)
            reconsume(.path)
        }
    }

    private mutating func specialAuthoritySlashesState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
        afterAuthoritySlashes(c, otherwise: .specialAuthorityIgnoreSlashes)
    }

    private mutating func specialAuthorityIgnoreSlashesState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
        if c != "/" && c != "\\" {
            reconsume(.authority)
        }
    }

    private mutating func authorityState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
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
    }

    private mutating func hostState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
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
    }

    private mutating func portState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
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
            reconsume(.pathStart)
        } else {
            throw .init("the port is not a number")
        }
    }

    private mutating func fileState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
        url.scheme = "file"
        url.host = .empty
        if c == "/" || c == "\\" {
            state = .fileSlash
        } else if let base, base.scheme == "file" {
            url.host = base.host
            continueFromBase(c, base, file: true)
        } else {
            reconsume(.path)
        }
    }

    private mutating func fileSlashState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
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
            reconsume(.path)
        }
    }

    private mutating func fileHostState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
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
    }

    private mutating func pathStartState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
        if isSpecial {
            state = .path
            if c != "/" && c != "\\" { pointer -= 1 }
        } else if c == "?" {
            enterQuery()
        } else if c == "#" {
            enterFragment()
        } else if c != nil {
            state = .path
            if c != "/" { pointer -= 1 }
        }
    }

    private mutating func pathState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
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
                enterQuery()
            } else if c == "#" {
                enterFragment()
            }
        } else if let c {
            var encoded = ""
            PercentEncodeSet.path.encode(c, into: &encoded)
            buffer.append(contentsOf: encoded.unicodeScalars)
        }
    }

    private mutating func opaquePathState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
        if c == "?" {
            enterQuery()
        } else if c == "#" {
            enterFragment()
        } else if c == " " {
            // A space before the query or fragment is encoded, so that it survives them being removed.
            let beforeQueryOrFragment = remaining(1) == "?" || remaining(1) == "#"
            opaquePath? += beforeQueryOrFragment ? "%20" : " "
        } else if let c, opaquePath != nil {
            PercentEncodeSet.c0Control.encode(c, into: &opaquePath!)
        }
    }

    private mutating func queryState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
        if c == "#" || c == nil {
            let set: PercentEncodeSet = isSpecial ? .specialQuery : .query
            url.query = (url.query ?? "") + set.encode(buffer)
            buffer = []
            if c == "#" {
                enterFragment()
            }
        } else if let c {
            buffer.append(c)
        }
    }

    private mutating func fragmentState(_ c: Unicode.Scalar?) throws(StandardURL.Failure) {
        if let c { PercentEncodeSet.fragment.encode(c, into: &fragment) }
    }
    /// The standard's "decrease pointer by 1": the next state reads the same code point.
    private mutating func reconsume(_ next: State) {
        state = next
        pointer -= 1
    }

    /// `//` starts an authority (both slashes read); anything else is read again in `otherwise`.
    private mutating func afterAuthoritySlashes(_ c: Unicode.Scalar?, otherwise: State) {
        if c == "/" && remaining(1) == "/" {
            state = .specialAuthorityIgnoreSlashes
            pointer += 1
        } else {
            reconsume(otherwise)
        }
    }

    /// A reference without an authority: the base's path and query, then a query, a fragment, or
    /// a path relative to the base's (a file URL starting with a drive letter starts afresh).
    private mutating func continueFromBase(_ c: Unicode.Scalar?, _ base: StandardURL, file: Bool) {
        takePath(of: base)
        url.query = base.query
        if c == "?" {
            enterQuery()
        } else if c == "#" {
            enterFragment()
        } else if c != nil {
            url.query = nil
            if file && startsWithWindowsDriveLetter(pointer) { segments = [] } else { shortenPath() }
            reconsume(.path)
        }
    }

    private mutating func enterQuery() {
        url.query = ""
        state = .query
    }

    private mutating func enterFragment() {
        url.fragment = ""
        state = .fragment
    }

    private mutating func takeAuthority(of base: StandardURL) {
        (url.username, url.password, url.host, url.port) = (base.username, base.password, base.host, base.port)
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
