#compdef herald

__herald_complete() {
    local -ar non_empty_completions=("${@:#(|:*)}")
    local -ar empty_completions=("${(M)@:#(|:*)}")
    _describe -V '' non_empty_completions -- empty_completions -P $'\'\''
}

__herald_custom_complete() {
    local -a completions
    completions=("${(@f)"$("${command_name}" "${@}" "${command_line[@]}")"}")
    if [[ "${#completions[@]}" -gt 1 ]]; then
        __herald_complete "${completions[@]:0:-1}"
    fi
}

__herald_cursor_index_in_current_word() {
    if [[ -z "${QIPREFIX}${IPREFIX}${PREFIX}" ]]; then
        printf 0
    else
        printf %s "${#${(z)LBUFFER}[-1]}"
    fi
}

_herald() {
    emulate -RL zsh -G
    setopt extendedglob nullglob numericglobsort
    unsetopt aliases banghist

    local -xr SAP_SHELL=zsh
    local -x SAP_SHELL_VERSION
    SAP_SHELL_VERSION="$(builtin emulate zsh -c 'printf %s "${ZSH_VERSION}"')"
    local -r SAP_SHELL_VERSION

    local context state state_descr line
    local -A opt_args

    local -r command_name="${words[1]}"
    local -ar command_line=("${words[@]}")
    local -ir current_word_index="$((CURRENT - 1))"

    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'gateway:Run the push gateway (the default: herald gateway run), follow a running one live (herald gateway watch), or ask it whether it is healthy (herald gateway health).'
            'device:Be a device: keep a connection to a gateway'\''s device port for some apps, and print what arrives.'
            'provider:Run the provider service: the app'\''s own server (registrations, localized sends, schedules in each user'\''s time zone, pruning) with a REST API.'
            'keys:Manage provider signing keys.'
            'feedback:Feedback lists: the legacy Feedback Service'\''s client certificates and reading it; looking at a list without clearing it.'
            'tokens:Manage device tokens by hand, and list them.'
            'devices:See the devices enrolled on the gateway.'
            'held:See the notifications the gateway holds for devices not connected.'
            'receipts:See what became of a notification.'
            'push:Send notifications as a provider does.'
            'channels:Manage an app'\''s broadcast channels (Live Activity broadcasts) on a channel management port.'
            'backup:Copy a gateway'\''s data directory while it runs: its SQLite store as one consistent snapshot, its TLS files and the rest.'
            'restore:Restore a herald backup into an empty data directory (never over a live or used one).'
            'doctor:Check a gateway'\''s configuration before starting it: ports, certificates, data directory, store, clock.'
            'bench:Benchmarks support (see docs/benchmarks.md).'
            'help:Show subcommand help information.'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        gateway|device|provider|keys|feedback|tokens|devices|held|receipts|push|channels|backup|restore|doctor|bench|help)
            "_herald_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_herald_gateway() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'run:Run the push gateway: the APNs-compatible provider port on an embedded SQLite store.'
            'watch:Follow what happens to notifications live: refused, accepted, sent to a device, acked.'
            'health:Ask a running gateway whether it is healthy (its admin port'\''s GET /health): exit 0 if so, 1 if not.'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        run|watch|health)
            "_herald_gateway_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_herald_gateway_run() {
    local -i ret=1
    local -ar ___durability=('full' 'normal')
    local -ar ___cross_node_hints=('on' 'off')
    local -ar ___log_format=('text' 'json')
    local -ar arg_specs=(
        '--data-dir[The gateway'\''s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.]:DIR:'
        '--database[A PostgreSQL database several gateway nodes share, postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DB\[?sslmode=disable|prefer|require\], instead of the SQLite database in --data-dir (docs/cluster.md).]:URL:'
        '--provider-port[The TLS provider port (HTTP/2, ALPN h2). 0 picks a free port.]:provider-port:'
        '--h2c-port[A plaintext HTTP/2 (h2c, prior knowledge) port for local development, bound to 127.0.0.1 only.]:h2c-port:'
        '--admin-port[The admin port\: GET /health, Prometheus GET /metrics, read-only views GET /v1/… and the live feed GET /v1/events (docs/inspection.md), and /faults with --enable-faults.]:admin-port:'
        '--admin-host[The address the admin port listens on. It has no authentication\: keep it on loopback unless a firewall guards it.]:admin-host:'
        '--enable-faults[For testing providers only\: the admin port'\''s POST /faults makes the next pushes fail with 429/5xx. Without it /faults answers 404.]'
        '--enrollment-secret-file[A file holding a secret that new devices must present to enroll (herald device run --enrollment-secret-file). Without it enrollment is open; enrolled devices need no secret.]:FILE:'
        '--provider-idle-timeout[Seconds a provider connection may stay without a stream before GOAWAY IdleTimeout.]:SECONDS:'
        '--provider-connections-per-address[Open provider connections allowed from one IP address.]:provider-connections-per-address:'
        '--device-connections-per-address[Open device connections allowed from one IP address.]:device-connections-per-address:'
        '--device-handshakes-per-address[Device handshakes under way at once from one IP address; past it the address'\''s new connections are closed at accept.]:COUNT:'
        '--device-reconnect-rate[Device handshakes a second this gateway can finish\: at a graceful stop, devices are asked to come back at random within (connected devices / this) seconds.]:PER-SECOND:'
        '--handshake-timeout[Seconds a peer has to finish the TLS handshake (and a device to answer the challenge).]:SECONDS:'
        '--device-port[The device port\: one WebSocket over TLS per device (docs/device-protocol.md). 0 picks a free port.]:device-port:'
        '--webpush-port[The Web Push port (docs/web-push.md)\: RFC 8030 push endpoints over HTTP/1.1 and HTTP/2, and Mozilla'\''s push WebSocket for browsers (point Firefox'\''s dom.push.serverURL at wss\://HOST\:PORT/), over TLS. 0 picks a free port.]:webpush-port:'
        '--webpush-origin[The origin Web Push endpoints are issued under and VAPID tokens must name as aud (https\://push.example.com, as senders reach the port). Default\: https\:// and the Host each peer connected to.]:URL:'
        '--channel-port[The broadcast channel management port (HTTP/2 over TLS, authenticated like the provider port, Apple'\''s 2195/2196)\: creating, reading, listing and deleting channels. Broadcasts need it. 0 picks a free port.]:channel-port:'
        '--feedback-port[The legacy binary feedback port (TLS with an app'\''s client certificate, Apple'\''s retired Feedback Service format).]:feedback-port:'
        '--feedback-client-ca[The CA (PEM) whose client certificates the feedback port accepts. Default\: the development CA (see `herald feedback certificate`).]:PEM:'
        '--provider-client-ca[The CA (PEM) whose push certificates the provider port accepts (certificate authentication). Default\: the development CA (see `herald keys certificate`); with --tls-cert, none unless given.]:PEM:'
        '--device-ping-interval[Seconds of quiet after which the gateway pings a device, at most\: devices may ask for less (down to --device-ping-minimum). A device notices a frozen node within twice this.]:SECONDS:'
        '--device-ping-minimum[The shortest ping interval a device may ask for (a device whose network drops idle connections sooner learns to ask).]:SECONDS:'
        '--device-idle-timeout[Seconds without a word from a device pinged every --device-ping-interval after which it is disconnected (the same multiple of a shorter interval for devices that asked for one).]:SECONDS:'
        '--store-timeout[Milliseconds the store has to commit a push (or answer a key look-up) before the provider is answered 503 ServiceUnavailable; /health then reports the store.]:MS:'
        '--background-per-hour[Background pushes per device and app per hour (Apple advises 2-3); over budget only the newest is held. 0 turns throttling off.]:background-per-hour:'
        '--inactivity-days[Days without a connection after which a device'\''s tokens are reported in the feedback list.]:DAYS:'
        '--receipt-days[Days the receipts of finished notifications are kept.]:DAYS:'
        '--host[The address the provider, device and feedback ports listen on\: loopback unless you open it (\:\:1 for IPv6 loopback; \:\: for every address, IPv4 and IPv6; 0.0.0.0 for every IPv4 address; or one interface'\''s address, with --tls-cert/--tls-key naming that host\: the development certificate is for localhost, 127.0.0.1 and \:\:1 only).]:host:'
        '--environment[The environment this gateway runs as\: development (the sandbox) or production.]:environment:'
        '--tls-cert[The server certificate chain (PEM). Needs --tls-key.]:PEM:'
        '--tls-key[The server certificate'\''s private key (PEM). Needs --tls-cert.]:PEM:'
        '--token-burst[Pushes one device token may receive in a burst before 429 TooManyRequests; 0 turns the limit off.]:token-burst:'
        '--token-rate[Pushes per second one device token may receive over time.]:token-rate:'
        '--offline-queue[How many notifications are kept per offline device and app (1 = Apple'\''s policy\: the newest).]:offline-queue:'
        '--durability[full\: every commit reaches the disk before 200 (survives power loss); normal\: survives a crash of the process only.]:durability:{__herald_complete "${___durability[@]}"}'
        '--node-id[This node'\''s name in a cluster (with --database)\: a-z, 0-9, '\''-'\'' and '\''_'\'', at most 40. Give each node its own, and the same one again when it restarts. Default\: the host name.]:NAME:'
        '--node-lease[Cluster\: seconds without a lease renewal after which a node counts as dead and its devices'\'' presence is reaped.]:node-lease:'
        '--cluster-sweep[Cluster\: milliseconds between sweeps of what is held for this node'\''s devices (delivers what a lost hint delayed).]:cluster-sweep:'
        '--cluster-full-sweep[Cluster\: milliseconds between sweeps that read everything held for this node'\''s devices; the sweeps between read only what was stored over their last two intervals.]:cluster-full-sweep:'
        '--cross-node-hints[Cluster\: hint the node holding a device when a push for it is stored (on), or rely on the sweep alone (off\: slower, still correct).]:cross-node-hints:{__herald_complete "${___cross_node_hints[@]}"}'
        '--log-level[Log level\: trace, debug, info, notice, warning, error, critical.]:log-level:'
        '--log-format[How logs on standard error are written\: text (for people) or json (one object a line, for a log collector).]:log-format:{__herald_complete "${___log_format[@]}"}'
        '--otlp-endpoint[Export traces of each push over OTLP/HTTP to this collector, such as http\://127.0.0.1\:4318 (/v1/traces is appended when the URL has no path); off when not given. OTEL_* variables refine it (OTEL_EXPORTER_OTLP_HEADERS, OTEL_BSP_SCHEDULE_DELAY…).]:URL:'
        '--config[A YAML file of settings\: the flags'\'' long names as keys (provider-port\: 2197; lists for repeatable flags; true/false for switches). HERALD_* environment variables (HERALD_PROVIDER_PORT=2197; HERALD_CONFIG for the file) override it, flags override both (docs/operations.md).]:FILE.yaml:'
        '--print-config[Print the effective settings and where each came from (secrets masked), then exit.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_gateway_watch() {
    local -i ret=1
    local -ar arg_specs=(
        '--admin[The gateway'\''s admin port.]:http\://HOST\:PORT:'
        '--topic[Only this app'\''s notifications (bundle id).]:topic:'
        '--json[Print each event'\''s JSON instead of a line of text.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_gateway_health() {
    local -i ret=1
    local -ar arg_specs=(
        '--admin[The gateway'\''s admin port.]:http\://HOST\:PORT:'
        '--timeout[Seconds to wait for the answer (1 to 60).]:SECONDS:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_device() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'run:Be a device: connect to a gateway, run the notification center for the apps, serve them on a local socket.'
            'unregister:Remove an app from the device: its token is unregistered (providers get 410 Unregistered) and its saved state removed.'
            'plan:Print every local delivery a set of requests would make in a window, without waiting (docs/device-plan.md).'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        run|unregister|plan)
            "_herald_device_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_herald_device_run() {
    local -i ret=1
    local -ar ___log_format=('text' 'json')
    local -ar arg_specs=(
        '--data-dir[The device'\''s data directory (its key, its gateway, its apps'\'' last tokens). Created if missing.]:DIR:'
        '*--gateway[The gateway'\''s device port, wss\://HOST\:PORT. Remembered in DIR for later runs. Give it again for each node of a cluster without a load balancer\: the device moves to the next when one is unreachable.]:URL:'
        '--ca[A PEM file of trusted roots (the gateway'\''s DIR/tls/ca.pem). Remembered in DIR.]:PEM:'
        '*--app[An app using UserNotifications\: its topic (bundle id). Repeat for more apps.]:TOPIC:'
        '*--legacy-app[An app using the iOS 8–9 UIApplication API (legacy delivery rules).]:TOPIC:'
        '*--bundle[An app'\''s bundle directory\: <lang>.lproj/Localizable.strings (or .json) for alert localization, Library/Sounds and the directory itself for sounds.]:TOPIC=DIR:'
        '--time-zone[The device'\''s time zone (IANA). Default\: the machine'\''s.]:ZONE:'
        '*--language[A preferred language (BCP 47), most preferred first. Default\: from LANG, else en.]:LANG:'
        '--prompts[How the device'\''s user answers an authorization prompt\: allow (what was asked) or deny.]:ANSWER:'
        '--enrollment-secret-file[A file holding the gateway'\''s enrollment secret, for a gateway that closed open enrollment (needed once, to enroll).]:FILE:'
        '--agent-socket[The agent'\''s Unix domain socket. Default\: DIR/agent.sock.]:PATH:'
        '--json[Print one JSON object per line instead of text for people.]'
        '--desktop[Show notifications on this Linux desktop (the freedesktop Notifications D-Bus interface, through gdbus)\: the category'\''s actions as buttons; a click reaches the app as the user'\''s choice.]'
        '--log-level[Log level for diagnostics on standard error.]:log-level:'
        '--unifiedpush[Be a UnifiedPush distributor on the session bus (org.unifiedpush.Distributor.herald)\: Linux apps that support UnifiedPush get Web Push endpoints on the gateway and their messages through it (docs/web-push.md).]'
        '--live-activities[Ask the gateway for each app'\''s Live Activity push-to-start token (printed as activity-push-to-start-token).]'
        '--widgets[Configure each app'\''s widgets for pushes\: the gateway issues a widget push token (printed as widget-token); widgets pushes reload them.]'
        '*--entitlements[Entitlements an app holds, TOPIC=LIST with LIST of critical-alert, time-sensitive and location-push, comma-separated (what its provisioning profile would grant).]:TOPIC=LIST:'
        '--focus[A JSON file of Focus modes and the scheduled summary (docs/device-agent.md) to set now; saved in DIR for later runs.]:FILE:'
        '--log-format[How logs on standard error are written\: text (for people) or json (one object a line, for a log collector).]:log-format:{__herald_complete "${___log_format[@]}"}'
        '--config[A YAML file of settings\: the flags'\'' long names as keys (provider-port\: 2197; lists for repeatable flags; true/false for switches). HERALD_* environment variables (HERALD_PROVIDER_PORT=2197; HERALD_CONFIG for the file) override it, flags override both (docs/operations.md).]:FILE.yaml:'
        '--print-config[Print the effective settings and where each came from (secrets masked), then exit.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_device_unregister() {
    local -i ret=1
    local -ar arg_specs=(
        '--data-dir[The device'\''s data directory (its key, its gateway, its apps'\'' last tokens). Created if missing.]:DIR:'
        '--app[The app'\''s topic (bundle id).]:TOPIC:'
        '--gateway[The gateway'\''s device port, wss\://HOST\:PORT.]:URL:'
        '--ca[A PEM file of trusted roots.]:PEM:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_device_plan() {
    local -i ret=1
    local -ar arg_specs=(
        '--requests[A JSON array of requests.]:FILE.json:'
        '--from[When the requests are added (ISO 8601 with Z or an offset).]:ISO8601:'
        '--until[The end of the window (inclusive).]:ISO8601:'
        '--time-zone[The device'\''s time zone at --from.]:IANA:'
        '--events[A JSON array of events\: time-zone moves, locations, location services, authorization.]:FILE.json:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_provider() {
    local -i ret=1
    local -ar ___log_level=('trace' 'debug' 'info' 'notice' 'warning' 'error' 'critical')
    local -ar ___log_format=('text' 'json')
    local -ar arg_specs=(
        '--data-dir[Where the provider keeps its database.]:DIR:'
        '--port[The port of the REST API (0\: any free port).]:port:'
        '--api-token-file[The file holding the REST API'\''s bearer token. Default\: DIR/api-token, created with a random token at first start (mode 0600).]:FILE:'
        '--host[The address to listen on.]:host:'
        '--gateway[The APNs server\: https\://HOST\:PORT.]:gateway:'
        '--ca[A PEM file of trusted roots (the gateway'\''s DIR/tls/ca.pem).]:PEM:'
        '--key[The provider'\''s private key (PEM PKCS#8), as herald keys create wrote it\: token authentication, with --key-id and --team.]:FILE.p8:'
        '--key-id[The key'\''s 10-character id (what herald keys create printed).]:key-id:'
        '--team[The 10-character team id the key belongs to.]:team:'
        '--cert[A push certificate (PEM), as herald keys certificate wrote it\: certificate authentication instead of a key, with --cert-key.]:PEM:'
        '--cert-key[The push certificate'\''s private key (PEM).]:PEM:'
        '--default-language[The language templates fall back to when neither a device'\''s language nor its base language is translated.]:default-language:'
        '--concurrency[Requests to the gateway in flight at once.]:concurrency:'
        '--missed-window[How late a schedule'\''s occurrence missed while the service was stopped may still be sent at start-up; older ones are recorded as missed.]:SECONDS:'
        '--feedback-interval[How often to read the gateway'\''s feedback lists and prune the tokens they name (0\: never; Apple'\''s service has no such list).]:SECONDS:'
        '--vapid-key[Web Push\: the application server'\''s VAPID private key (PEM), as herald keys vapid wrote it.]:FILE.pem:'
        '--vapid-subject[Web Push\: the VAPID sub claim, a contact for the push service'\''s operator.]:mailto\:…|https\://…:'
        '--log-level[Log level for diagnostics on standard error.]:log-level:{__herald_complete "${___log_level[@]}"}'
        '--log-format[How logs on standard error are written\: text (for people) or json (one object a line, for a log collector).]:log-format:{__herald_complete "${___log_format[@]}"}'
        '--otlp-endpoint[Export traces of each push over OTLP/HTTP to this collector, such as http\://127.0.0.1\:4318 (/v1/traces is appended when the URL has no path); off when not given. OTEL_* variables refine it (OTEL_EXPORTER_OTLP_HEADERS, OTEL_BSP_SCHEDULE_DELAY…).]:URL:'
        '--config[A YAML file of settings\: the flags'\'' long names as keys (provider-port\: 2197; lists for repeatable flags; true/false for switches). HERALD_* environment variables (HERALD_PROVIDER_PORT=2197; HERALD_CONFIG for the file) override it, flags override both (docs/operations.md).]:FILE.yaml:'
        '--print-config[Print the effective settings and where each came from (secrets masked), then exit.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_keys() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'create:Create a provider key (ES256) for a team and give the team its topics.'
            'certificate:Issue a push certificate for a team'\''s app: TLS client authentication on the provider port, no JWT.'
            'list:List teams with their topics and provider keys (revoked ones marked).'
            'revoke:Revoke a provider key (tokens it signed are refused: 403 InvalidProviderToken) or a push certificate (403 BadCertificate).'
            'jwt:Print a provider token (ES256 JWT) signed with a key, for curl and other clients that do not sign their own.'
            'vapid:Create a VAPID key pair for Web Push: writes the private key, prints the public key (the applicationServerKey).'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        create|certificate|list|revoke|jwt|vapid)
            "_herald_keys_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_herald_keys_create() {
    local -i ret=1
    local -ar arg_specs=(
        '--data-dir[The gateway'\''s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.]:DIR:'
        '--database[A PostgreSQL database several gateway nodes share, postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DB\[?sslmode=disable|prefer|require\], instead of the SQLite database in --data-dir (docs/cluster.md).]:URL:'
        '--team[The 10-character team id (letters and digits) that owns the key and topics.]:team:'
        '*--topic[A topic (bundle id) the team owns; repeat for several.]:topic:'
        '--out[Where to write the private key (PEM PKCS#8).]:FILE.p8:'
        '--key-id[The key id; by default a random 10-character id.]:key-id:'
        '--environment[Restrict the key to one environment (development or production); by default it works in both.]:environment:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_keys_certificate() {
    local -i ret=1
    local -ar ___variant=('voip' 'complication')
    local -ar arg_specs=(
        '--data-dir[The gateway'\''s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.]:DIR:'
        '--database[A PostgreSQL database several gateway nodes share, postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DB\[?sslmode=disable|prefer|require\], instead of the SQLite database in --data-dir (docs/cluster.md).]:URL:'
        '--team[The 10-character team id (letters and digits) the certificate belongs to.]:team:'
        '--topic[The app'\''s bundle id.]:topic:'
        '*--variant[A topic variant the certificate also covers\: voip or complication; repeat for both.]:variant:{__herald_complete "${___variant[@]}"}'
        '--environment[Restrict the certificate to one environment (development or production); by default it works in both.]:environment:'
        '--out-cert[Where to write the certificate (PEM).]:PEM:'
        '--out-key[Where to write its private key (PEM, mode 0600).]:PEM:'
        '--out-p12[Also write a PKCS#12 bundle (certificate, key and CA; made with the openssl command).]:P12:'
        '--p12-password-file[A file whose first line is the PKCS#12 password; by default the bundle'\''s password is empty.]:FILE:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_keys_list() {
    local -i ret=1
    local -ar arg_specs=(
        '--data-dir[The gateway'\''s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.]:DIR:'
        '--database[A PostgreSQL database several gateway nodes share, postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DB\[?sslmode=disable|prefer|require\], instead of the SQLite database in --data-dir (docs/cluster.md).]:URL:'
        '--json[Print JSON (the admin port'\''s /v1/teams) instead of a table.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_keys_revoke() {
    local -i ret=1
    local -ar arg_specs=(
        '--data-dir[The gateway'\''s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.]:DIR:'
        '--database[A PostgreSQL database several gateway nodes share, postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DB\[?sslmode=disable|prefer|require\], instead of the SQLite database in --data-dir (docs/cluster.md).]:URL:'
        '--key-id[The 10-character id of the key to revoke, or a push certificate'\''s credential id (cert-…).]:key-id:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_keys_jwt() {
    local -i ret=1
    local -ar arg_specs=(
        '--key[The provider'\''s private key (PEM PKCS#8), as herald keys create wrote it.]:FILE.p8:'
        '--key-id[The key'\''s 10-character id (what herald keys create printed).]:key-id:'
        '--team[The 10-character team id the key belongs to.]:team:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_keys_vapid() {
    local -i ret=1
    local -ar arg_specs=(
        '--out[Where to write the private key (PEM PKCS#8, mode 0600).]:FILE.pem:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_feedback() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'certificate:Issue an app'\''s client certificate (UID=<topic>) for the feedback port, signed by the gateway'\''s development CA.'
            'read:Read (and so clear) an app'\''s feedback list from a feedback port: one line per dead token, `TOKEN TIMESTAMP`.'
            'list:Show an app'\''s feedback list (tokens unregistered since providers last read it) without clearing it.'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        certificate|read|list)
            "_herald_feedback_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_herald_feedback_certificate() {
    local -i ret=1
    local -ar arg_specs=(
        '--data-dir[The gateway'\''s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.]:DIR:'
        '--database[A PostgreSQL database several gateway nodes share, postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DB\[?sslmode=disable|prefer|require\], instead of the SQLite database in --data-dir (docs/cluster.md).]:URL:'
        '--topic[The app'\''s topic (bundle id).]:topic:'
        '--out-cert[Where to write the certificate (PEM).]:PEM:'
        '--out-key[Where to write its private key (PEM, mode 0600).]:PEM:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_feedback_read() {
    local -i ret=1
    local -ar arg_specs=(
        '--address[The feedback port, HOST\:PORT.]:HOST\:PORT:'
        '--cert[The app'\''s client certificate (PEM).]:PEM:'
        '--key[Its private key (PEM).]:PEM:'
        '--ca[A PEM file of trusted roots (the gateway'\''s DIR/tls/ca.pem).]:PEM:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_feedback_list() {
    local -i ret=1
    local -ar arg_specs=(
        '--data-dir[The gateway'\''s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.]:DIR:'
        '--database[A PostgreSQL database several gateway nodes share, postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DB\[?sslmode=disable|prefer|require\], instead of the SQLite database in --data-dir (docs/cluster.md).]:URL:'
        '--topic[The app'\''s topic (bundle id).]:topic:'
        '--environment[The environment of the tokens.]:environment:'
        '--json[Print JSON (the admin port'\''s /v1/feedback) instead of a table.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_tokens() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'create:Register a device token for an app on a device that is not connected; prints the token (hex).'
            'revoke:Unregister a device token (the app was removed): the gateway then answers 410 Unregistered.'
            'list:List device tokens with their state (active, unregistered, expired).'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        create|revoke|list)
            "_herald_tokens_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_herald_tokens_create() {
    local -i ret=1
    local -ar arg_specs=(
        '--data-dir[The gateway'\''s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.]:DIR:'
        '--database[A PostgreSQL database several gateway nodes share, postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DB\[?sslmode=disable|prefer|require\], instead of the SQLite database in --data-dir (docs/cluster.md).]:URL:'
        '--topic[The app'\''s topic (bundle id).]:topic:'
        '--environment[The environment the token belongs to; a gateway of the other environment answers BadDeviceToken.]:environment:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_tokens_revoke() {
    local -i ret=1
    local -ar arg_specs=(
        '--data-dir[The gateway'\''s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.]:DIR:'
        '--database[A PostgreSQL database several gateway nodes share, postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DB\[?sslmode=disable|prefer|require\], instead of the SQLite database in --data-dir (docs/cluster.md).]:URL:'
        '--token[The token, in hexadecimal.]:token:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_tokens_list() {
    local -i ret=1
    local -ar arg_specs=(
        '--data-dir[The gateway'\''s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.]:DIR:'
        '--database[A PostgreSQL database several gateway nodes share, postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DB\[?sslmode=disable|prefer|require\], instead of the SQLite database in --data-dir (docs/cluster.md).]:URL:'
        '--json[Print JSON (the admin port'\''s shape) instead of a table.]'
        '--limit[At most this many items (1…10000).]:limit:'
        '--after[Start after this cursor (the "next" a previous page printed).]:CURSOR:'
        '--topic[Only this app'\''s tokens (bundle id).]:topic:'
        '--device[Only this device'\''s tokens (its id, as herald devices list prints it).]:device:'
        '--active[Only tokens not unregistered.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_devices() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'list:List enrolled devices: when each enrolled and was last seen, how many app tokens it has.'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        list)
            "_herald_devices_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_herald_devices_list() {
    local -i ret=1
    local -ar arg_specs=(
        '--data-dir[The gateway'\''s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.]:DIR:'
        '--database[A PostgreSQL database several gateway nodes share, postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DB\[?sslmode=disable|prefer|require\], instead of the SQLite database in --data-dir (docs/cluster.md).]:URL:'
        '--json[Print JSON (the admin port'\''s shape) instead of a table.]'
        '--limit[At most this many items (1…10000).]:limit:'
        '--after[Start after this cursor (the "next" a previous page printed).]:CURSOR:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_held() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'list:List held notifications, oldest first, by token, device or topic.'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        list)
            "_herald_held_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_herald_held_list() {
    local -i ret=1
    local -ar arg_specs=(
        '--data-dir[The gateway'\''s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.]:DIR:'
        '--database[A PostgreSQL database several gateway nodes share, postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DB\[?sslmode=disable|prefer|require\], instead of the SQLite database in --data-dir (docs/cluster.md).]:URL:'
        '--json[Print JSON (the admin port'\''s shape) instead of a table.]'
        '--limit[At most this many items (1…10000).]:limit:'
        '--after[Start after this cursor (the "next" a previous page printed).]:CURSOR:'
        '--token[Only this token'\''s (hex).]:token:'
        '--device[Only this device'\''s.]:device:'
        '--topic[Only this app'\''s (bundle id).]:topic:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_receipts() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'show:Show a notification'\''s receipt by apns-id: each token it went to, and its history (accepted, stored, delivered, acked, …).'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        show)
            "_herald_receipts_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_herald_receipts_show() {
    local -i ret=1
    local -ar arg_specs=(
        '--data-dir[The gateway'\''s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.]:DIR:'
        '--database[A PostgreSQL database several gateway nodes share, postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DB\[?sslmode=disable|prefer|require\], instead of the SQLite database in --data-dir (docs/cluster.md).]:URL:'
        '--apns-id[The notification'\''s apns-id (the header the gateway answered with).]:apns-id:'
        '--json[Print JSON (the admin port'\''s /v1/receipts/<apns-id>) instead of lines.]'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_push() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'send:Send a notification to one or many device tokens on an APNs-compatible server (a Herald gateway, or Apple'\''s).'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        send)
            "_herald_push_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_herald_push_send() {
    local -i ret=1
    local -ar arg_specs=(
        '--gateway[The server\: a gateway'\''s provider port (https\://localhost\:2197, or http\://127.0.0.1\:8080 for its --h2c-port) or Apple'\''s.]:URL:'
        '--ca[A PEM file of trusted roots (the gateway'\''s DIR/tls/ca.pem).]:PEM:'
        '--key[The provider'\''s private key (PEM PKCS#8), as herald keys create wrote it\: token authentication, with --key-id and --team.]:FILE.p8:'
        '--key-id[The key'\''s 10-character id (what herald keys create printed).]:key-id:'
        '--team[The 10-character team id the key belongs to.]:team:'
        '--cert[A push certificate (PEM), as herald keys certificate wrote it\: certificate authentication instead of a key, with --cert-key.]:PEM:'
        '--cert-key[The push certificate'\''s private key (PEM).]:PEM:'
        '--topic[apns-topic\: the bundle id, plus the push type'\''s suffix where it has one.]:topic:'
        '--webpush[Send a Web Push message instead\: the subscription as PushSubscription.toJSON() gives it ({"endpoint","keys"\:{"p256dh","auth"}}), or many (a JSON array, or one object a line); - reads standard input.]:SUBSCRIPTION.json:'
        '--vapid-key[Web Push\: the application server'\''s VAPID private key (PEM), as herald keys vapid wrote it.]:FILE.pem:'
        '--vapid-subject[Web Push\: the VAPID sub claim, a contact for the push service'\''s operator.]:mailto\:…|https\://…:'
        '--ttl[Web Push\: TTL, the seconds the push service may keep the message for an offline user agent (0\: now or never).]:SECONDS:'
        '--urgency[Web Push\: Urgency, very-low, low, normal or high.]:urgency:'
        '--webpush-topic[Web Push\: Topic; a newer message with the same topic replaces an undelivered one (1–32 base64url characters).]:TOPIC:'
        '--navigate[Web Push\: the page the notification opens (a Declarative Web Push message'\''s navigate).]:URL:'
        '--receipt[Web Push\: ask for a push receipt (Prefer\: respond-async).]'
        '*--token[A device token (hex). Repeat for more.]:token:'
        '--tokens[A file of device tokens, one per line; - reads standard input.]:FILE:'
        '--alert[The alert body.]:alert:'
        '--title[The alert title.]:title:'
        '--subtitle[The alert subtitle.]:subtitle:'
        '--badge[The badge (0 removes it).]:badge:'
        '--sound[A sound file name, or default.]:sound:'
        '--category[The notification'\''s category (its actions).]:category:'
        '--thread-id[thread-id\: notifications with the same one are grouped.]:thread-id:'
        '--interruption-level[interruption-level\: passive, active, time-sensitive or critical (Focus and the summary follow it).]:LEVEL:'
        '--content-available[content-available\: 1 (a background update; with no alert, badge or sound it is silent).]'
        '--mutable-content[mutable-content\: 1 (the app'\''s service extension may change it).]'
        '*--data[A custom key beside aps\: KEY=JSON (e.g. id=42, or name="\\"Ana\\""). Repeat for more.]:KEY=JSON:'
        '--payload[A file holding the whole JSON payload (instead of the payload flags).]:FILE:'
        '--event[Live Activity\: the event, start, update or end (push type liveactivity).]:event:'
        '--content-state[Live Activity\: content-state, a JSON object.]:JSON:'
        '--timestamp[Live Activity\: timestamp, UNIX seconds (default\: now); older updates are ignored.]:SECONDS:'
        '--stale-date[Live Activity\: stale-date, UNIX seconds.]:SECONDS:'
        '--dismissal-date[Live Activity\: dismissal-date of an end, UNIX seconds.]:SECONDS:'
        '--relevance-score[Live Activity\: relevance-score.]:relevance-score:'
        '--attributes-type[Live Activity start\: attributes-type (the ActivityAttributes type'\''s name).]:attributes-type:'
        '--attributes[Live Activity start\: attributes, a JSON object.]:JSON:'
        '--input-push-token[Live Activity start\: input-push-token 1 (the new activity gets an update token).]'
        '--input-push-channel[Live Activity start\: input-push-channel, the broadcast channel that updates it.]:ID:'
        '--channel[Broadcast on this channel of the app (POST /4/broadcasts/apps/<bundle id>) instead of sending to tokens.]:ID:'
        '--priority[apns-priority\: 10, 5 or 1.]:priority:'
        '--expiration[apns-expiration\: UNIX seconds, or 0 for a single delivery attempt.]:expiration:'
        '--collapse-id[apns-collapse-id (at most 64 bytes).]:collapse-id:'
        '--push-type[apns-push-type\: alert, background, voip, … (default\: background for a silent payload, else alert)]:push-type:'
        '--apns-id[apns-id to send (a UUID; one token only); by default a fresh one per notification.]:apns-id:'
        '--concurrency[Requests in flight at once.]:concurrency:'
        '--connections[HTTP/2 connections to open.]:connections:'
        '--attempts[Attempts per notification (429, 5xx and connection failures are retried).]:attempts:'
        '--progress[Show a progress bar on standard error (default\: when it is a terminal).]'
        '--no-progress[Show a progress bar on standard error (default\: when it is a terminal).]'
        '--timeout[Seconds to wait for everything before giving up (unanswered notifications count as failures).]:timeout:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_channels() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'create:Create a channel; prints its id.'
            'list:List the app'\''s channel ids, one per line.'
            'show:Print a channel'\''s storage policy.'
            'delete:Delete a channel.'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        create|list|show|delete)
            "_herald_channels_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_herald_channels_create() {
    local -i ret=1
    local -ar arg_specs=(
        '--gateway[The channel management port, https\://HOST\:PORT.]:URL:'
        '--ca[A PEM file of trusted roots (the gateway'\''s DIR/tls/ca.pem).]:PEM:'
        '--key[The provider'\''s private key (PEM PKCS#8), as herald keys create wrote it\: token authentication, with --key-id and --team.]:FILE.p8:'
        '--key-id[The key'\''s 10-character id (what herald keys create printed).]:key-id:'
        '--team[The 10-character team id the key belongs to.]:team:'
        '--cert[A push certificate (PEM), as herald keys certificate wrote it\: certificate authentication instead of a key, with --cert-key.]:PEM:'
        '--cert-key[The push certificate'\''s private key (PEM).]:PEM:'
        '--topic[The app'\''s bundle id.]:topic:'
        '--storage-policy[message-storage-policy\: 0 stores nothing for offline devices, 1 keeps the most recent broadcast.]:storage-policy:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_channels_list() {
    local -i ret=1
    local -ar arg_specs=(
        '--gateway[The channel management port, https\://HOST\:PORT.]:URL:'
        '--ca[A PEM file of trusted roots (the gateway'\''s DIR/tls/ca.pem).]:PEM:'
        '--key[The provider'\''s private key (PEM PKCS#8), as herald keys create wrote it\: token authentication, with --key-id and --team.]:FILE.p8:'
        '--key-id[The key'\''s 10-character id (what herald keys create printed).]:key-id:'
        '--team[The 10-character team id the key belongs to.]:team:'
        '--cert[A push certificate (PEM), as herald keys certificate wrote it\: certificate authentication instead of a key, with --cert-key.]:PEM:'
        '--cert-key[The push certificate'\''s private key (PEM).]:PEM:'
        '--topic[The app'\''s bundle id.]:topic:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_channels_show() {
    local -i ret=1
    local -ar arg_specs=(
        '--gateway[The channel management port, https\://HOST\:PORT.]:URL:'
        '--ca[A PEM file of trusted roots (the gateway'\''s DIR/tls/ca.pem).]:PEM:'
        '--key[The provider'\''s private key (PEM PKCS#8), as herald keys create wrote it\: token authentication, with --key-id and --team.]:FILE.p8:'
        '--key-id[The key'\''s 10-character id (what herald keys create printed).]:key-id:'
        '--team[The 10-character team id the key belongs to.]:team:'
        '--cert[A push certificate (PEM), as herald keys certificate wrote it\: certificate authentication instead of a key, with --cert-key.]:PEM:'
        '--cert-key[The push certificate'\''s private key (PEM).]:PEM:'
        '--topic[The app'\''s bundle id.]:topic:'
        '--channel[The channel id.]:channel:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_channels_delete() {
    local -i ret=1
    local -ar arg_specs=(
        '--gateway[The channel management port, https\://HOST\:PORT.]:URL:'
        '--ca[A PEM file of trusted roots (the gateway'\''s DIR/tls/ca.pem).]:PEM:'
        '--key[The provider'\''s private key (PEM PKCS#8), as herald keys create wrote it\: token authentication, with --key-id and --team.]:FILE.p8:'
        '--key-id[The key'\''s 10-character id (what herald keys create printed).]:key-id:'
        '--team[The 10-character team id the key belongs to.]:team:'
        '--cert[A push certificate (PEM), as herald keys certificate wrote it\: certificate authentication instead of a key, with --cert-key.]:PEM:'
        '--cert-key[The push certificate'\''s private key (PEM).]:PEM:'
        '--topic[The app'\''s bundle id.]:topic:'
        '--channel[The channel id.]:channel:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_backup() {
    local -i ret=1
    local -ar arg_specs=(
        '--data-dir[The gateway'\''s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.]:DIR:'
        '--database[A PostgreSQL database several gateway nodes share, postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DB\[?sslmode=disable|prefer|require\], instead of the SQLite database in --data-dir (docs/cluster.md).]:URL:'
        '--out[The backup directory to create (it must not exist).]:OUT:'
        '--tls-cert[The gateway'\''s --tls-cert file, to include (herald restore puts it back at this path).]:PEM:'
        '--tls-key[The gateway'\''s --tls-key file, to include (herald restore puts it back at this path).]:PEM:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_restore() {
    local -i ret=1
    local -ar arg_specs=(
        '--from[The backup directory herald backup wrote.]:BACKUP:'
        '--data-dir[The data directory to restore into\: new, or empty.]:DIR:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_doctor() {
    local -i ret=1
    local -ar arg_specs=(
        '*:gateway-flags:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_bench() {
    local -i ret=1
    local -ar arg_specs=(
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
        '(-): :->command'
        '(-)*:: :->arg'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0
    case "${state}" in
    command)
        local -ar subcommands=(
            'prepare:Register a key and N tokens in a gateway'\''s data directory and write h2load'\''s inputs.'
            'baseline:Run a bare SwiftNIO HTTP/2 TLS responder (the benchmark baseline); prints its port as JSON.'
            'delivery:End-to-end delivery benchmark against a running gateway: devices connected, a provider pushing.'
            'broadcast:Broadcast benchmark against a running gateway: time until the last of --devices subscribed devices has a broadcast.'
            'scale:Scale benchmark: a gateway it starts, N connected devices, broadcast, fan-out, a reconnect storm.'
            'scheduler:The device runtime'\''s scheduler: memory, next-fire computation, lateness over a simulated week.'
            'provider-schedule:The provider'\''s scheduler: plan a day of 09:00-local sends for --registrations registrations in --zones zones; memory and lateness.'
        )
        _describe -V subcommand subcommands && ret=0
        ;;
    arg)
        case "${words[1]}" in
        prepare|baseline|delivery|broadcast|scale|scheduler|provider-schedule)
            "_herald_bench_${words[1]}" && ret=0
            ;;
        esac
        ;;
    esac

    return "${ret}"
}

_herald_bench_prepare() {
    local -i ret=1
    local -ar arg_specs=(
        '--data-dir[The gateway'\''s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.]:DIR:'
        '--database[A PostgreSQL database several gateway nodes share, postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DB\[?sslmode=disable|prefer|require\], instead of the SQLite database in --data-dir (docs/cluster.md).]:URL:'
        '--tokens[How many device tokens to register.]:tokens:'
        '--url[The base URL of the provider port the URIs name, e.g. https\://127.0.0.1\:2197.]:url:'
        '--out[The directory to write the inputs to.]:out:'
        '--topic[The topic the tokens and key use.]:topic:'
        '--webpush-url[Also register as many Web Push subscriptions (made with an application server key) under this Web Push port URL, e.g. https\://127.0.0.1\:8443, and write OUT/webpush-uris.txt, OUT/webpush-authorization.txt (a VAPID header valid for 12 hours) and OUT/webpush-body.bin (200 opaque bytes).]:URL:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_bench_baseline() {
    local -i ret=1
    local -ar arg_specs=(
        '--port[The port; 0 picks a free one.]:port:'
        '--tls-cert[The server certificate chain (PEM).]:PEM:'
        '--tls-key[The server key (PEM).]:PEM:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_bench_delivery() {
    local -i ret=1
    local -ar arg_specs=(
        '--data-dir[The gateway'\''s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.]:DIR:'
        '--database[A PostgreSQL database several gateway nodes share, postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DB\[?sslmode=disable|prefer|require\], instead of the SQLite database in --data-dir (docs/cluster.md).]:URL:'
        '--url[The provider port, https\://HOST\:PORT.]:url:'
        '--gateway[The device port, wss\://HOST\:PORT.]:gateway:'
        '--ca[The gateway'\''s CA (PEM).]:ca:'
        '--devices[Connected devices.]:devices:'
        '--connections[Provider HTTP/2 connections.]:connections:'
        '--streams[Concurrent streams per provider connection.]:streams:'
        '--requests[Pushes per measurement.]:requests:'
        '--pace[The paced step'\''s rate, as a fraction of the delivery rate of step 2.]:pace:'
        '--idle-devices[Only measure memory\: connect this many idle devices (needs --gateway-pid).]:idle-devices:'
        '--gateway-pid[The gateway'\''s process id (for its resident memory).]:gateway-pid:'
        '--admin[The gateway'\''s admin port\: step 3 then also prints the gateway'\''s own histograms of the paced pushes (its /metrics).]:http\://HOST\:PORT:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_bench_broadcast() {
    local -i ret=1
    local -ar arg_specs=(
        '--data-dir[The gateway'\''s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.]:DIR:'
        '--database[A PostgreSQL database several gateway nodes share, postgres\://USER\[\:PASSWORD\]@HOST\[\:PORT\]/DB\[?sslmode=disable|prefer|require\], instead of the SQLite database in --data-dir (docs/cluster.md).]:URL:'
        '--url[The provider port, https\://HOST\:PORT.]:url:'
        '--channels[The channel management port, https\://HOST\:PORT.]:channels:'
        '--gateway[The device port, wss\://HOST\:PORT.]:gateway:'
        '--ca[The gateway'\''s CA (PEM).]:ca:'
        '--devices[Subscribed, connected devices.]:devices:'
        '--connections[Provider HTTP/2 connections for the unicast baseline.]:connections:'
        '--streams[Concurrent streams per provider connection.]:streams:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_bench_scale() {
    local -i ret=1
    local -ar arg_specs=(
        '--work[The work directory (the gateway'\''s data directory goes inside).]:work:'
        '--devices[Connected devices.]:devices:'
        '--sources[Loopback source addresses the devices connect from (127.0.0.2, 127.0.0.3, …); 0\: one per 5,000 devices.]:sources:'
        '--concurrency[Device handshakes under way at once.]:concurrency:'
        '--pushes[Pushes to offline tokens for the provider port'\''s answer time (with 0 and with N devices connected).]:pushes:'
        '--reconnect-rate[The gateway'\''s --device-reconnect-rate\: how fast it asks its devices to come back after the restart (handshakes a second).]:reconnect-rate:'
        '--non-readers[Percent of the devices that stop reading during a second broadcast (0\: that step is skipped).]:non-readers:'
        '--storm-deadline[Seconds every device has to come back after the restart before it counts as given up.]:storm-deadline:'
        '--ping-interval[The gateway'\''s --device-ping-interval (default\: its own). The idle CPU is measured over 20 s from 13 s after the fleet connected, so an interval longer than the connect time sees no ping due.]:ping-interval:'
        '--nodes[Gateway nodes on one PostgreSQL (--database), the fleet in generator processes; without it, one gateway on SQLite and the fleet in this process.]:nodes:'
        '--database[The PostgreSQL database the --nodes share (postgres\://USER@HOST\:PORT/DB).]:database:'
        '--devices-per-generator[With --nodes\: the most devices one generator process holds (each is a descriptor there).]:devices-per-generator:'
        '--heap-profile[Profile the gateway'\''s heap with heaptrack into this file (one node only).]:heap-profile:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_bench_scheduler() {
    local -i ret=1
    local -ar arg_specs=(
        '--apps[Apps on the device.]:apps:'
        '--requests[Pending repeating calendar requests per app (at most 64 are kept).]:requests:'
        '--days[Simulated days to run.]:days:'
        '--time-zone[The device'\''s time zone.]:time-zone:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_bench_provider-schedule() {
    local -i ret=1
    local -ar arg_specs=(
        '--registrations[Registrations.]:registrations:'
        '--zones[Time zones.]:zones:'
        '--rate[The gateway'\''s accepted rate, pushes per second.]:rate:'
        '--data-dir[Where to put the database (default\: a new temporary directory).]:data-dir:'
        '--version[Show the version.]'
        '(-h --help)'{-h,--help}'[Show help information.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

_herald_help() {
    local -i ret=1
    local -ar arg_specs=(
        '*:subcommands:'
        '--version[Show the version.]'
    )
    _arguments -w -s -S : "${arg_specs[@]}" && ret=0

    return "${ret}"
}

if [[ "${funcstack[1]}" = _herald ]]; then
    _herald "${@}"
else
    compdef _herald herald
fi
