import ArgumentParser
import Foundation
import HeraldClient
import HeraldCore

struct PushCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "push", abstract: "Send notifications as a provider does.", subcommands: [Send.self])

    struct Send: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send one notification to an APNs-compatible server (a Herald gateway, or Apple's).",
            discussion: """
                Prints the apns-id on success. On failure prints the status and the reason (and the
                timestamp of a 410) and exits with status 1. An https:// URL uses TLS (ALPN h2); an
                http:// URL uses h2c with prior knowledge (a gateway's --h2c-port).
                """)

        @Option(help: "The server, e.g. https://localhost:2197 or http://127.0.0.1:8080.")
        var url: String

        @Option(help: ArgumentHelp("A PEM file of trusted roots (the gateway's DIR/tls/ca.pem).", valueName: "PEM"))
        var ca: String?

        @Option(help: ArgumentHelp("The provider's private key (PEM PKCS#8).", valueName: "FILE.p8"))
        var key: String

        @Option(help: "The key's 10-character id.")
        var keyID: String

        @Option(help: "The 10-character team id.")
        var team: String

        @Option(help: "apns-topic: the bundle id, plus the push type's suffix where it has one.")
        var topic: String

        @Option(help: "The device token (hex).")
        var token: String

        @Option(help: "The alert text (sends {\"aps\":{\"alert\":TEXT}}).")
        var alert: String?

        @Option(help: ArgumentHelp("A file holding the whole JSON payload.", valueName: "FILE"))
        var payload: String?

        @Option(help: "apns-priority: 10, 5 or 1.")
        var priority: String?

        @Option(help: "apns-expiration: UNIX seconds, or 0 for a single delivery attempt.")
        var expiration: String?

        @Option(help: "apns-collapse-id (at most 64 bytes).")
        var collapseID: String?

        @Option(help: "apns-push-type: alert, background, voip, …")
        var pushType: String?

        @Option(help: "apns-id to send (a UUID); by default the server generates one.")
        var apnsID: String?

        @Option(help: "Seconds to wait for the connection and the answer before giving up.")
        var timeout: Double = 30

        func validate() throws {
            if (alert == nil) == (payload == nil) { throw ValidationError("give exactly one of --alert TEXT or --payload FILE") }
            guard let components = URLComponents(string: url), let scheme = components.scheme, ["https", "http"].contains(scheme),
                  components.host != nil
            else { throw ValidationError("--url must look like https://HOST:PORT or http://HOST:PORT; got '\(url)'") }
        }

        func run() async throws {
            let components = URLComponents(string: url)!
            let isTLS = components.scheme == "https"
            let host = components.host!
            let port = components.port ?? (isTLS ? 443 : 80)
            let signer: ProviderTokenSigner
            do {
                signer = try ProviderTokenSigner(keyID: keyID, teamID: team, pem: try readText(key, what: "--key"))
            } catch let error as ValidationError {
                throw error
            } catch {
                throw ValidationError("--key \(key) is not a PEM PKCS#8 P-256 private key (.p8): \(error)")
            }
            let body: [UInt8]
            if let alert {
                body = try NotificationPayload(aps: APS(alert: .body(alert))).encoded()
            } else {
                body = Array(try readText(payload!, what: "--payload").utf8)
            }
            var headers: [(name: String, value: String)] = [
                ("authorization", "bearer " + (try signer.token(issuedAt: SystemWallClock().nowSeconds()))),
                ("apns-topic", topic),
            ]
            if let pushType { headers.append(("apns-push-type", pushType)) }
            if let priority { headers.append(("apns-priority", priority)) }
            if let expiration { headers.append(("apns-expiration", expiration)) }
            if let collapseID { headers.append(("apns-collapse-id", collapseID)) }
            if let apnsID { headers.append(("apns-id", apnsID)) }

            let request = HTTP2Request(path: "/3/device/\(token)", headers: headers, body: body)
            let tls = isTLS ? ClientTLS(trustRootsPath: ca) : nil
            let response: HTTP2Response
            do {
                response = try await withThrowingTaskGroup(of: HTTP2Response?.self) { group in
                    group.addTask {
                        let connection = try await HTTP2Connection.connect(host: host, port: port, tls: tls)
                        do {
                            let response = try await connection.send(request)
                            await connection.close()
                            return response
                        } catch {
                            await connection.close()
                            throw error
                        }
                    }
                    group.addTask {
                        try await Task.sleep(for: .seconds(timeout))
                        return nil
                    }
                    let first = try await group.next() ?? nil
                    group.cancelAll()
                    guard let first else { throw TimedOut() }
                    return first
                }
            } catch is TimedOut {
                printError("herald: no answer from \(url) within \(timeout) seconds")
                throw ExitCode(2)
            } catch {
                printError("herald: cannot push to \(url): \(error)")
                throw ExitCode(2)
            }
            if response.status == 200 {
                print(response.apnsID ?? "")
                return
            }
            let rejection = response.rejection
            var line = "\(response.status) \(rejection?.reason.rawValue ?? "(no reason)")"
            if let ts = rejection?.timestampMilliseconds { line += " timestamp=\(ts)" }
            print(line)
            throw ExitCode(1)
        }
    }
}

private struct TimedOut: Error {}
