import ArgumentParser
import Crypto
import Foundation
import HeraldDevice
import HeraldCore
import HeraldGateway
import HeraldStorePostgres
import HeraldStoreSQLite
import Logging
import SwiftASN1
import X509

/// `herald doctor`: checks a gateway's configuration before it is started, one line per check.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check a gateway's configuration before starting it: ports, certificates, data directory, store, clock.",
        discussion: """
            Takes what herald gateway takes (its flags, --config FILE.yaml, HERALD_* variables) and
            checks, one line each: the ports are free to bind; the TLS certificate and key (given,
            or the development ones in the data directory) are readable, match, and are not expired
            or near their end; the client CAs are readable; the data directory is writable and no
            gateway holds it; the SQLite store passes its integrity check (or a PostgreSQL store is
            reachable and its schema not newer than this herald's); the clock is sane; how many connections the
            descriptor limit allows, and whether vm.max_map_count maps the device port's TLS buffers for all of
            them (a warning if not). Exit status 0 when nothing failed (warnings allowed), 1 otherwise.

            Example: herald doctor --config /etc/herald/gateway.yaml
            """)

    @Argument(parsing: .allUnrecognized, help: ArgumentHelp("herald gateway's flags (and --config FILE.yaml).", valueName: "gateway-flags"))
    var gatewayArguments: [String] = []

    /// Where the time comes from (the system's; tests of the checks pass instants).
    var clock: any WallClock { SystemWallClock() }

    /// 2025-01-01 to 2099-12-31: a clock outside is wrong.
    static let saneClock: ClosedRange<Int64> = 1_735_689_600_000...4_102_444_800_000

    enum Status: String { case ok = "ok  ", warn = "warn", fail = "FAIL" }

    func run() async throws {
        let settings = try Settings.layer(["gateway"] + gatewayArguments, environment: ProcessInfo.processInfo.environment)
        let gateway: GatewayRunCommand
        do { gateway = try GatewayRunCommand.parse(Array(settings.arguments.dropFirst())) } catch {
            Self.line(.fail, "configuration", GatewayRunCommand.message(for: error))
            throw ExitCode(1)
        }
        var failed = false
        func report(_ status: Status, _ check: String, _ detail: String) {
            if status == .fail { failed = true }
            Self.line(status, check, detail)
        }
        report(.ok, "configuration", "parses (\(settings.settings.filter { if case .defaultValue = $0.origin { false } else { true } }.count) settings given)")

        // The clock: certificates, tokens and receipts all read it.
        let nowMilliseconds = clock.nowMilliseconds()
        let now = Date(timeIntervalSince1970: Double(nowMilliseconds) / 1000)
        if !Self.saneClock.contains(nowMilliseconds) {
            report(.fail, "clock", "the system clock reads \(PlanFormat.utcString(nowMilliseconds)): set it (provider tokens and certificates are checked against it)")
        } else {
            report(.ok, "clock", PlanFormat.utcString(nowMilliseconds))
        }

        // The data directory.
        let data = gateway.data
        if data.dataDirectoryArgument != nil {
            let dir = data.dataDirectory
            Self.checkDirectory(dir, report)
            if data.databaseURL != nil {
                // Checked below.
            } else if FileManager.default.fileExists(atPath: data.databasePath) {
                do {
                    try SQLiteStore.checkIsHerald(path: data.databasePath)
                    let problems = try SQLiteBackup.integrityProblems(databaseAt: data.databasePath)
                    report(problems.isEmpty ? .ok : .fail, "store", problems.isEmpty ? "\(data.databasePath) passes its integrity check" : problems.prefix(3).joined(separator: "; "))
                } catch {
                    report(.fail, "store", "\(error)")
                }
            } else {
                report(.ok, "store", "\(data.databasePath) will be created at the first start")
            }
        }

        if let databaseURL = data.databaseURL {
            let (status, detail) = await Self.checkPostgres(databaseURL)
            report(status, "store", detail)
        }

        // Ports.
        let ports: [(String, Int?, String)] = [
            ("provider-port", gateway.providerPort, gateway.host), ("device-port", gateway.devicePort, gateway.host),
            ("webpush-port", gateway.webpushPort, gateway.host), ("channel-port", gateway.channelPort, gateway.host),
            ("feedback-port", gateway.feedbackPort, gateway.host), ("admin-port", gateway.adminPort, gateway.adminHost),
            ("h2c-port", gateway.h2cPort, "127.0.0.1"),
        ]
        for (name, port, host) in ports {
            guard let port else { continue }
            if port == 0 { report(.ok, name, "0: a free port is chosen at start"); continue }
            if let problem = Self.bindProblem(host: host, port: port) {
                report(.fail, name, "\(host):\(port) \(problem)")
            } else {
                report(.ok, name, "\(host):\(port) is free")
            }
        }

        // TLS.
        let tlsDirectory = (data.dataDirectory as NSString).appendingPathComponent("tls")
        if let cert = gateway.tlsCert, let key = gateway.tlsKey {
            Self.checkCertificate(cert: cert, key: key, check: "tls", now: now, report)
        } else if data.dataDirectoryArgument != nil {
            let cert = (tlsDirectory as NSString).appendingPathComponent("server.pem")
            if FileManager.default.fileExists(atPath: cert) {
                Self.checkCertificate(cert: cert, key: (tlsDirectory as NSString).appendingPathComponent("server-key.pem"), check: "tls (development)", now: now, report)
            } else {
                report(.ok, "tls (development)", "a development CA and certificate for localhost are made at the first start")
            }
        }
        for (name, path) in [("provider-client-ca", gateway.providerClientCa), ("feedback-client-ca", gateway.feedbackClientCa)] {
            guard let path else { continue }
            do {
                let certificates = try Self.certificates(path)
                report(.ok, name, "\(path): \(certificates.count) certificate\(certificates.count == 1 ? "" : "s")")
            } catch {
                report(.fail, name, "\(path): \(error)")
            }
        }
        if let secret = gateway.enrollmentSecretFile {
            report(FileManager.default.isReadableFile(atPath: secret) ? .ok : .fail, "enrollment-secret-file", FileManager.default.isReadableFile(atPath: secret) ? "\(secret) is readable" : "\(secret) cannot be read")
        }
        let (status, detail) = Self.connections(ConnectionCapacity.forThisProcess())
        report(status, "connections", detail)
        if failed { throw ExitCode(1) }
    }

    /// What the descriptor limit and the kernel's mappings let this gateway hold.
    static func connections(_ capacity: ConnectionCapacity) -> (Status, String) {
        let held = "up to \(capacity.connections) on all ports together (descriptor limit \(capacity.descriptorLimit))"
        guard !capacity.mappingsSuffice, let maxMapCount = capacity.maxMapCount, let mapped = capacity.mappedConnections else {
            return (.ok, held)
        }
        return (.warn, "\(held), but vm.max_map_count \(maxMapCount) maps the device port's TLS buffers for about \(mapped) devices; "
            + "past that they come from the heap (a few KiB more each): sysctl -w vm.max_map_count=\(capacity.neededMaxMapCount) for all of them")
    }

    /// A PostgreSQL store: reachable, and its schema what this herald expects (read only: the
    /// gateway migrates at its start, so an older schema is a warning, a newer one a failure).
    static func checkPostgres(_ databaseURL: String) async -> (Status, String) {
        let url: PostgresURL
        do { url = try PostgresURL(databaseURL) } catch { return (.fail, "--database: \(error)") }
        let version: PostgresStore.SchemaVersion
        do {
            version = try await PostgresStore.schemaVersion(url, logger: Logger(label: "herald.doctor") { _ in SwiftLogNoOpLogHandler() })
        } catch {
            return (.fail, "\(error)")
        }
        switch version.applied {
        case nil:
            return (.ok, "PostgreSQL \(url) answers; Herald's schema (version \(version.current)) is created at the first start")
        case let applied? where applied < version.current:
            return (.warn, "PostgreSQL \(url) answers; its schema is version \(applied), migrated to \(version.current) when the gateway starts (back it up first: pg_dump)")
        case let applied? where applied > version.current:
            return (.fail, "PostgreSQL \(url): its schema is version \(applied), newer than this herald knows (\(version.current)): upgrade herald")
        default:
            return (.ok, "PostgreSQL \(url) answers; its schema is current (version \(version.current))")
        }
    }

    static func line(_ status: Status, _ check: String, _ detail: String) {
        printLineFlushed("\(status.rawValue)  \(check): \(detail)")
    }

    static func checkDirectory(_ dir: String, _ report: (Status, String, String) -> Void) {
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: dir, isDirectory: &isDirectory) {
            let parent = (dir as NSString).deletingLastPathComponent
            report(FileManager.default.isWritableFile(atPath: parent) ? .ok : .fail, "data-dir",
                   FileManager.default.isWritableFile(atPath: parent) ? "\(dir) will be created" : "\(dir) does not exist and \(parent) is not writable")
            return
        }
        guard isDirectory.boolValue else { return report(.fail, "data-dir", "\(dir) is a file, not a directory") }
        let probe = (dir as NSString).appendingPathComponent(".herald-doctor-\(getpid())")
        guard FileManager.default.createFile(atPath: probe, contents: Data("x".utf8)) else {
            return report(.fail, "data-dir", "\(dir) is not writable by this user (uid \(getuid()))")
        }
        try? FileManager.default.removeItem(atPath: probe)
        // A running gateway holds the directory's lock.
        let lock = (dir as NSString).appendingPathComponent("herald.lock")
        let descriptor = open(lock, O_RDONLY | O_CLOEXEC)
        if descriptor >= 0 {
            defer { close(descriptor) }
            if flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
                return report(.warn, "data-dir", "\(dir) is writable; a herald gateway is running on it now (its ports will show as in use)")
            }
            flock(descriptor, LOCK_UN)
        }
        report(.ok, "data-dir", "\(dir) is writable")
    }

    /// Why `host:port` cannot be bound now, or nil when it can.
    static func bindProblem(host: String, port: Int) -> String? {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &result) == 0, let info = result else { return "cannot be resolved" }
        defer { freeaddrinfo(result) }
        let descriptor = socket(info.pointee.ai_family, info.pointee.ai_socktype, info.pointee.ai_protocol)
        guard descriptor >= 0 else { return "cannot be opened: \(String(cString: strerror(errno)))" }
        defer { close(descriptor) }
        var yes: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        guard bind(descriptor, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else {
            let error = errno
            return error == EADDRINUSE ? "is in use" : error == EACCES ? "needs privileges (a port below 1024: CAP_NET_BIND_SERVICE)" : "cannot be bound: \(String(cString: strerror(error)))"
        }
        return nil
    }

    static func certificates(_ path: String) throws -> [Certificate] {
        guard let data = FileManager.default.contents(atPath: path), data.count <= 1 << 20 else { throw CommandFileError("cannot be read (or is over 1 MiB)") }
        let documents = try PEMDocument.parseMultiple(pemString: String(decoding: data, as: UTF8.self))
        let certificates = try documents.filter { $0.discriminator == "CERTIFICATE" }.map { try Certificate(pemDocument: $0) }
        guard !certificates.isEmpty else { throw CommandFileError("holds no certificate") }
        return certificates
    }

    /// The same checks as the gateway's start (``GatewayConfiguration/TLSFiles``): readable,
    /// the key the certificate's, and where its validity stands (expired or not yet valid fails,
    /// within 14 days of its end warns).
    static func checkCertificate(cert: String, key: String, check: String, now: Date, _ report: (Status, String, String) -> Void) {
        let files = GatewayConfiguration.TLSFiles(certificateChainPath: cert, privateKeyPath: key)
        do { try files.check() } catch { return report(.fail, check, "\(error)") }
        let stamp = { (date: Date) in ISO8601DateFormatter().string(from: date) }
        switch files.validity(nowMilliseconds: Int64(now.timeIntervalSince1970 * 1000)) {
        case .expired(let end)?: report(.fail, check, "\(cert) expired on \(stamp(end))")
        case .notYetValid(let start)?: report(.fail, check, "\(cert) is not valid before \(stamp(start)) (is the clock right?)")
        case .endsSoon(let end)?:
            report(.warn, check, "\(cert) expires in \(Int(end.timeIntervalSince(now) / 86_400)) days (\(stamp(end))): renew it")
        case .valid(let end)?:
            report(.ok, check, "\(cert) matches its key, valid until \(stamp(end)) (\(Int(end.timeIntervalSince(now) / 86_400)) days)")
        case nil: report(.fail, check, "\(cert) holds no readable certificate")
        }
    }
}
