import HeraldCore
import Testing

@Suite("HostName: IPv6 literals from URLs, to sockets and TLS")
struct HostNameTests {
    @Test("[::1] is connected to as ::1, written back bracketed, and never sent as a TLS server name")
    func literals() {
        #expect(HostName.unbracketed("[::1]") == "::1")
        #expect(HostName.unbracketed("localhost") == "localhost")
        #expect(HostName.unbracketed("[") == "[")
        #expect(HostName.authority("[::1]", port: 2197) == "[::1]:2197")
        #expect(HostName.authority("::1", port: 2197) == "[::1]:2197")
        #expect(HostName.authority("127.0.0.1", port: 2197) == "127.0.0.1:2197")
        #expect(HostName.authority("push.example.com", port: 443) == "push.example.com:443")
        for address in ["127.0.0.1", "::1", "[::1]", "fe80::1", "::ffff:127.0.0.1"] {
            #expect(HostName.isIPAddress(address), "\(address)")
            #expect(HostName.serverName(address) == nil, "\(address)")
        }
        for name in ["localhost", "push.example.com", "1.example", "::g", "", "[localhost]"] {
            #expect(!HostName.isIPAddress(name), "\(name)")
        }
        #expect(HostName.serverName("push.example.com") == "push.example.com")
    }
}
