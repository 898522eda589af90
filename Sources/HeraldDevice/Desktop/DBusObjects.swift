import Foundation

/// The objects a session-bus connection of Herald's exports, and the standard interfaces every
/// D-Bus binding answers for free on each of them: `org.freedesktop.DBus.Introspectable`
/// (the tree and each object's interfaces, which connectors such as KDE's read to choose an API
/// version), `org.freedesktop.DBus.Peer` (`Ping`, `GetMachineId`) on any path, and
/// `org.freedesktop.DBus.Properties` (these objects have none). Pure: the answer to a call, or
/// nil when the call is not for a standard interface.
struct DBusObjects: Sendable {
    /// Exported paths, each with the XML of its own interfaces (`<interface …>…</interface>`).
    var objects: [String: String]

    init(_ objects: [String: String] = [:]) { self.objects = objects }

    /// What to answer.
    enum Answer: Equatable {
        case reply([DBusValue])
        case error(name: String, message: String)
    }

    static let introspectable = "org.freedesktop.DBus.Introspectable"
    static let peer = "org.freedesktop.DBus.Peer"
    static let properties = "org.freedesktop.DBus.Properties"

    /// The answer to `call` when it is for a standard interface; nil otherwise.
    func answer(_ call: DBusMessage, machineID: () -> String?) -> Answer? {
        let path = call.path ?? "/"
        switch (call.interface, call.member) {
        case (Self.peer, "Ping"), (nil, "Ping"):
            return .reply([])
        case (Self.peer, "GetMachineId"), (nil, "GetMachineId"):
            guard let id = machineID() else {
                return .error(name: "org.freedesktop.DBus.Error.Failed", message: "this machine has no /etc/machine-id")
            }
            return .reply([.string(id)])
        case (Self.introspectable, "Introspect"), (nil, "Introspect"):
            guard let xml = introspection(of: path) else { return unknownObject(path) }
            return .reply([.string(xml)])
        case (Self.properties, "GetAll"):
            guard objects[path] != nil else { return unknownObject(path) }
            return .reply([.dictionary(key: "s", value: "v", [:])])
        case (Self.properties, "Get"), (Self.properties, "Set"):
            guard objects[path] != nil else { return unknownObject(path) }
            let name = call.body.count > 1 ? call.body[1].stringValue ?? "?" : "?"
            return .error(name: "org.freedesktop.DBus.Error.UnknownProperty", message: "\(path) has no property \(name.prefix(64))")
        case (Self.introspectable?, _), (Self.peer?, _), (Self.properties?, _):
            return .error(name: "org.freedesktop.DBus.Error.UnknownMethod", message: "\(call.interface ?? "") has no method \((call.member ?? "").prefix(64))")
        default:
            return nil
        }
    }

    /// The answer to a call no handler serves: the object or the method does not exist.
    func unknown(_ call: DBusMessage) -> Answer {
        let path = call.path ?? "/"
        guard objects[path] != nil else { return unknownObject(path) }
        return .error(name: "org.freedesktop.DBus.Error.UnknownMethod",
                      message: "\(path) has no method \((call.interface ?? "").prefix(128)).\((call.member ?? "").prefix(64))")
    }

    private func unknownObject(_ path: String) -> Answer {
        .error(name: "org.freedesktop.DBus.Error.UnknownObject", message: "no object at \(path.prefix(256))")
    }

    static let standardInterfaces = """
          <interface name="org.freedesktop.DBus.Introspectable">
            <method name="Introspect"><arg name="xml_data" type="s" direction="out"/></method>
          </interface>
          <interface name="org.freedesktop.DBus.Peer">
            <method name="Ping"/>
            <method name="GetMachineId"><arg name="machine_uuid" type="s" direction="out"/></method>
          </interface>
          <interface name="org.freedesktop.DBus.Properties">
            <method name="Get"><arg name="interface_name" type="s" direction="in"/><arg name="property_name" type="s" direction="in"/><arg name="value" type="v" direction="out"/></method>
            <method name="GetAll"><arg name="interface_name" type="s" direction="in"/><arg name="properties" type="a{sv}" direction="out"/></method>
            <method name="Set"><arg name="interface_name" type="s" direction="in"/><arg name="property_name" type="s" direction="in"/><arg name="value" type="v" direction="in"/></method>
            <signal name="PropertiesChanged"><arg name="interface_name" type="s"/><arg name="changed_properties" type="a{sv}"/><arg name="invalidated_properties" type="as"/></signal>
          </interface>

        """

    /// The introspection XML of `path`: its interfaces (the standard ones too) when it is
    /// exported, and its children (the next element of every exported path below it); nil when
    /// nothing is at or below it.
    func introspection(of path: String) -> String? {
        let prefix = path == "/" ? "/" : path + "/"
        let children = Set(objects.keys.compactMap { exported -> String? in
            guard exported.hasPrefix(prefix), exported.count > prefix.count else { return nil }
            return exported.dropFirst(prefix.count).split(separator: "/").first.map(String.init)
        }).sorted()
        let own = objects[path]
        guard own != nil || !children.isEmpty else { return nil }
        var xml = """
            <!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">
            <node>

            """
        if let own { xml += Self.standardInterfaces + own }
        for child in children { xml += "  <node name=\"\(child)\"/>\n" }
        return xml + "</node>\n"
    }

    /// This machine's D-Bus id: `/etc/machine-id`, else `/var/lib/dbus/machine-id` (32 hex digits).
    static func machineID() -> String? {
        for file in ["/etc/machine-id", "/var/lib/dbus/machine-id"] {
            guard let handle = FileHandle(forReadingAtPath: file) else { continue }
            defer { try? handle.close() }
            let text = String(decoding: (try? handle.read(upToCount: 64)) ?? Data(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            if text.count == 32, text.allSatisfy(\.isHexDigit) { return text }
        }
        return nil
    }
}
