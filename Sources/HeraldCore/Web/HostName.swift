#if canImport(Glibc)
import Glibc
#endif

/// A host as URLs write it and as sockets and TLS take it: an IPv6 literal is bracketed in a URL
/// and a `Host` header (`[::1]:2197`) but not when connecting (`::1`), and an IP literal is never
/// sent as TLS's server name (SNI names hosts only).
public enum HostName {
    /// `[::1]` → `::1`; any other host unchanged.
    public static func unbracketed(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") && host.count >= 2 ? String(host.dropFirst().dropLast()) : host
    }

    /// Whether `host` (bracketed or not) is an IPv4 or IPv6 address rather than a name.
    public static func isIPAddress(_ host: String) -> Bool {
        let bare = unbracketed(host)
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, bare, &v4) == 1 || inet_pton(AF_INET6, bare, &v6) == 1
    }

    /// The TLS server name for `host`: nil for an IP address.
    public static func serverName(_ host: String) -> String? {
        isIPAddress(host) ? nil : unbracketed(host)
    }

    /// `host:port` as a `Host` header or an `:authority` writes it (IPv6 bracketed).
    public static func authority(_ host: String, port: Int) -> String {
        let bare = unbracketed(host)
        return bare.contains(":") ? "[\(bare)]:\(port)" : "\(bare):\(port)"
    }
}
