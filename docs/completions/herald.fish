function __herald_should_offer_completions_for_flags_or_options -a expected_commands
    set -l non_repeating_flags_or_options $argv[2..]
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __herald_parse_tokens
    test "$commands" = "$expected_commands"; and return $non_repeating_flags_or_options_absent
end

function __herald_should_offer_completions_for_positional -a expected_commands positional_index_comparison expected_positional_index
    set -l non_repeating_flags_or_options
    set -l non_repeating_flags_or_options_absent 0
    set -l positional_index 0
    set -l commands
    __herald_parse_tokens
    test "$commands" = "$expected_commands" -a \( "$positional_index" "$positional_index_comparison" "$expected_positional_index" \)
end

function __herald_parse_tokens -S
    set -l unparsed_tokens (__herald_tokens -pc)
    switch $unparsed_tokens[1]
    case 'herald'
        __herald_parse_subcommand 0 'version' 'h/help'
        switch $unparsed_tokens[1]
        case 'gateway'
            __herald_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'run'
                __herald_parse_subcommand 0 'data-dir=' 'database=' 'provider-port=' 'h2c-port=' 'admin-port=' 'admin-host=' 'enable-faults' 'enrollment-secret-file=' 'provider-idle-timeout=' 'provider-connections-per-address=' 'device-connections-per-address=' 'handshake-timeout=' 'device-port=' 'feedback-port=' 'feedback-client-ca=' 'device-ping-interval=' 'device-idle-timeout=' 'background-per-hour=' 'inactivity-days=' 'receipt-days=' 'host=' 'environment=' 'tls-cert=' 'tls-key=' 'token-burst=' 'token-rate=' 'offline-queue=' 'durability=' 'node-id=' 'node-lease=' 'cluster-sweep=' 'cross-node-hints=' 'log-level=' 'log-format=' 'version' 'h/help'
            case 'watch'
                __herald_parse_subcommand 0 'admin=' 'topic=' 'json' 'version' 'h/help'
            end
        case 'device'
            __herald_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'run'
                __herald_parse_subcommand 0 'data-dir=' 'gateway=+' 'ca=' 'app=+' 'legacy-app=+' 'bundle=+' 'time-zone=' 'language=+' 'prompts=' 'enrollment-secret-file=' 'agent-socket=' 'json' 'desktop' 'log-level=' 'log-format=' 'version' 'h/help'
            case 'unregister'
                __herald_parse_subcommand 0 'data-dir=' 'app=' 'gateway=' 'ca=' 'version' 'h/help'
            case 'plan'
                __herald_parse_subcommand 0 'requests=' 'from=' 'until=' 'time-zone=' 'events=' 'version' 'h/help'
            end
        case 'provider'
            __herald_parse_subcommand 0 'data-dir=' 'port=' 'api-token-file=' 'host=' 'gateway=' 'ca=' 'key=' 'key-id=' 'team=' 'default-language=' 'concurrency=' 'missed-window=' 'feedback-interval=' 'log-level=' 'log-format=' 'version' 'h/help'
        case 'keys'
            __herald_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'create'
                __herald_parse_subcommand 0 'data-dir=' 'database=' 'team=' 'topic=+' 'out=' 'key-id=' 'environment=' 'version' 'h/help'
            case 'list'
                __herald_parse_subcommand 0 'data-dir=' 'database=' 'json' 'version' 'h/help'
            case 'revoke'
                __herald_parse_subcommand 0 'data-dir=' 'database=' 'key-id=' 'version' 'h/help'
            case 'jwt'
                __herald_parse_subcommand 0 'key=' 'key-id=' 'team=' 'version' 'h/help'
            end
        case 'feedback'
            __herald_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'certificate'
                __herald_parse_subcommand 0 'data-dir=' 'database=' 'topic=' 'out-cert=' 'out-key=' 'version' 'h/help'
            case 'read'
                __herald_parse_subcommand 0 'address=' 'cert=' 'key=' 'ca=' 'version' 'h/help'
            case 'list'
                __herald_parse_subcommand 0 'data-dir=' 'database=' 'topic=' 'environment=' 'json' 'version' 'h/help'
            end
        case 'tokens'
            __herald_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'create'
                __herald_parse_subcommand 0 'data-dir=' 'database=' 'topic=' 'environment=' 'version' 'h/help'
            case 'revoke'
                __herald_parse_subcommand 0 'data-dir=' 'database=' 'token=' 'version' 'h/help'
            case 'list'
                __herald_parse_subcommand 0 'data-dir=' 'database=' 'json' 'limit=' 'after=' 'topic=' 'device=' 'active' 'version' 'h/help'
            end
        case 'devices'
            __herald_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'list'
                __herald_parse_subcommand 0 'data-dir=' 'database=' 'json' 'limit=' 'after=' 'version' 'h/help'
            end
        case 'held'
            __herald_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'list'
                __herald_parse_subcommand 0 'data-dir=' 'database=' 'json' 'limit=' 'after=' 'token=' 'device=' 'topic=' 'version' 'h/help'
            end
        case 'receipts'
            __herald_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'show'
                __herald_parse_subcommand 0 'data-dir=' 'database=' 'apns-id=' 'json' 'version' 'h/help'
            end
        case 'push'
            __herald_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'send'
                __herald_parse_subcommand 0 'gateway=' 'ca=' 'key=' 'key-id=' 'team=' 'topic=' 'token=+' 'tokens=' 'alert=' 'title=' 'subtitle=' 'badge=' 'sound=' 'category=' 'thread-id=' 'content-available' 'mutable-content' 'data=+' 'payload=' 'priority=' 'expiration=' 'collapse-id=' 'push-type=' 'apns-id=' 'concurrency=' 'connections=' 'attempts=' 'progress' 'no-progress' 'timeout=' 'version' 'h/help'
            end
        case 'bench'
            __herald_parse_subcommand 0 'version' 'h/help'
            switch $unparsed_tokens[1]
            case 'prepare'
                __herald_parse_subcommand 0 'data-dir=' 'database=' 'tokens=' 'url=' 'out=' 'topic=' 'version' 'h/help'
            case 'baseline'
                __herald_parse_subcommand 0 'port=' 'tls-cert=' 'tls-key=' 'version' 'h/help'
            case 'delivery'
                __herald_parse_subcommand 0 'data-dir=' 'database=' 'url=' 'gateway=' 'ca=' 'devices=' 'connections=' 'streams=' 'requests=' 'pace=' 'idle-devices=' 'gateway-pid=' 'version' 'h/help'
            case 'scheduler'
                __herald_parse_subcommand 0 'apps=' 'requests=' 'days=' 'time-zone=' 'version' 'h/help'
            case 'provider-schedule'
                __herald_parse_subcommand 0 'registrations=' 'zones=' 'rate=' 'data-dir=' 'version' 'h/help'
            end
        case 'help'
            __herald_parse_subcommand -r 1 'version'
        end
    end
end

function __herald_tokens
    if test (string split -m 1 -f 1 -- . "$FISH_VERSION") -gt 3
        commandline --tokens-raw $argv
    else
        commandline -o $argv
    end
end

function __herald_parse_subcommand -S -a positional_count
    argparse -s r -- $argv
    set -l option_specs $argv[2..]
    set -l is_repeating_positional $_flag_r
    set -el _flag_r
    set -a commands $unparsed_tokens[1]
    set positional_index 0
    while true
        set -e unparsed_tokens[1]
        argparse -sn "$commands" $option_specs -- $unparsed_tokens 2> /dev/null
        set unparsed_tokens $argv
        set positional_index (math $positional_index + 1)
        for non_repeating_flag_or_option in $non_repeating_flags_or_options
            if set -ql "_flag_$(string replace -a - _ -- $non_repeating_flag_or_option)"
                set non_repeating_flags_or_options_absent 1
                break
            end
        end
        test (count $unparsed_tokens) -eq 0 -o \( -z "$is_repeating_positional" -a "$positional_index" -gt "$positional_count" \) && break
    end
end

function __herald_complete_directories
    set -l token (commandline -t)
    string match -- '*/' $token
    set -l subdirs $token*/
    printf %s\n $subdirs
end

function __herald_custom_completion
    set -x SAP_SHELL fish
    set -x SAP_SHELL_VERSION $FISH_VERSION
    set -l tokens (__herald_tokens -p)
    if test -z "$(__herald_tokens -t)"
        set -l index (count (__herald_tokens -pc))
        set tokens $tokens[..$index] \'\' $tokens[(math $index + 1)..]
    end
    command $tokens[1] $argv $tokens
end

complete -c 'herald' -f
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald" -eq 1' -fa 'gateway' -d 'Run the push gateway (the default: herald gateway run), or follow a running one live (herald gateway watch).'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald" -eq 1' -fa 'device' -d 'Be a device: keep a connection to a gateway\'s device port for some apps, and print what arrives.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald" -eq 1' -fa 'provider' -d 'Run the provider service: the app\'s own server (registrations, localized sends, schedules in each user\'s time zone, pruning) with a REST API.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald" -eq 1' -fa 'keys' -d 'Manage provider signing keys.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald" -eq 1' -fa 'feedback' -d 'Feedback lists: the legacy Feedback Service\'s client certificates and reading it; looking at a list without clearing it.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald" -eq 1' -fa 'tokens' -d 'Manage device tokens by hand, and list them.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald" -eq 1' -fa 'devices' -d 'See the devices enrolled on the gateway.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald" -eq 1' -fa 'held' -d 'See the notifications the gateway holds for devices not connected.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald" -eq 1' -fa 'receipts' -d 'See what became of a notification.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald" -eq 1' -fa 'push' -d 'Send notifications as a provider does.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald" -eq 1' -fa 'bench' -d 'Benchmarks support (see docs/benchmarks.md).'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald" -eq 1' -fa 'help' -d 'Show subcommand help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald gateway" -eq 1' -fa 'run' -d 'Run the push gateway: the APNs-compatible provider port on an embedded SQLite store.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald gateway" -eq 1' -fa 'watch' -d 'Follow what happens to notifications live: refused, accepted, sent to a device, acked.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" data-dir' -l 'data-dir' -d 'The gateway\'s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" database' -l 'database' -d 'A PostgreSQL database several gateway nodes share, postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require], instead of the SQLite database in --data-dir (docs/cluster.md).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" provider-port' -l 'provider-port' -d 'The TLS provider port (HTTP/2, ALPN h2). 0 picks a free port.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" h2c-port' -l 'h2c-port' -d 'A plaintext HTTP/2 (h2c, prior knowledge) port for local development, bound to 127.0.0.1 only.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" admin-port' -l 'admin-port' -d 'The admin port: GET /health, Prometheus GET /metrics, read-only views GET /v1/… and the live feed GET /v1/events (docs/inspection.md), and /faults with --enable-faults.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" admin-host' -l 'admin-host' -d 'The address the admin port listens on. It has no authentication: keep it on loopback unless a firewall guards it.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" enable-faults' -l 'enable-faults' -d 'For testing providers only: the admin port\'s POST /faults makes the next pushes fail with 429/5xx. Without it /faults answers 404.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" enrollment-secret-file' -l 'enrollment-secret-file' -d 'A file holding a secret that new devices must present to enroll (herald device run --enrollment-secret-file). Without it enrollment is open; enrolled devices need no secret.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" provider-idle-timeout' -l 'provider-idle-timeout' -d 'Seconds a provider connection may stay without a stream before GOAWAY IdleTimeout.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" provider-connections-per-address' -l 'provider-connections-per-address' -d 'Open provider connections allowed from one IP address.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" device-connections-per-address' -l 'device-connections-per-address' -d 'Open device connections allowed from one IP address.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" handshake-timeout' -l 'handshake-timeout' -d 'Seconds a peer has to finish the TLS handshake (and a device to answer the challenge).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" device-port' -l 'device-port' -d 'The device port: one WebSocket over TLS per device (docs/device-protocol.md). 0 picks a free port.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" feedback-port' -l 'feedback-port' -d 'The legacy binary feedback port (TLS with an app\'s client certificate, Apple\'s retired Feedback Service format).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" feedback-client-ca' -l 'feedback-client-ca' -d 'The CA (PEM) whose client certificates the feedback port accepts. Default: the development CA (see `herald feedback certificate`).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" device-ping-interval' -l 'device-ping-interval' -d 'Seconds of quiet after which the gateway pings a device.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" device-idle-timeout' -l 'device-idle-timeout' -d 'Seconds without a word from a device after which it is disconnected.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" background-per-hour' -l 'background-per-hour' -d 'Background pushes per device and app per hour (Apple advises 2-3); over budget only the newest is held. 0 turns throttling off.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" inactivity-days' -l 'inactivity-days' -d 'Days without a connection after which a device\'s tokens are reported in the feedback list.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" receipt-days' -l 'receipt-days' -d 'Days the receipts of finished notifications are kept.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" host' -l 'host' -d 'The address the provider, device and feedback ports listen on: loopback unless you open it (0.0.0.0, or one interface\'s address, with --tls-cert/--tls-key naming that host: the development certificate is for localhost only).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" environment' -l 'environment' -d 'The environment this gateway runs as: development (the sandbox) or production.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" tls-cert' -l 'tls-cert' -d 'The server certificate chain (PEM). Needs --tls-key.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" tls-key' -l 'tls-key' -d 'The server certificate\'s private key (PEM). Needs --tls-cert.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" token-burst' -l 'token-burst' -d 'Pushes one device token may receive in a burst before 429 TooManyRequests; 0 turns the limit off.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" token-rate' -l 'token-rate' -d 'Pushes per second one device token may receive over time.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" offline-queue' -l 'offline-queue' -d 'How many notifications are kept per offline device and app (1 = Apple\'s policy: the newest).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" durability' -l 'durability' -d 'full: every commit reaches the disk before 200 (survives power loss); normal: survives a crash of the process only.' -rfka 'full normal'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" node-id' -l 'node-id' -d 'This node\'s name in a cluster (with --database): a-z, 0-9, \'-\' and \'_\', at most 40. Give each node its own, and the same one again when it restarts. Default: the host name.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" node-lease' -l 'node-lease' -d 'Cluster: seconds without a lease renewal after which a node counts as dead and its devices\' presence is reaped.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" cluster-sweep' -l 'cluster-sweep' -d 'Cluster: milliseconds between sweeps of what is held for this node\'s devices (delivers what a lost hint delayed).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" cross-node-hints' -l 'cross-node-hints' -d 'Cluster: hint the node holding a device when a push for it is stored (on), or rely on the sweep alone (off: slower, still correct).' -rfka 'on off'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" log-level' -l 'log-level' -d 'Log level: trace, debug, info, notice, warning, error, critical.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" log-format' -l 'log-format' -d 'How logs on standard error are written: text (for people) or json (one object a line, for a log collector).' -rfka 'text json'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway run" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway watch" admin' -l 'admin' -d 'The gateway\'s admin port.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway watch" topic' -l 'topic' -d 'Only this app\'s notifications (bundle id).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway watch" json' -l 'json' -d 'Print each event\'s JSON instead of a line of text.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway watch" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald gateway watch" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald device" -eq 1' -fa 'run' -d 'Be a device: connect to a gateway, run the notification center for the apps, serve them on a local socket.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald device" -eq 1' -fa 'unregister' -d 'Remove an app from the device: its token is unregistered (providers get 410 Unregistered) and its saved state removed.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald device" -eq 1' -fa 'plan' -d 'Print every local delivery a set of requests would make in a window, without waiting (docs/device-plan.md).'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device run" data-dir' -l 'data-dir' -d 'The device\'s data directory (its key, its gateway, its apps\' last tokens). Created if missing.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device run"' -l 'gateway' -d 'The gateway\'s device port, wss://HOST:PORT. Remembered in DIR for later runs. Give it again for each node of a cluster without a load balancer: the device moves to the next when one is unreachable.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device run" ca' -l 'ca' -d 'A PEM file of trusted roots (the gateway\'s DIR/tls/ca.pem). Remembered in DIR.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device run"' -l 'app' -d 'An app using UserNotifications: its topic (bundle id). Repeat for more apps.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device run"' -l 'legacy-app' -d 'An app using the iOS 8–9 UIApplication API (legacy delivery rules).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device run"' -l 'bundle' -d 'An app\'s bundle directory: <lang>.lproj/Localizable.strings (or .json) for alert localization, Library/Sounds and the directory itself for sounds.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device run" time-zone' -l 'time-zone' -d 'The device\'s time zone (IANA). Default: the machine\'s.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device run"' -l 'language' -d 'A preferred language (BCP 47), most preferred first. Default: from LANG, else en.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device run" prompts' -l 'prompts' -d 'How the device\'s user answers an authorization prompt: allow (what was asked) or deny.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device run" enrollment-secret-file' -l 'enrollment-secret-file' -d 'A file holding the gateway\'s enrollment secret, for a gateway that closed open enrollment (needed once, to enroll).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device run" agent-socket' -l 'agent-socket' -d 'The agent\'s Unix domain socket. Default: DIR/agent.sock.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device run" json' -l 'json' -d 'Print one JSON object per line instead of text for people.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device run" desktop' -l 'desktop' -d 'Show notifications on this Linux desktop (the freedesktop Notifications D-Bus interface, through gdbus): the category\'s actions as buttons; a click reaches the app as the user\'s choice.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device run" log-level' -l 'log-level' -d 'Log level for diagnostics on standard error.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device run" log-format' -l 'log-format' -d 'How logs on standard error are written: text (for people) or json (one object a line, for a log collector).' -rfka 'text json'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device run" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device run" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device unregister" data-dir' -l 'data-dir' -d 'The device\'s data directory (its key, its gateway, its apps\' last tokens). Created if missing.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device unregister" app' -l 'app' -d 'The app\'s topic (bundle id).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device unregister" gateway' -l 'gateway' -d 'The gateway\'s device port, wss://HOST:PORT.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device unregister" ca' -l 'ca' -d 'A PEM file of trusted roots.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device unregister" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device unregister" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device plan" requests' -l 'requests' -d 'A JSON array of requests.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device plan" from' -l 'from' -d 'When the requests are added (ISO 8601 with Z or an offset).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device plan" until' -l 'until' -d 'The end of the window (inclusive).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device plan" time-zone' -l 'time-zone' -d 'The device\'s time zone at --from.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device plan" events' -l 'events' -d 'A JSON array of events: time-zone moves, locations, location services, authorization.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device plan" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald device plan" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald provider" data-dir' -l 'data-dir' -d 'Where the provider keeps its database.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald provider" port' -l 'port' -d 'The port of the REST API (0: any free port).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald provider" api-token-file' -l 'api-token-file' -d 'The file holding the REST API\'s bearer token. Default: DIR/api-token, created with a random token at first start (mode 0600).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald provider" host' -l 'host' -d 'The address to listen on.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald provider" gateway' -l 'gateway' -d 'The APNs server: https://HOST:PORT.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald provider" ca' -l 'ca' -d 'A PEM file of trusted roots (the gateway\'s DIR/tls/ca.pem).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald provider" key' -l 'key' -d 'The provider\'s private key (PEM PKCS#8), as herald keys create wrote it.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald provider" key-id' -l 'key-id' -d 'The key\'s 10-character id (what herald keys create printed).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald provider" team' -l 'team' -d 'The 10-character team id the key belongs to.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald provider" default-language' -l 'default-language' -d 'The language templates fall back to when neither a device\'s language nor its base language is translated.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald provider" concurrency' -l 'concurrency' -d 'Requests to the gateway in flight at once.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald provider" missed-window' -l 'missed-window' -d 'How late a schedule\'s occurrence missed while the service was stopped may still be sent at start-up; older ones are recorded as missed.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald provider" feedback-interval' -l 'feedback-interval' -d 'How often to read the gateway\'s feedback lists and prune the tokens they name (0: never; Apple\'s service has no such list).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald provider" log-level' -l 'log-level' -d 'Log level for diagnostics on standard error.' -rfka 'trace debug info notice warning error critical'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald provider" log-format' -l 'log-format' -d 'How logs on standard error are written: text (for people) or json (one object a line, for a log collector).' -rfka 'text json'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald provider" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald provider" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald keys" -eq 1' -fa 'create' -d 'Create a provider key (ES256) for a team and give the team its topics.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald keys" -eq 1' -fa 'list' -d 'List teams with their topics and provider keys (revoked ones marked).'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald keys" -eq 1' -fa 'revoke' -d 'Revoke a provider key: tokens it signed are refused (403 InvalidProviderToken).'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald keys" -eq 1' -fa 'jwt' -d 'Print a provider token (ES256 JWT) signed with a key, for curl and other clients that do not sign their own.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys create" data-dir' -l 'data-dir' -d 'The gateway\'s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys create" database' -l 'database' -d 'A PostgreSQL database several gateway nodes share, postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require], instead of the SQLite database in --data-dir (docs/cluster.md).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys create" team' -l 'team' -d 'The 10-character team id (letters and digits) that owns the key and topics.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys create"' -l 'topic' -d 'A topic (bundle id) the team owns; repeat for several.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys create" out' -l 'out' -d 'Where to write the private key (PEM PKCS#8).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys create" key-id' -l 'key-id' -d 'The key id; by default a random 10-character id.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys create" environment' -l 'environment' -d 'Restrict the key to one environment (development or production); by default it works in both.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys create" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys create" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys list" data-dir' -l 'data-dir' -d 'The gateway\'s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys list" database' -l 'database' -d 'A PostgreSQL database several gateway nodes share, postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require], instead of the SQLite database in --data-dir (docs/cluster.md).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys list" json' -l 'json' -d 'Print JSON (the admin port\'s /v1/teams) instead of a table.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys list" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys revoke" data-dir' -l 'data-dir' -d 'The gateway\'s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys revoke" database' -l 'database' -d 'A PostgreSQL database several gateway nodes share, postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require], instead of the SQLite database in --data-dir (docs/cluster.md).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys revoke" key-id' -l 'key-id' -d 'The 10-character id of the key to revoke.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys revoke" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys revoke" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys jwt" key' -l 'key' -d 'The provider\'s private key (PEM PKCS#8), as herald keys create wrote it.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys jwt" key-id' -l 'key-id' -d 'The key\'s 10-character id (what herald keys create printed).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys jwt" team' -l 'team' -d 'The 10-character team id the key belongs to.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys jwt" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald keys jwt" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald feedback" -eq 1' -fa 'certificate' -d 'Issue an app\'s client certificate (UID=<topic>) for the feedback port, signed by the gateway\'s development CA.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald feedback" -eq 1' -fa 'read' -d 'Read (and so clear) an app\'s feedback list from a feedback port: one line per dead token, `TOKEN TIMESTAMP`.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald feedback" -eq 1' -fa 'list' -d 'Show an app\'s feedback list (tokens unregistered since providers last read it) without clearing it.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback certificate" data-dir' -l 'data-dir' -d 'The gateway\'s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback certificate" database' -l 'database' -d 'A PostgreSQL database several gateway nodes share, postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require], instead of the SQLite database in --data-dir (docs/cluster.md).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback certificate" topic' -l 'topic' -d 'The app\'s topic (bundle id).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback certificate" out-cert' -l 'out-cert' -d 'Where to write the certificate (PEM).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback certificate" out-key' -l 'out-key' -d 'Where to write its private key (PEM, mode 0600).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback certificate" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback certificate" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback read" address' -l 'address' -d 'The feedback port, HOST:PORT.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback read" cert' -l 'cert' -d 'The app\'s client certificate (PEM).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback read" key' -l 'key' -d 'Its private key (PEM).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback read" ca' -l 'ca' -d 'A PEM file of trusted roots (the gateway\'s DIR/tls/ca.pem).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback read" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback read" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback list" data-dir' -l 'data-dir' -d 'The gateway\'s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback list" database' -l 'database' -d 'A PostgreSQL database several gateway nodes share, postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require], instead of the SQLite database in --data-dir (docs/cluster.md).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback list" topic' -l 'topic' -d 'The app\'s topic (bundle id).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback list" environment' -l 'environment' -d 'The environment of the tokens.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback list" json' -l 'json' -d 'Print JSON (the admin port\'s /v1/feedback) instead of a table.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback list" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald feedback list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald tokens" -eq 1' -fa 'create' -d 'Register a device token for an app on a device that is not connected; prints the token (hex).'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald tokens" -eq 1' -fa 'revoke' -d 'Unregister a device token (the app was removed): the gateway then answers 410 Unregistered.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald tokens" -eq 1' -fa 'list' -d 'List device tokens with their state (active, unregistered, expired).'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens create" data-dir' -l 'data-dir' -d 'The gateway\'s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens create" database' -l 'database' -d 'A PostgreSQL database several gateway nodes share, postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require], instead of the SQLite database in --data-dir (docs/cluster.md).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens create" topic' -l 'topic' -d 'The app\'s topic (bundle id).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens create" environment' -l 'environment' -d 'The environment the token belongs to; a gateway of the other environment answers BadDeviceToken.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens create" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens create" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens revoke" data-dir' -l 'data-dir' -d 'The gateway\'s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens revoke" database' -l 'database' -d 'A PostgreSQL database several gateway nodes share, postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require], instead of the SQLite database in --data-dir (docs/cluster.md).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens revoke" token' -l 'token' -d 'The token, in hexadecimal.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens revoke" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens revoke" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens list" data-dir' -l 'data-dir' -d 'The gateway\'s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens list" database' -l 'database' -d 'A PostgreSQL database several gateway nodes share, postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require], instead of the SQLite database in --data-dir (docs/cluster.md).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens list" json' -l 'json' -d 'Print JSON (the admin port\'s shape) instead of a table.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens list" limit' -l 'limit' -d 'At most this many items (1…10000).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens list" after' -l 'after' -d 'Start after this cursor (the "next" a previous page printed).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens list" topic' -l 'topic' -d 'Only this app\'s tokens (bundle id).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens list" device' -l 'device' -d 'Only this device\'s tokens (its id, as herald devices list prints it).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens list" active' -l 'active' -d 'Only tokens not unregistered.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens list" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald tokens list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald devices" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald devices" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald devices" -eq 1' -fa 'list' -d 'List enrolled devices: when each enrolled and was last seen, how many app tokens it has.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald devices list" data-dir' -l 'data-dir' -d 'The gateway\'s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald devices list" database' -l 'database' -d 'A PostgreSQL database several gateway nodes share, postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require], instead of the SQLite database in --data-dir (docs/cluster.md).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald devices list" json' -l 'json' -d 'Print JSON (the admin port\'s shape) instead of a table.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald devices list" limit' -l 'limit' -d 'At most this many items (1…10000).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald devices list" after' -l 'after' -d 'Start after this cursor (the "next" a previous page printed).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald devices list" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald devices list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald held" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald held" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald held" -eq 1' -fa 'list' -d 'List held notifications, oldest first, by token, device or topic.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald held list" data-dir' -l 'data-dir' -d 'The gateway\'s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald held list" database' -l 'database' -d 'A PostgreSQL database several gateway nodes share, postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require], instead of the SQLite database in --data-dir (docs/cluster.md).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald held list" json' -l 'json' -d 'Print JSON (the admin port\'s shape) instead of a table.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald held list" limit' -l 'limit' -d 'At most this many items (1…10000).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald held list" after' -l 'after' -d 'Start after this cursor (the "next" a previous page printed).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald held list" token' -l 'token' -d 'Only this token\'s (hex).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald held list" device' -l 'device' -d 'Only this device\'s.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald held list" topic' -l 'topic' -d 'Only this app\'s (bundle id).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald held list" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald held list" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald receipts" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald receipts" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald receipts" -eq 1' -fa 'show' -d 'Show a notification\'s receipt by apns-id: each token it went to, and its history (accepted, stored, delivered, acked, …).'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald receipts show" data-dir' -l 'data-dir' -d 'The gateway\'s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald receipts show" database' -l 'database' -d 'A PostgreSQL database several gateway nodes share, postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require], instead of the SQLite database in --data-dir (docs/cluster.md).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald receipts show" apns-id' -l 'apns-id' -d 'The notification\'s apns-id (the header the gateway answered with).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald receipts show" json' -l 'json' -d 'Print JSON (the admin port\'s /v1/receipts/<apns-id>) instead of lines.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald receipts show" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald receipts show" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald push" -eq 1' -fa 'send' -d 'Send a notification to one or many device tokens on an APNs-compatible server (a Herald gateway, or Apple\'s).'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" gateway' -l 'gateway' -d 'The server: a gateway\'s provider port (https://localhost:2197, or http://127.0.0.1:8080 for its --h2c-port) or Apple\'s.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" ca' -l 'ca' -d 'A PEM file of trusted roots (the gateway\'s DIR/tls/ca.pem).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" key' -l 'key' -d 'The provider\'s private key (PEM PKCS#8), as herald keys create wrote it.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" key-id' -l 'key-id' -d 'The key\'s 10-character id (what herald keys create printed).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" team' -l 'team' -d 'The 10-character team id the key belongs to.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" topic' -l 'topic' -d 'apns-topic: the bundle id, plus the push type\'s suffix where it has one.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send"' -l 'token' -d 'A device token (hex). Repeat for more.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" tokens' -l 'tokens' -d 'A file of device tokens, one per line; - reads standard input.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" alert' -l 'alert' -d 'The alert body.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" title' -l 'title' -d 'The alert title.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" subtitle' -l 'subtitle' -d 'The alert subtitle.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" badge' -l 'badge' -d 'The badge (0 removes it).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" sound' -l 'sound' -d 'A sound file name, or default.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" category' -l 'category' -d 'The notification\'s category (its actions).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" thread-id' -l 'thread-id' -d 'thread-id: notifications with the same one are grouped.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" content-available' -l 'content-available' -d 'content-available: 1 (a background update; with no alert, badge or sound it is silent).'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" mutable-content' -l 'mutable-content' -d 'mutable-content: 1 (the app\'s service extension may change it).'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send"' -l 'data' -d 'A custom key beside aps: KEY=JSON (e.g. id=42, or name="\\"Ana\\""). Repeat for more.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" payload' -l 'payload' -d 'A file holding the whole JSON payload (instead of the payload flags).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" priority' -l 'priority' -d 'apns-priority: 10, 5 or 1.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" expiration' -l 'expiration' -d 'apns-expiration: UNIX seconds, or 0 for a single delivery attempt.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" collapse-id' -l 'collapse-id' -d 'apns-collapse-id (at most 64 bytes).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" push-type' -l 'push-type' -d 'apns-push-type: alert, background, voip, … (default: background for a silent payload, else alert)' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" apns-id' -l 'apns-id' -d 'apns-id to send (a UUID; one token only); by default a fresh one per notification.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" concurrency' -l 'concurrency' -d 'Requests in flight at once.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" connections' -l 'connections' -d 'HTTP/2 connections to open.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" attempts' -l 'attempts' -d 'Attempts per notification (429, 5xx and connection failures are retried).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" progress' -l 'progress' -d 'Show a progress bar on standard error (default: when it is a terminal).'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" no-progress' -l 'no-progress' -d 'Show a progress bar on standard error (default: when it is a terminal).'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" timeout' -l 'timeout' -d 'Seconds to wait for everything before giving up (unanswered notifications count as failures).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald push send" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald bench" -eq 1' -fa 'prepare' -d 'Register a key and N tokens in a gateway\'s data directory and write h2load\'s inputs.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald bench" -eq 1' -fa 'baseline' -d 'Run a bare SwiftNIO HTTP/2 TLS responder (the benchmark baseline); prints its port as JSON.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald bench" -eq 1' -fa 'delivery' -d 'End-to-end delivery benchmark against a running gateway: devices connected, a provider pushing.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald bench" -eq 1' -fa 'scheduler' -d 'The device runtime\'s scheduler: memory, next-fire computation, lateness over a simulated week.'
complete -c 'herald' -n '__herald_should_offer_completions_for_positional "herald bench" -eq 1' -fa 'provider-schedule' -d 'The provider\'s scheduler: plan a day of 09:00-local sends for --registrations registrations in --zones zones; memory and lateness.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench prepare" data-dir' -l 'data-dir' -d 'The gateway\'s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench prepare" database' -l 'database' -d 'A PostgreSQL database several gateway nodes share, postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require], instead of the SQLite database in --data-dir (docs/cluster.md).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench prepare" tokens' -l 'tokens' -d 'How many device tokens to register.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench prepare" url' -l 'url' -d 'The base URL of the provider port the URIs name, e.g. https://127.0.0.1:2197.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench prepare" out' -l 'out' -d 'The directory to write the inputs to.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench prepare" topic' -l 'topic' -d 'The topic the tokens and key use.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench prepare" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench prepare" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench baseline" port' -l 'port' -d 'The port; 0 picks a free one.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench baseline" tls-cert' -l 'tls-cert' -d 'The server certificate chain (PEM).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench baseline" tls-key' -l 'tls-key' -d 'The server key (PEM).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench baseline" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench baseline" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench delivery" data-dir' -l 'data-dir' -d 'The gateway\'s data directory (its SQLite database and TLS files). herald gateway creates it; the other commands refuse one that does not exist.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench delivery" database' -l 'database' -d 'A PostgreSQL database several gateway nodes share, postgres://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=disable|prefer|require], instead of the SQLite database in --data-dir (docs/cluster.md).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench delivery" url' -l 'url' -d 'The provider port, https://HOST:PORT.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench delivery" gateway' -l 'gateway' -d 'The device port, wss://HOST:PORT.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench delivery" ca' -l 'ca' -d 'The gateway\'s CA (PEM).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench delivery" devices' -l 'devices' -d 'Connected devices.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench delivery" connections' -l 'connections' -d 'Provider HTTP/2 connections.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench delivery" streams' -l 'streams' -d 'Concurrent streams per provider connection.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench delivery" requests' -l 'requests' -d 'Pushes per measurement.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench delivery" pace' -l 'pace' -d 'The paced step\'s rate, as a fraction of the delivery rate of step 2.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench delivery" idle-devices' -l 'idle-devices' -d 'Only measure memory: connect this many idle devices (needs --gateway-pid).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench delivery" gateway-pid' -l 'gateway-pid' -d 'The gateway\'s process id (for its resident memory).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench delivery" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench delivery" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench scheduler" apps' -l 'apps' -d 'Apps on the device.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench scheduler" requests' -l 'requests' -d 'Pending repeating calendar requests per app (at most 64 are kept).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench scheduler" days' -l 'days' -d 'Simulated days to run.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench scheduler" time-zone' -l 'time-zone' -d 'The device\'s time zone.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench scheduler" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench scheduler" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench provider-schedule" registrations' -l 'registrations' -d 'Registrations.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench provider-schedule" zones' -l 'zones' -d 'Time zones.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench provider-schedule" rate' -l 'rate' -d 'The gateway\'s accepted rate, pushes per second.' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench provider-schedule" data-dir' -l 'data-dir' -d 'Where to put the database (default: a new temporary directory).' -rfka ''
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench provider-schedule" version' -l 'version' -d 'Show the version.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald bench provider-schedule" h help' -s 'h' -l 'help' -d 'Show help information.'
complete -c 'herald' -n '__herald_should_offer_completions_for_flags_or_options "herald help" version' -l 'version' -d 'Show the version.'
