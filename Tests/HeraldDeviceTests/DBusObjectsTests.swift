import Testing

@testable import HeraldDevice

/// What every object a Herald session-bus connection exports answers for free, as D-Bus
/// bindings do: introspection of the tree and the object, Peer, Properties; and the errors for
/// what is not there.
@Suite("D-Bus: the standard interfaces of exported objects")
struct DBusObjectsTests {
    static let objects = DBusObjects([UnifiedPushDistributor.path: UnifiedPushDistributor.introspection])

    static func call(_ path: String, _ interface: String?, _ member: String, _ body: [DBusValue] = []) -> DBusMessage {
        var message = DBusMessage(kind: .methodCall)
        (message.path, message.interface, message.member, message.body) = (path, interface, member, body)
        return message
    }

    static func answer(_ call: DBusMessage) -> DBusObjects.Answer? { objects.answer(call) { "0123456789abcdef0123456789abcdef" } }

    @Test("Introspect: the tree from / down, and the distributor's interfaces with the standard ones at its path")
    func introspection() throws {
        for (path, child) in [("/", "org"), ("/org", "unifiedpush"), ("/org/unifiedpush", "Distributor")] {
            guard case .reply(let body)? = Self.answer(Self.call(path, DBusObjects.introspectable, "Introspect")),
                  case .string(let xml) = body.first else {
                Issue.record("no introspection at \(path)")
                continue
            }
            #expect(xml.contains("<node name=\"\(child)\"/>") && !xml.contains("<interface"), "\(path): \(xml)")
        }
        guard case .reply(let body)? = Self.answer(Self.call("/org/unifiedpush/Distributor", nil, "Introspect")),
              case .string(let xml) = body.first else {
            Issue.record("no introspection of the distributor")
            return
        }
        for interface in ["org.unifiedpush.Distributor2", DBusObjects.introspectable, DBusObjects.peer, DBusObjects.properties] {
            #expect(xml.contains("<interface name=\"\(interface)\">"), "\(interface) missing")
        }
        #expect(xml.hasPrefix("<!DOCTYPE node") && xml.hasSuffix("</node>\n"))
        #expect(Self.answer(Self.call("/org/other", DBusObjects.introspectable, "Introspect"))
            == .error(name: "org.freedesktop.DBus.Error.UnknownObject", message: "no object at /org/other"))
    }

    @Test("Peer on any path; Properties of an object with none; unknown methods of standard interfaces; other calls left to the handler")
    func peerAndProperties() {
        #expect(Self.answer(Self.call("/anything", DBusObjects.peer, "Ping")) == .reply([]))
        #expect(Self.answer(Self.call("/", DBusObjects.peer, "GetMachineId")) == .reply([.string("0123456789abcdef0123456789abcdef")]))
        #expect(Self.objects.answer(Self.call("/", DBusObjects.peer, "GetMachineId")) { nil }
            == .error(name: "org.freedesktop.DBus.Error.Failed", message: "this machine has no /etc/machine-id"))
        #expect(Self.answer(Self.call(UnifiedPushDistributor.path, DBusObjects.properties, "GetAll", [.string("x")]))
            == .reply([.dictionary(key: "s", value: "v", [:])]))
        guard case .error(let name, _)? = Self.answer(Self.call(UnifiedPushDistributor.path, DBusObjects.properties, "Get", [.string("x"), .string("y")])) else {
            Issue.record("Get of a property that does not exist was answered")
            return
        }
        #expect(name == "org.freedesktop.DBus.Error.UnknownProperty")
        guard case .error(let unknown, _)? = Self.answer(Self.call("/", DBusObjects.peer, "Reboot")) else {
            Issue.record("an unknown Peer method was answered")
            return
        }
        #expect(unknown == "org.freedesktop.DBus.Error.UnknownMethod")
        #expect(Self.answer(Self.call(UnifiedPushDistributor.path, "org.unifiedpush.Distributor2", "Register")) == nil)
        guard case .error(let notThere, _) = Self.objects.unknown(Self.call("/nowhere", "x.y", "Z")),
              case .error(let noMethod, _) = Self.objects.unknown(Self.call(UnifiedPushDistributor.path, "x.y", "Z")) else {
            Issue.record("unknown calls were not errors")
            return
        }
        #expect(notThere == "org.freedesktop.DBus.Error.UnknownObject" && noMethod == "org.freedesktop.DBus.Error.UnknownMethod")
    }
}
