import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HeraldClient
import HeraldCore
import HeraldStore
import HeraldStoreSQLite
import HeraldTesting
import Testing

/// The `herald` command, run as a person or a script would.
@Suite("herald CLI", .serialized)
struct CLITests {
    @Test("gateway, keys create, tokens create/revoke and push send work together")
    func walkThrough() async throws {
        let dir = try TemporaryDirectory.make(prefix: "herald-cli")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let gateway = try GatewayProcess(dataDirectory: dir)
        #expect(gateway.providerPort > 0 && gateway.h2cPort > 0 && gateway.adminPort > 0)
        #expect(gateway.caPath == dir + "/tls/ca.pem")

        let keyPath = dir + "/key.p8"
        let key = try Herald.run(["keys", "create", "--data-dir", dir, "--team", "TEAM123456", "--topic", "com.example.app", "--out", keyPath])
        #expect(key.status == 0, "\(key.stderr)")
        #expect(KeyID(key.stdout) != nil)
        let pem = try String(contentsOfFile: keyPath, encoding: .utf8)
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))

        let token = try Herald.run(["tokens", "create", "--data-dir", dir, "--topic", "com.example.app"])
        #expect(token.status == 0)
        #expect(DeviceToken(hex: token.stdout)?.bytes.count == 32)

        let send = ["push", "send", "--url", "https://localhost:\(gateway.providerPort)", "--ca", gateway.caPath,
                    "--key", keyPath, "--key-id", key.stdout, "--team", "TEAM123456", "--topic", "com.example.app",
                    "--token", token.stdout, "--alert", "Hello"]
        let ok = try Herald.run(send)
        #expect(ok.status == 0, "\(ok.stdout) \(ok.stderr)")
        #expect(NotificationID(header: ok.stdout) != nil)

        // The README's curl recipe, with the provider token herald keys jwt prints.
        let jwt = try Herald.run(["keys", "jwt", "--key", keyPath, "--key-id", key.stdout, "--team", "TEAM123456"])
        #expect(jwt.status == 0 && jwt.stdout.split(separator: ".").count == 3, "\(jwt.stderr)")
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        curl.arguments = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code} %{http_version}", "--http2", "--cacert", gateway.caPath,
                          "-H", "authorization: bearer \(jwt.stdout)", "-H", "apns-topic: com.example.app", "-d", #"{"aps":{"alert":"hi"}}"#,
                          "https://localhost:\(gateway.providerPort)/3/device/\(token.stdout)"]
        let curlOut = Pipe()
        curl.standardOutput = curlOut
        try curl.run()
        curl.waitUntilExit()
        #expect(String(decoding: curlOut.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self) == "200 2")
        #expect(try Herald.run(["--version"]).stdout.isEmpty == false)

        // The same over h2c.
        var h2c = send
        h2c[3] = "http://127.0.0.1:\(gateway.h2cPort)"
        #expect(try Herald.run(h2c).status == 0)

        let revoke = try Herald.run(["tokens", "revoke", "--data-dir", dir, "--token", token.stdout])
        #expect(revoke.status == 0)
        let gone = try Herald.run(send)
        #expect(gone.status == 1)
        #expect(gone.stdout.hasPrefix("410 Unregistered timestamp="))

        let wrongTopic = try Herald.run(send.map { $0 == "com.example.app" ? "com.other.app" : $0 })
        #expect(wrongTopic.status == 1)
        #expect(wrongTopic.stdout == "400 TopicDisallowed")

        // Metrics count what happened.
        let metrics = try await httpGet(port: gateway.adminPort, path: "/metrics")
        #expect(metrics.contains(#"herald_provider_requests_total{status="410",reason="Unregistered"} 1"#))
        #expect(metrics.contains("herald_pushes_accepted_total 3"))  // two from push send, one from curl
        #expect(try await httpGet(port: gateway.adminPort, path: "/health").contains("ok"))

        // Many tokens from a file: one line each, a summary, exit 1 when some are rejected.
        var fresh: [String] = []
        for _ in 0..<3 { fresh.append(try Herald.run(["tokens", "create", "--data-dir", dir, "--topic", "com.example.app"]).stdout) }
        let list = dir + "/tokens.txt"
        try (["# a comment", fresh[0], "", fresh[1], token.stdout, "00ff", fresh[2]].joined(separator: "\n") + "\n")
            .write(toFile: list, atomically: true, encoding: .utf8)
        let batchFlags = Array(send.prefix(send.count - 4)) + ["--tokens", list, "--title", "Hi", "--alert", "there", "--badge", "3", "--data", "id=42"]
        let batch = try Herald.run(batchFlags)
        #expect(batch.status == 1, "\(batch.stderr)")
        let lines = batch.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 5)
        for t in fresh { #expect(lines.contains { $0.hasPrefix(t + " ") && NotificationID(header: String($0.dropFirst(t.count + 1))) != nil }) }
        #expect(lines.contains { $0.hasPrefix(token.stdout + " 410 Unregistered timestamp=") })
        #expect(lines.contains("00ff 400 BadDeviceToken"))
        #expect(batch.stderr.contains("sent 3, failed 2 (400 BadDeviceToken: 1, 410 Unregistered: 1)"))
        let allGood = try Herald.run(Array(send.prefix(send.count - 4)) + ["--token", fresh[0], "--token", fresh[1], "--alert", "x"])
        #expect(allGood.status == 0 && allGood.stderr.contains("sent 2, failed 0"))
        let unreachable = try Herald.run(send.map { $0.hasPrefix("https://") ? "https://127.0.0.1:1" : $0 } + ["--attempts", "1"])
        #expect(unreachable.status == 2 && unreachable.stderr.contains("cannot push to https://127.0.0.1:1"))
        let both = try Herald.run(send + ["--payload", list])
        #expect(both.status != 0 && both.stderr.contains("give either --payload FILE or payload flags"))

        #expect(gateway.stop(signal: SIGTERM) == 0)
    }

    @Test("inspection from the CLI: keys list/revoke, tokens list, devices list, held list, receipts show, feedback list, gateway watch; a wrong --data-dir is refused")
    func inspection() async throws {
        let dir = try TemporaryDirectory.make(prefix: "herald-cli")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let gateway = try GatewayProcess(dataDirectory: dir)
        let watch = try DeviceProcess(arguments: ["gateway", "watch", "--admin", "http://127.0.0.1:\(gateway.adminPort)", "--json"])
        let keyPath = dir + "/key.p8"
        let key = try Herald.run(["keys", "create", "--data-dir", dir, "--team", "TEAM123456", "--topic", "com.example.app", "--out", keyPath]).stdout
        let token = try Herald.run(["tokens", "create", "--data-dir", dir, "--topic", "com.example.app"]).stdout
        let send = ["push", "send", "--url", "https://localhost:\(gateway.providerPort)", "--ca", gateway.caPath,
                    "--key", keyPath, "--key-id", key, "--team", "TEAM123456", "--topic", "com.example.app", "--token", token, "--alert", "Held for you"]
        // The watcher is subscribed once its connection is up: retry the first push until it is seen.
        var apnsID = ""
        var accepted: [String: Any] = [:]
        for _ in 0..<50 where accepted.isEmpty {
            apnsID = try Herald.run(send).stdout
            accepted = (try? await watch.next("accepted", timeout: .milliseconds(200))) ?? [:]
        }
        #expect(accepted["apnsId"] as? String == apnsID && accepted["outcome"] as? String == "stored" && accepted["token"] as? String == token)
        _ = try Herald.run(send.map { $0 == "com.example.app" ? "com.other.app" : $0 })
        let refused = try await watch.next("refused")
        #expect(refused["reason"] as? String == "TopicDisallowed" && refused["status"] as? Int == 400)
        // A token naming another team: 403 for the provider, and for the operator which of the three to check.
        _ = try Herald.run(send.map { $0 == "TEAM123456" ? "TEAM999999" : $0 })
        let wrongTeam = try await watch.next("refused")
        #expect(wrongTeam["reason"] as? String == "InvalidProviderToken")
        #expect((wrongTeam["why"] as? String)?.contains("belongs to team TEAM123456, the token names team TEAM999999 (check the team)") == true, "\(wrongTeam)")

        let keys = try Herald.run(["keys", "list", "--data-dir", dir])
        #expect(keys.status == 0)
        #expect(keys.stdout.contains("TEAM123456") && keys.stdout.contains(key) && keys.stdout.contains("com.example.app"))
        let tokens = try Herald.run(["tokens", "list", "--data-dir", dir, "--topic", "com.example.app", "--json"])
        let tokenList = try #require(try JSONSerialization.jsonObject(with: Data(tokens.stdout.utf8)) as? [String: Any])
        #expect((tokenList["items"] as? [[String: Any]])?.map { $0["token"] as? String } == [token])
        let held = try Herald.run(["held", "list", "--data-dir", dir, "--token", token])
        #expect(held.status == 0 && held.stdout.contains(apnsID) && held.stdout.contains("Held for you"), "\(held.stdout) \(held.stderr)")
        let receipt = try Herald.run(["receipts", "show", "--data-dir", dir, "--apns-id", apnsID])
        #expect(receipt.stdout.hasPrefix("com.example.app \(token): stored"), "\(receipt.stdout)")
        #expect(try Herald.run(["devices", "list", "--data-dir", dir]).stdout.contains("(none)"))

        _ = try Herald.run(["tokens", "revoke", "--data-dir", dir, "--token", token])
        for _ in 0..<2 {
            let feedback = try Herald.run(["feedback", "list", "--data-dir", dir, "--topic", "com.example.app"])
            #expect(feedback.stdout.contains(token), "listing does not clear the list")
        }

        let revoked = try Herald.run(["keys", "revoke", "--data-dir", dir, "--key-id", key])
        #expect(revoked.status == 0 && revoked.stdout.hasPrefix("revoked \(key) of team TEAM123456"))
        #expect(try Herald.run(["keys", "list", "--data-dir", dir, "--json"]).stdout.contains("\"revokedAt\":"))
        let unknownKey = try Herald.run(["keys", "revoke", "--data-dir", dir, "--key-id", "NOSUCHKEY1"])
        #expect(unknownKey.status != 0 && unknownKey.stderr.contains("no key NOSUCHKEY1 is registered"))

        // A mistyped --data-dir is refused, not created.
        let missing = try Herald.run(["tokens", "list", "--data-dir", dir + "/nope"])
        #expect(missing.status != 0 && missing.stderr.contains("does not exist"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/nope"))
        let notData = try Herald.run(["devices", "list", "--data-dir", dir + "/tls"])
        #expect(notData.status != 0 && notData.stderr.contains("has no herald.sqlite"))
        let badReceipt = try Herald.run(["receipts", "show", "--data-dir", dir, "--apns-id", "nope"])
        #expect(badReceipt.status != 0 && badReceipt.stderr.contains("--apns-id must be a UUID"))
        let badWatch = try Herald.run(["gateway", "watch", "--admin", "127.0.0.1:9090"])
        #expect(badWatch.status != 0 && badWatch.stderr.contains("--admin must be http://HOST:PORT"))

        watch.stop(signal: SIGKILL)
        #expect(gateway.stop(signal: SIGTERM) == 0)
    }

    @Test("errors say what to fix: a second gateway on a data directory in use, a port in use, a --data-dir that does not exist, an untrusted certificate, a push to the device port, a device pointed at the provider port, a provider token the gateway refuses, nothing listening")
    func errorsSayWhatToFix() async throws {
        let dir = try TemporaryDirectory.make(prefix: "herald-cli")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let gateway = try GatewayProcess(dataDirectory: dir, extraArguments: ["--device-port", "0"])

        let second = try Herald.run(["gateway", "--data-dir", dir, "--provider-port", "0"])
        #expect(second.status != 0 && second.stderr.contains("another herald gateway is running on --data-dir \(dir)"), "\(second.stderr)")
        let busy = try Herald.run(["gateway", "--data-dir", dir + "/other", "--provider-port", String(gateway.providerPort)])
        #expect(busy.status != 0, "\(busy.stdout)")
        #expect(busy.stderr.contains("already in use") && busy.stderr.contains("--provider-port \(gateway.providerPort)"), "\(busy.stderr)")
        // Its lock went with it: the directory it made can take a gateway again.
        let other = try GatewayProcess(dataDirectory: dir + "/other", extraArguments: ["--log-format", "json", "--log-level", "info"])
        #expect(other.stop(signal: SIGTERM) == 0)
        // --log-format json: each log record is one JSON object a line.
        let records = other.stderrText.split(separator: "\n").filter { $0.hasPrefix("{") }.compactMap { try? JSONReader.parseObject(Array($0.utf8)) }
        #expect(records.contains { $0["message"]?.stringValue == "gateway listening" && $0["level"]?.stringValue == "info" }, "\(other.stderrText)")

        let missing = try Herald.run(["keys", "create", "--data-dir", dir + "/mistyped", "--team", "TEAM123456", "--topic", "com.example.app", "--out", dir + "/k.p8"])
        #expect(missing.status != 0 && missing.stderr.contains("--data-dir \(dir)/mistyped does not exist"))
        #expect(!FileManager.default.fileExists(atPath: dir + "/mistyped"))
        #expect(try Herald.run(["tokens", "create", "--data-dir", dir + "/mistyped", "--topic", "com.example.app"]).status != 0)

        let keyPath = dir + "/key.p8"
        let key = try Herald.run(["keys", "create", "--data-dir", dir, "--team", "TEAM123456", "--topic", "com.example.app", "--out", keyPath]).stdout
        let token = try Herald.run(["tokens", "create", "--data-dir", dir, "--topic", "com.example.app"]).stdout
        let noKey = try Herald.run(["keys", "jwt", "--key", dir + "/missing.p8", "--key-id", key, "--team", "TEAM123456"])
        #expect(noKey.status != 0 && noKey.stderr.contains("cannot read the --key file \(dir)/missing.p8"), "\(noKey.stderr)")
        let notKey = try Herald.run(["keys", "jwt", "--key", gateway.caPath, "--key-id", key, "--team", "TEAM123456"])
        #expect(notKey.status != 0 && notKey.stderr.contains("is not a PEM PKCS#8 P-256 private key"), "\(notKey.stderr)")
        func push(_ url: String, ca: String?) throws -> Herald.Result {
            try Herald.run(["push", "send", "--url", url, "--key", keyPath, "--key-id", key, "--team", "TEAM123456", "--topic", "com.example.app",
                            "--token", token, "--alert", "hi", "--timeout", "10"] + (ca.map { ["--ca", $0] } ?? []))
        }
        let untrusted = try push("https://localhost:\(gateway.providerPort)", ca: nil)
        #expect(untrusted.status != 0 && untrusted.stderr.contains("CERTIFICATE_VERIFY_FAILED") && untrusted.stderr.contains("--ca DIR/tls/ca.pem"),
                "\(untrusted.stderr)")
        let devicePort = try push("https://localhost:\(gateway.devicePort)", ca: gateway.caPath)
        #expect(devicePort.stderr.contains("does not speak HTTP/2") && devicePort.stderr.contains("provider port"), "\(devicePort.stderr)")
        #expect(try push("https://localhost:\(gateway.providerPort)", ca: gateway.caPath).status == 0)
        // A key id or team the gateway does not hold: the 403 comes with what to check.
        let wrongTeam = try Herald.run(["push", "send", "--url", "https://localhost:\(gateway.providerPort)", "--ca", gateway.caPath, "--key", keyPath,
                                        "--key-id", key, "--team", "TEAM654321", "--topic", "com.example.app", "--token", token, "--alert", "hi"])
        #expect(wrongTeam.status == 1 && wrongTeam.stdout.contains("403 InvalidProviderToken"), "\(wrongTeam.stdout)")
        #expect(wrongTeam.stderr.contains("check the key id (--key-id), the team (--team) and the key file (--key)"), "\(wrongTeam.stderr)")

        let device = try DeviceProcess(dataDirectory: dir + "/phone", gateway: "wss://localhost:\(gateway.providerPort)", ca: gateway.caPath,
                                       apps: ["com.example.app"])
        let disconnected = try await device.next("disconnected")
        #expect((disconnected["reason"] as? String)?.contains("point --gateway at its device port") == true, "\(disconnected)")
        device.stop()
        #expect(gateway.stop(signal: SIGTERM) == 0)

        let refused = try push("https://localhost:\(gateway.providerPort)", ca: gateway.caPath)
        #expect(refused.status != 0 && refused.stderr.contains("nothing listens there"), "\(refused.stderr)")
    }

    @Test("a restarted gateway reuses its development CA")
    func reusesCA() async throws {
        let dir = try TemporaryDirectory.make(prefix: "herald-cli")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try GatewayProcess(dataDirectory: dir)
        let ca = try String(contentsOfFile: first.caPath, encoding: .utf8)
        first.stop()
        let second = try GatewayProcess(dataDirectory: dir)
        #expect(try String(contentsOfFile: second.caPath, encoding: .utf8) == ca)
        second.stop()
    }

    @Test("every push answered 200 is in the database after kill -9")
    func durableAfterKill() async throws {
        let dir = try TemporaryDirectory.make(prefix: "herald-cli")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let gateway = try GatewayProcess(dataDirectory: dir)
        let keyPath = dir + "/key.p8"
        let keyID = try Herald.run(["keys", "create", "--data-dir", dir, "--team", "TEAM123456", "--topic", "com.example.app", "--out", keyPath]).stdout
        let signer = try ProviderTokenSigner(keyID: keyID, teamID: "TEAM123456", pem: String(contentsOfFile: keyPath, encoding: .utf8))
        let store = try SQLiteStore(path: dir + "/herald.sqlite")
        var tokens: [DeviceToken] = []
        for _ in 0..<40 {
            let token = DeviceToken.random()
            try await store.registerToken(TokenRegistration(token: token, scope: TokenScope(bundleID: "com.example.app"), environment: .development, createdAtMilliseconds: 0))
            tokens.append(token)
        }
        let connection = try await HTTP2Connection.connect(host: "127.0.0.1", port: gateway.h2cPort, tls: nil)
        let bearer = "bearer " + (try signer.token(issuedAt: SystemWallClock().nowSeconds()))
        var accepted: [DeviceToken: String] = [:]
        for token in tokens {
            let response = try await connection.send(.push(token: token, authorization: bearer))
            if response.status == 200 { accepted[token] = response.apnsID }
        }
        #expect(accepted.count == tokens.count)
        gateway.stop(signal: SIGKILL)
        await connection.close()
        let reopened = try SQLiteStore(path: dir + "/herald.sqlite")
        for (token, id) in accepted {
            let held = try await reopened.storedNotifications(for: token, policy: .default, nowMilliseconds: 0)
            #expect(held.map(\.id) == [NotificationID(header: id)!])
        }
    }

    @Test("bad flags get a message that says what to fix, with the usage of the command that failed")
    func badInput() throws {
        let dir = try TemporaryDirectory.make(prefix: "herald-cli")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let team = try Herald.run(["keys", "create", "--data-dir", dir, "--team", "short", "--topic", "a.b", "--out", dir + "/k.p8"])
        #expect(team.status != 0)
        #expect(team.stderr.contains("--team must be 10 letters or digits"))
        let revoke = try Herald.run(["tokens", "revoke", "--data-dir", dir, "--token", "xyz"])
        #expect(revoke.status != 0)
        #expect(revoke.stderr.contains("--token must be hexadecimal"))
        let unknown = try Herald.run(["tokens", "revoke", "--data-dir", dir, "--token", String(repeating: "ab", count: 32)])
        #expect(unknown.stderr.contains("no token"))
        let tls = try Herald.run(["gateway", "--data-dir", dir, "--tls-cert", "x.pem"])
        #expect(tls.status != 0)
        #expect(tls.stderr.contains("give both --tls-cert and --tls-key"))
        let push = try Herald.run(["push", "send", "--url", "ftp://x", "--key", "k", "--key-id", "K", "--team", "T", "--topic", "t", "--token", "00", "--alert", "a"])
        #expect(push.stderr.contains("--gateway must look like https://HOST:PORT"))  // --url: the old spelling, still taken
        // An error found while running (the key file is missing) shows that command's usage, not herald's.
        let jwt = try Herald.run(["keys", "jwt", "--key", dir + "/none.p8", "--key-id", "ABCDEFGHIJ", "--team", "TEAM123456"])
        #expect(jwt.status == 64 && jwt.stderr.contains("Usage: herald keys jwt --key <FILE.p8>") && jwt.stderr.contains("See 'herald keys jwt --help'"),
                "\(jwt.stderr)")
        // --desktop without a session bus: stops at start, saying what is missing.
        let desktop = try Herald.run(["device", "run", "--data-dir", dir + "/phone", "--gateway", "wss://localhost:1", "--app", "com.example.app", "--desktop"],
                                     environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=\(dir)/no-bus", "XDG_RUNTIME_DIR": nil])
        #expect(desktop.status == 64 && desktop.stderr.contains("--desktop needs a D-Bus session bus") && desktop.stderr.contains("no-bus"), "\(desktop.stderr)")
        // The cluster's flags.
        let noStore = try Herald.run(["keys", "list"])
        #expect(noStore.status == 64 && noStore.stderr.contains("give --data-dir DIR") && noStore.stderr.contains("--database postgres://"), "\(noStore.stderr)")
        let badURL = try Herald.run(["keys", "list", "--database", "postgres://db.example/herald"])
        #expect(badURL.status == 64 && badURL.stderr.contains("names no user"), "\(badURL.stderr)")
        let password = try Herald.run(["keys", "list", "--database", "postgres://u:hunter2@db.example/herald?sslmode=sometimes"])
        #expect(password.stderr.contains("sslmode must be one of") && !password.stderr.contains("hunter2"), "\(password.stderr)")
        let nodeWithoutDatabase = try Herald.run(["gateway", "--data-dir", dir, "--node-id", "gw1"])
        #expect(nodeWithoutDatabase.status == 64 && nodeWithoutDatabase.stderr.contains("give --database"), "\(nodeWithoutDatabase.stderr)")
        let badNode = try Herald.run(["gateway", "--data-dir", dir, "--database", "postgres://u@127.0.0.1:1/herald", "--node-id", "GW 1"])
        #expect(badNode.status == 64 && badNode.stderr.contains("a-z, 0-9"), "\(badNode.stderr)")
        for (flag, message) in [("--node-lease=0", "--node-lease must be from 2"), ("--node-lease=99999999999999999999", "--node-lease"),
                                ("--cluster-sweep=-1", "--cluster-sweep must be from 100"), ("--cross-node-hints=maybe", "one of 'on' and 'off'"),
                                ("--store-timeout=0", "--store-timeout must be from 100"), ("--store-timeout=-5", "--store-timeout"),
                                ("--store-timeout=99999999999999999999", "--store-timeout"), ("--store-timeout=1.5", "--store-timeout")] {
            let bad = try Herald.run(["gateway", "--data-dir", dir, "--database", "postgres://u@127.0.0.1:1/herald", flag])
            #expect(bad.status == 64 && bad.stderr.contains(message), "\(flag): \(bad.stderr)")
        }
        let gatewayWithoutDirectory = try Herald.run(["gateway", "--database", "postgres://u@127.0.0.1:1/herald"])
        #expect(gatewayWithoutDirectory.status == 64 && gatewayWithoutDirectory.stderr.contains("TLS files"), "\(gatewayWithoutDirectory.stderr)")
        let unreachable = try Herald.run(["keys", "list", "--database", "postgres://u@127.0.0.1:1/herald?sslmode=disable"])
        #expect(unreachable.status != 0 && unreachable.stderr.contains("cannot use the database postgres://u@127.0.0.1:1/herald"), "\(unreachable.stderr)")
    }

    @Test("every command's help has an example (read from the commands' own description, --experimental-dump-help)")
    func everyCommandHasAnExample() throws {
        let dump = try Herald.run(["--experimental-dump-help"])
        #expect(dump.status == 0)
        guard case .object(let root)? = try? JSONReader.parse(Array(dump.stdout.utf8)), case .object(let top)? = root["command"] else {
            Issue.record("no tool info: \(dump.stdout.prefix(200))")
            return
        }
        var missing: [String] = []
        var seen = 0
        func walk(_ command: [String: JSONValue], _ path: [String]) {
            let name = command["commandName"]?.stringValue ?? "?"
            let text = (command["discussion"]?.stringValue ?? "") + (command["abstract"]?.stringValue ?? "")
            seen += 1
            if name != "help" && !text.contains("Example") { missing.append((path + [name]).joined(separator: " ")) }
            for case .object(let sub) in command["subcommands"]?.arrayValue ?? [] { walk(sub, path + [name]) }
        }
        walk(top, [])
        #expect(seen > 30)
        #expect(missing.isEmpty, "commands without an example: \(missing)")
    }

    @Test("herald push send --timeout: a server that accepts and never answers ends the run at the deadline, exit 2; bad timeouts are refused")
    func pushTimeout() throws {
        let dir = try TemporaryDirectory.make(prefix: "herald-cli")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let keyPath = dir + "/key.p8"
        try FileManager.default.createDirectory(atPath: dir + "/gw", withIntermediateDirectories: true)
        let keyID = try Herald.run(["keys", "create", "--data-dir", dir + "/gw", "--team", "TEAM123456", "--topic", "com.example.app", "--out", keyPath]).stdout
        // A listening socket that is never accepted from: the kernel completes the TCP handshake,
        // and nothing ever answers the HTTP/2 preface or the requests.
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        defer { close(listener) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && listen(listener, 16) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        #expect(bound)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let tokens = dir + "/tokens.txt"
        try (0..<3).map { _ in DeviceToken.random().hex }.joined(separator: "\n").write(toFile: tokens, atomically: true, encoding: .utf8)
        let base = ["push", "send", "--url", "http://127.0.0.1:\(port)", "--key", keyPath, "--key-id", keyID, "--team", "TEAM123456",
                    "--topic", "com.example.app", "--alert", "hello"]
        let started = ContinuousClock.now
        let many = try Herald.run(base + ["--tokens", tokens, "--timeout", "1", "--attempts", "1"])
        #expect(many.status == 2)
        #expect(many.stderr.contains("no answer (time-out): 3") || many.stderr.contains("failed 3"), "\(many.stderr)")
        let one = try Herald.run(base + ["--token", DeviceToken.random().hex, "--timeout", "1", "--attempts", "1"])
        #expect(one.status == 2)
        #expect(one.stderr.contains("cannot push to"), "\(one.stderr)")
        // Both ended at their deadline, not at the 30-second default or never.
        #expect(ContinuousClock.now - started < .seconds(20))
        for bad in ["0", "-1", "nan", "1e300"] {
            let refused = try Herald.run(base + ["--token", "00", "--timeout=\(bad)"])
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("--timeout must be a number of seconds above 0"), "\(bad): \(refused.stderr)")
        }
    }

    @Test("herald device run and unregister: register, receive what herald push send sends, no second run or unregister while it runs, 410 after removal")
    func deviceWalkThrough() async throws {
        let dir = try TemporaryDirectory.make(prefix: "herald-cli")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let gateway = try GatewayProcess(dataDirectory: dir + "/gw", extraArguments: ["--device-port", "0", "--feedback-port", "0"])
        #expect(gateway.devicePort > 0)
        let feedbackPort = try #require(gateway.startup["feedback_port"] as? Int)
        let keyPath = dir + "/key.p8"
        try FileManager.default.createDirectory(atPath: dir + "/gw", withIntermediateDirectories: true)
        let keyID = try Herald.run(["keys", "create", "--data-dir", dir + "/gw", "--team", "TEAM123456", "--topic", "com.example.app", "--out", keyPath]).stdout
        let device = try DeviceProcess(
            dataDirectory: dir + "/phone", gateway: "wss://localhost:\(gateway.devicePort)", ca: gateway.caPath, apps: ["com.example.app"])
        let connected = try await device.next("connected")
        #expect(connected["enrolled"] as? Bool == true)
        let registered = try await device.next("registered")
        #expect(registered["topic"] as? String == "com.example.app")
        let token = try #require(registered["token"] as? String)
        // While it runs, the device directory is its own: no second run, no unregister under it.
        let secondRun = try Herald.run(["device", "run", "--data-dir", dir + "/phone", "--app", "com.example.app"])
        #expect(secondRun.status == 64 && secondRun.stderr.contains("herald device run is running on --data-dir \(dir)/phone"), "\(secondRun.stderr)")
        let early = try Herald.run(["device", "unregister", "--data-dir", dir + "/phone", "--app", "com.example.app"])
        #expect(early.status == 64 && early.stderr.contains("stop the device, unregister the app"), "\(early.stderr)")

        let send = ["push", "send", "--url", "https://localhost:\(gateway.providerPort)", "--ca", gateway.caPath,
                    "--key", keyPath, "--key-id", keyID, "--team", "TEAM123456", "--topic", "com.example.app",
                    "--token", token, "--alert", "Hello", "--collapse-id", "greeting"]
        let ok = try Herald.run(send)
        #expect(ok.status == 0, "\(ok.stdout) \(ok.stderr)")
        let notification = try await device.next("notification")
        #expect(notification["apns-id"] as? String == ok.stdout)
        #expect(notification["topic"] as? String == "com.example.app")
        #expect(notification["priority"] as? Int == 10)
        #expect(notification["collapse-id"] as? String == "greeting")
        let aps = (notification["payload"] as? [String: Any])?["aps"] as? [String: Any]
        #expect(aps?["alert"] as? String == "Hello")
        device.stop()

        // A new launch asks for the token again and gets the same one (no token-changed).
        let again = try DeviceProcess(dataDirectory: dir + "/phone", gateway: nil, ca: nil, apps: ["com.example.app"])
        #expect(try await again.next("registered")["token"] as? String == token)
        again.stop()
        #expect(!again.allLines.contains { $0["event"] as? String == "token-changed" })

        let removed = try Herald.run(["device", "unregister", "--data-dir", dir + "/phone", "--app", "com.example.app"])
        #expect(removed.status == 0, "\(removed.stderr)")
        #expect(removed.stdout.hasPrefix("unregistered com.example.app at "))
        let timestamp = removed.stdout.split(separator: " ").last.map(String.init) ?? ""
        let gone = try Herald.run(send)
        #expect(gone.status == 1)
        #expect(gone.stdout == "410 Unregistered timestamp=\(timestamp)")
        #expect(!FileManager.default.fileExists(atPath: dir + "/phone/apps/com.example.app.json"), "uninstalled: its saved state went with it")

        // The legacy feedback port reports it once, for the app named by the client certificate.
        let certificate = try Herald.run([
            "feedback", "certificate", "--data-dir", dir + "/gw", "--topic", "com.example.app",
            "--out-cert", dir + "/fb.pem", "--out-key", dir + "/fb-key.pem",
        ])
        #expect(certificate.status == 0, "\(certificate.stderr)")
        let read = ["feedback", "read", "--address", "localhost:\(feedbackPort)", "--cert", dir + "/fb.pem", "--key", dir + "/fb-key.pem", "--ca", gateway.caPath]
        let feedback = try Herald.run(read)
        #expect(feedback.status == 0, "\(feedback.stderr)")
        #expect(feedback.stdout == "\(token) \((Int64(timestamp) ?? 0) / 1000)")
        #expect(try Herald.run(read).stdout == "", "read and cleared")

        // Installed again: a fresh app with a new token (not a token change of the removed one).
        let reinstalled = try DeviceProcess(dataDirectory: dir + "/phone", gateway: nil, ca: nil, apps: ["com.example.app"])
        let fresh = try await reinstalled.next("registered")["token"] as? String
        #expect(fresh != nil && fresh != token)
        reinstalled.stop()
        #expect(!reinstalled.allLines.contains { $0["event"] as? String == "token-changed" })

        let bad = try Herald.run(["device", "run", "--data-dir", dir + "/other", "--app", "com.x", "--gateway", "https://x:1"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("--gateway must be wss://HOST:PORT"))
        #expect(gateway.stop(signal: SIGTERM) == 0)
    }

    @Test("herald device run's agent socket: an app process registers, gets its token, a push is presented after willPresent, its state survives a restart")
    func deviceAgent() async throws {
        let dir = try TemporaryDirectory.make(prefix: "herald-cli")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let gateway = try GatewayProcess(dataDirectory: dir + "/gw", extraArguments: ["--device-port", "0"])
        let keyPath = dir + "/key.p8"
        try FileManager.default.createDirectory(atPath: dir + "/gw", withIntermediateDirectories: true)
        let keyID = try Herald.run(["keys", "create", "--data-dir", dir + "/gw", "--team", "TEAM123456", "--topic", "com.example.app", "--out", keyPath]).stdout
        let flags = ["--time-zone", "Asia/Tokyo", "--language", "ja"]
        var device = try DeviceProcess(
            dataDirectory: dir + "/phone", gateway: "wss://localhost:\(gateway.devicePort)", ca: gateway.caPath, apps: ["com.example.app"],
            extraArguments: flags)
        _ = try await device.next("registered")
        let socket = dir + "/phone/agent.sock"
        var app = try await Self.connectAgent(socket)
        #expect(try await app.request(["op": .string("hello"), "app": .string("com.example.app")])["ok"] == .bool(true))
        let auth = try await app.request(["op": .string("requestAuthorization"), "options": .array([.string("alert"), .string("badge")])])
        #expect(auth["granted"] == .bool(true))
        try await app.request(["op": .string("registerForRemote")])
        let token = try #require(try await app.event("registered")["token"]?.stringValue)
        try await app.request(["op": .string("add"), "request": .object([
            "id": .string("later"), "content": .object(["body": .string("tomorrow")]),
            "trigger": .object(["type": .string("calendar"), "components": .object(["hour": .int(9)]), "repeats": .bool(true)]),
        ])])

        let send = try Herald.run([
            "push", "send", "--url", "https://localhost:\(gateway.providerPort)", "--ca", gateway.caPath, "--key", keyPath,
            "--key-id", keyID, "--team", "TEAM123456", "--topic", "com.example.app", "--token", token, "--alert", "Hello",
        ])
        #expect(send.status == 0, "\(send.stderr)")
        let willPresent = try await app.event("willPresent")
        try await app.request(["op": .string("complete"), "callback": willPresent["callback"]!, "options": .array([.string("banner")])])
        let delivered = try await device.next("delivered")
        let notification = delivered["notification"] as? [String: Any]
        #expect(notification?["apns-id"] as? String == send.stdout)
        #expect(notification?["presented"] as? [String] == ["banner"])
        #expect((notification?["local"] as? String)?.hasSuffix("+09:00") == true)
        await app.close()
        device.stop()

        // A restart keeps the pending request and the settings (no second prompt).
        device = try DeviceProcess(dataDirectory: dir + "/phone", gateway: nil, ca: nil, apps: ["com.example.app"], extraArguments: flags)
        _ = try await device.next("registered")
        app = try await Self.connectAgent(socket)
        try await app.request(["op": .string("hello"), "app": .string("com.example.app"), "state": .string("background")])
        let again = try await app.request(["op": .string("requestAuthorization"), "options": .array([.string("alert")])])
        #expect(again["prompted"] == .bool(false) && again["granted"] == .bool(true))
        let pending = try await app.request(["op": .string("pending")])
        guard case .array(let requests)? = pending["requests"], case .object(let first)? = requests.first else {
            Issue.record("no pending request after the restart: \(pending)")
            return
        }
        #expect(first["id"] == .string("later"))
        #expect(first["nextFire"]?.stringValue?.hasSuffix(":00:00Z") == true)
        await app.close()
        device.stop()
        #expect(gateway.stop(signal: SIGTERM) == 0)
    }

    /// The agent's socket appears once the device runs; connect when it does.
    static func connectAgent(_ path: String) async throws -> AgentClient {
        for _ in 0..<500 {
            if let client = try? await AgentClient.connect(path: path) { return client }
            try await Task.sleep(for: .milliseconds(20))
        }
        return try await AgentClient.connect(path: path)
    }

    @Test("herald provider: a registration and a send over its REST API reach the gateway; its OpenAPI document is served")
    func providerService() async throws {
        let dir = try TemporaryDirectory.make(prefix: "herald-cli")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let gateway = try GatewayProcess(dataDirectory: dir + "/gw")
        let keyPath = dir + "/key.p8"
        try FileManager.default.createDirectory(atPath: dir + "/gw", withIntermediateDirectories: true)
        let keyID = try Herald.run(["keys", "create", "--data-dir", dir + "/gw", "--team", "TEAM123456", "--topic", "com.example.app", "--out", keyPath]).stdout
        let token = try Herald.run(["tokens", "create", "--data-dir", dir + "/gw", "--topic", "com.example.app"]).stdout
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Herald.executable)
        process.arguments = ["provider", "--data-dir", dir + "/provider", "--port", "0", "--gateway", "https://localhost:\(gateway.providerPort)",
                             "--ca", gateway.caPath, "--key", keyPath, "--key-id", keyID, "--team", "TEAM123456"]
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGTERM); process.waitUntilExit() } }
        var line = [UInt8]()
        while let byte = try out.fileHandleForReading.read(upToCount: 1)?.first, byte != 10 { line.append(byte) }
        let ready = try #require(try JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
        let port = try #require(ready["port"] as? Int)
        // The API token was created at first start, readable by its owner only.
        let tokenFile = try #require(ready["api_token_file"] as? String)
        #expect(tokenFile == dir + "/provider/api-token")
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: tokenFile)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        let apiToken = try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(apiToken.count == 64)
        func call(_ method: String, _ path: String, _ body: String?, token: String? = apiToken) async throws -> (Int, [String: Any]) {
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
            request.httpMethod = method
            request.httpBody = body.map { Data($0.utf8) }
            if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "authorization") }
            let (data, response) = try await URLSession.shared.data(for: request)
            return ((response as! HTTPURLResponse).statusCode, (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:])
        }
        #expect(try await call("GET", "/v1/registrations/00", nil, token: nil).0 == 401)
        #expect(try await call("GET", "/v1/registrations/00", nil, token: String(repeating: "0", count: 64)).0 == 401)
        #expect(try await call("GET", "/health", nil, token: nil).0 == 200)
        let huge = try await call("POST", "/v1/sends", "{\"x\":\"" + String(repeating: "a", count: 1_100_000) + "\"}")
        #expect(huge.0 == 413)
        let badge = try await call("POST", "/v1/sends", #"{"to":{"token":"00"},"badge":1e300}"#)
        #expect(badge.0 == 400 && (badge.1["error"] as? String)?.contains("\"badge\" must be an integer") == true)
        let comma = try await call("POST", "/v1/sends", #"{"to":{"token":"00"},"badge":1,}"#)
        #expect(comma.0 == 400 && (comma.1["error"] as? String)?.contains("trailing comma") == true)
        let registered = try await call("POST", "/v1/registrations",
            #"{"token":"\#(token)","topic":"com.example.app","language":"en-GB","timeZone":"Europe/London","userId":"u1"}"#)
        #expect(registered.0 == 200)
        let sent = try await call("POST", "/v1/sends", #"{"to":{"user":"u1"},"alert":{"title":"Hi","body":"there"},"idempotencyKey":"k"}"#)
        #expect(sent.0 == 200)
        #expect(sent.1["counts"] as? [String: Int] == ["accepted": 1])
        let openapi = try await call("GET", "/openapi.json", nil)
        #expect(openapi.0 == 200 && openapi.1["openapi"] as? String == "3.1.0")
        // SIGTERM is a graceful stop: the service group finishes what is under way and exits 0.
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0)
        let bad = try Herald.run(["provider", "--data-dir", dir + "/p2", "--gateway", "ftp://x", "--key", keyPath, "--key-id", keyID, "--team", "T"])
        #expect(bad.status != 0 && bad.stderr.contains("--gateway must be https://HOST:PORT"))
        #expect(gateway.stop(signal: SIGTERM) == 0)
    }

    @Test("SIGKILL during a stream of pushes to an offline device: after a restart the device gets every accepted one")
    func crashDuringStream() async throws {
        let dir = try TemporaryDirectory.make(prefix: "herald-cli")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let gwDir = dir + "/gw"
        // Keep everything per app, so that "what the policy keeps" is every accepted notification.
        let flags = ["--device-port", "0", "--offline-queue", "100000", "--token-burst", "0"]
        var gateway = try GatewayProcess(dataDirectory: gwDir, extraArguments: flags)
        let keyPath = dir + "/key.p8"
        let keyID = try Herald.run(["keys", "create", "--data-dir", gwDir, "--team", "TEAM123456", "--topic", "com.example.app", "--out", keyPath]).stdout
        let signer = try ProviderTokenSigner(keyID: keyID, teamID: "TEAM123456", pem: String(contentsOfFile: keyPath, encoding: .utf8))
        var device = try DeviceProcess(
            dataDirectory: dir + "/phone", gateway: "wss://localhost:\(gateway.devicePort)", ca: gateway.caPath, apps: ["com.example.app"])
        let token = try #require(DeviceToken(hex: try await device.next("registered")["token"] as? String ?? ""))
        device.stop()

        // Stream pushes (32 in flight) and kill the gateway once 300 have been accepted.
        let connection = try await HTTP2Connection.connect(host: "127.0.0.1", port: gateway.h2cPort, tls: nil)
        let bearer = "bearer " + (try signer.token(issuedAt: SystemWallClock().nowSeconds()))
        let accepted = Locked<[String: Int]>([:])
        let killer = gateway
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<32 {
                group.addTask {
                    var n = worker
                    while true {
                        let payload = #"{"aps":{"alert":"x"},"n":\#(n)}"#
                        guard let response = try? await connection.send(.push(token: token, authorization: bearer, payload: payload)),
                              response.status == 200, let id = response.apnsID else { return }
                        let count = accepted.withLock { $0[id] = n; return $0.count }
                        if count == 300 { killer.stop(signal: SIGKILL) }
                        n += 32
                    }
                }
            }
        }
        await connection.close()
        let acceptedIDs = accepted.withLock { $0 }
        #expect(acceptedIDs.count >= 300)

        gateway = try GatewayProcess(dataDirectory: gwDir, extraArguments: flags)
        device = try DeviceProcess(
            dataDirectory: dir + "/phone", gateway: "wss://localhost:\(gateway.devicePort)", ca: gateway.caPath, apps: ["com.example.app"])
        var received = Set<String>()
        while !acceptedIDs.keys.allSatisfy(received.contains) {
            let line = try await device.next("notification", timeout: .seconds(30))
            if let id = line["apns-id"] as? String { received.insert(id) }
        }
        #expect(acceptedIDs.keys.allSatisfy(received.contains), "every accepted notification arrived")
        device.stop()
        gateway.stop()
    }

    @Test("herald device plan prints the deliveries of a window, in order, and explains bad input")
    func devicePlan() throws {
        let dir = try TemporaryDirectory.make(prefix: "herald-cli")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let requests = """
            [{"id":"daily","content":{"title":"Wake","body":"up","sound":"default"},"trigger":{"type":"calendar","components":{"hour":2,"minute":30},"repeats":true}},
             {"id":"alarm","content":{"body":"alarm"},"trigger":{"type":"date","date":"2026-03-08T09:00:00","timeZone":"America/New_York"}},
             {"id":"now","content":{"badge":3}}]
            """
        let events = #"[{"at":"2026-03-08T12:00:00Z","timeZone":"America/Los_Angeles"},{"at":"2026-03-08T12:00:00Z","authorization":{"sound":false}}]"#
        try requests.write(toFile: dir + "/requests.json", atomically: true, encoding: .utf8)
        try events.write(toFile: dir + "/events.json", atomically: true, encoding: .utf8)
        let plan = try Herald.run([
            "device", "plan", "--requests", dir + "/requests.json", "--events", dir + "/events.json",
            "--from", "2026-03-07T12:00:00Z", "--until", "2026-03-09T12:00:00Z", "--time-zone", "America/New_York",
        ])
        #expect(plan.status == 0, "\(plan.stderr)")
        let lines = plan.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(lines.map { $0["id"] as? String ?? "" } == ["now", "daily", "alarm", "daily"])
        #expect(lines.map { $0["fire"] as? String ?? "" } == [
            "2026-03-07T12:00:00Z", "2026-03-08T07:30:00Z", "2026-03-08T16:00:00Z", "2026-03-09T09:30:00Z",
        ])
        #expect(lines[1]["local"] as? String == "2026-03-08T03:30:00-04:00")
        #expect(lines[2]["local"] as? String == "2026-03-08T09:00:00-07:00", "the wall-clock alarm follows the device to Los Angeles")
        #expect(lines[3]["presented"] as? [String] == ["alert"], "sound was turned off")

        try #"[{"id":"x","trigger":{"type":"interval","seconds":59,"repeats":true}}]"#.write(toFile: dir + "/bad.json", atomically: true, encoding: .utf8)
        let bad = try Herald.run(["device", "plan", "--requests", dir + "/bad.json", "--from", "2026-03-07T12:00:00Z", "--until", "2026-03-08T12:00:00Z", "--time-zone", "America/New_York"])
        #expect(bad.status != 0)
        #expect(bad.stderr.contains("request 1: request \"x\": a repeating time interval must be at least 60 seconds"))
        let zone = try Herald.run(["device", "plan", "--requests", dir + "/requests.json", "--from", "2026-03-07T12:00:00Z", "--until", "2026-03-08T12:00:00Z", "--time-zone", "Mars/Olympus"])
        #expect(zone.stderr.contains("is not an IANA time zone"))
    }

    /// A plain HTTP/1.1 GET (the admin port), through a real socket.
    private func httpGet(port: Int, path: String) async throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["curl", "-s", "http://127.0.0.1:\(port)\(path)"]
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }
}
