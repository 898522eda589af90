#!/bin/bash

__herald_cursor_index_in_current_word() {
    local remaining="${COMP_LINE}"

    local word
    for word in "${COMP_WORDS[@]::COMP_CWORD}"; do
        remaining="${remaining##*([[:space:]])"${word}"*([[:space:]])}"
    done

    local -ir index="$((COMP_POINT - ${#COMP_LINE} + ${#remaining}))"
    if [[ "${index}" -le 0 ]]; then
        printf 0
    else
        printf %s "${index}"
    fi
}

# positional arguments:
#
# - 1: the current (sub)command's count of positional arguments
#
# required variables:
#
# - repeating_flags: the repeating flags that the current (sub)command can accept
# - non_repeating_flags: the non-repeating flags that the current (sub)command can accept
# - repeating_options: the repeating options that the current (sub)command can accept
# - non_repeating_options: the non-repeating options that the current (sub)command can accept
# - positional_number: value ignored
# - unparsed_words: unparsed words from the current command line
#
# modified variables:
#
# - non_repeating_flags: remove flags for this (sub)command that are already on the command line
# - non_repeating_options: remove options for this (sub)command that are already on the command line
# - positional_number: set to the current positional number
# - unparsed_words: remove all flags, options, and option values for this (sub)command
__herald_offer_flags_options() {
    local -ir positional_count="${1}"
    positional_number=0

    local was_flag_option_terminator_seen=false
    local is_parsing_option_value=false

    local -ar unparsed_word_indices=("${!unparsed_words[@]}")
    local -i word_index
    for word_index in "${unparsed_word_indices[@]}"; do
        if "${is_parsing_option_value}"; then
            # This word is an option value:
            # Reset marker for next word iff not currently the last word
            [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]] && is_parsing_option_value=false
            unset "unparsed_words[${word_index}]"
            # Do not process this word as a flag or an option
            continue
        fi

        local word="${unparsed_words["${word_index}"]}"
        if ! "${was_flag_option_terminator_seen}"; then
            case "${word}" in
            --)
                unset "unparsed_words[${word_index}]"
                # by itself -- is a flag/option terminator, but if it is the last word, it is the start of a completion
                if [[ "${word_index}" -ne "${unparsed_word_indices[${#unparsed_word_indices[@]} - 1]}" ]]; then
                    was_flag_option_terminator_seen=true
                fi
                continue
                ;;
            -*)
                # ${word} is a flag or an option
                # If ${word} is an option, mark that the next word to be parsed is an option value
                local option
                for option in "${repeating_options[@]}" "${non_repeating_options[@]}"; do
                    [[ "${word}" = "${option}" ]] && is_parsing_option_value=true && break
                done

                # Remove ${word} from ${non_repeating_flags} or ${non_repeating_options} so it isn't offered again
                local not_found=true
                local -i index
                for index in "${!non_repeating_flags[@]}"; do
                    if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                        unset "non_repeating_flags[${index}]"
                        non_repeating_flags=("${non_repeating_flags[@]}")
                        not_found=false
                        break
                    fi
                done
                if "${not_found}"; then
                    for index in "${!non_repeating_flags[@]}"; do
                        if [[ "${non_repeating_flags[${index}]}" = "${word}" ]]; then
                            unset "non_repeating_flags[${index}]"
                            non_repeating_flags=("${non_repeating_flags[@]}")
                            break
                        fi
                    done
                fi
                unset "unparsed_words[${word_index}]"
                continue
                ;;
            esac
        fi

        # ${word} is neither a flag, nor an option, nor an option value
        if [[ "${positional_number}" -lt "${positional_count}" || "${positional_count}" -lt 0 ]]; then
            # ${word} is a positional
            ((positional_number++))
            unset "unparsed_words[${word_index}]"
        else
            if [[ -z "${word}" ]]; then
                # Could be completing a flag, option, or subcommand
                positional_number=-1
            else
                # ${word} is a subcommand or invalid, so stop processing this (sub)command
                positional_number=-2
            fi
            break
        fi
    done

    unparsed_words=("${unparsed_words[@]}")

    if\
        ! "${was_flag_option_terminator_seen}"\
        && ! "${is_parsing_option_value}"\
        && [[ ("${cur}" = -* && "${positional_number}" -ge 0) || "${positional_number}" -eq -1 ]]
    then
        COMPREPLY+=($(compgen -W "${repeating_flags[*]} ${non_repeating_flags[*]} ${repeating_options[*]} ${non_repeating_options[*]}" -- "${cur}"))
    fi
}

__herald_add_completions() {
    local completion
    while IFS='' read -r completion; do
        COMPREPLY+=("${completion}")
    done < <(IFS=$'\n' compgen "${@}" -- "${cur}")
}

__herald_custom_complete() {
    if [[ -n "${cur}" || -z ${COMP_WORDS[${COMP_CWORD}]} || "${COMP_LINE:${COMP_POINT}:1}" != ' ' ]]; then
        local -ar words=("${COMP_WORDS[@]}")
    else
        local -ar words=("${COMP_WORDS[@]::${COMP_CWORD}}" '' "${COMP_WORDS[@]:${COMP_CWORD}}")
    fi

    "${COMP_WORDS[0]}" "${@}" "${words[@]}"
}

_herald() {
    local state
    state="$(shopt -p;shopt -po)"
    trap "${state//$'\n'/;}" RETURN
    shopt -s extglob
    set +o history +o posix

    local -xr SAP_SHELL=bash
    local -x SAP_SHELL_VERSION
    SAP_SHELL_VERSION="$(IFS='.';printf %s "${BASH_VERSINFO[*]}")"
    local -r SAP_SHELL_VERSION

    local -r cur="${2}"
    local -r prev="${3}"

    local -i positional_number
    local -a unparsed_words=("${COMP_WORDS[@]:1:${COMP_CWORD}}")

    local -a repeating_flags=()
    local -a non_repeating_flags=(--version -h --help)
    local -a repeating_options=()
    local -a non_repeating_options=()
    __herald_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    gateway|device|provider|keys|feedback|tokens|devices|held|receipts|push|channels|backup|restore|doctor|bench|help)
        # Offer subcommand argument completions
        "_herald_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'gateway device provider keys feedback tokens devices held receipts push channels backup restore doctor bench help' -- "${cur}"))
        ;;
    esac
}

_herald_gateway() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __herald_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    run|watch|health)
        # Offer subcommand argument completions
        "_herald_gateway_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'run watch health' -- "${cur}"))
        ;;
    esac
}

_herald_gateway_run() {
    repeating_flags=()
    non_repeating_flags=(--enable-faults --print-config --version -h --help)
    repeating_options=()
    non_repeating_options=(--data-dir --database --provider-port --h2c-port --admin-port --admin-host --enrollment-secret-file --provider-idle-timeout --provider-connections-per-address --device-connections-per-address --device-handshakes-per-address --device-reconnect-rate --handshake-timeout --device-port --webpush-port --webpush-origin --channel-port --feedback-port --feedback-client-ca --provider-client-ca --device-ping-interval --device-ping-minimum --device-idle-timeout --store-timeout --background-per-hour --inactivity-days --receipt-days --host --environment --tls-cert --tls-key --token-burst --token-rate --offline-queue --durability --node-id --node-lease --cluster-sweep --cluster-full-sweep --cross-node-hints --log-level --log-format --otlp-endpoint --config)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--database')
        return
        ;;
    '--provider-port')
        return
        ;;
    '--h2c-port')
        return
        ;;
    '--admin-port')
        return
        ;;
    '--admin-host')
        return
        ;;
    '--enrollment-secret-file')
        return
        ;;
    '--provider-idle-timeout')
        return
        ;;
    '--provider-connections-per-address')
        return
        ;;
    '--device-connections-per-address')
        return
        ;;
    '--device-handshakes-per-address')
        return
        ;;
    '--device-reconnect-rate')
        return
        ;;
    '--handshake-timeout')
        return
        ;;
    '--device-port')
        return
        ;;
    '--webpush-port')
        return
        ;;
    '--webpush-origin')
        return
        ;;
    '--channel-port')
        return
        ;;
    '--feedback-port')
        return
        ;;
    '--feedback-client-ca')
        return
        ;;
    '--provider-client-ca')
        return
        ;;
    '--device-ping-interval')
        return
        ;;
    '--device-ping-minimum')
        return
        ;;
    '--device-idle-timeout')
        return
        ;;
    '--store-timeout')
        return
        ;;
    '--background-per-hour')
        return
        ;;
    '--inactivity-days')
        return
        ;;
    '--receipt-days')
        return
        ;;
    '--host')
        return
        ;;
    '--environment')
        return
        ;;
    '--tls-cert')
        return
        ;;
    '--tls-key')
        return
        ;;
    '--token-burst')
        return
        ;;
    '--token-rate')
        return
        ;;
    '--offline-queue')
        return
        ;;
    '--durability')
        __herald_add_completions -W 'full'$'\n''normal'
        return
        ;;
    '--node-id')
        return
        ;;
    '--node-lease')
        return
        ;;
    '--cluster-sweep')
        return
        ;;
    '--cluster-full-sweep')
        return
        ;;
    '--cross-node-hints')
        __herald_add_completions -W 'on'$'\n''off'
        return
        ;;
    '--log-level')
        return
        ;;
    '--log-format')
        __herald_add_completions -W 'text'$'\n''json'
        return
        ;;
    '--otlp-endpoint')
        return
        ;;
    '--config')
        return
        ;;
    esac
}

_herald_gateway_watch() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--admin --topic)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--admin')
        return
        ;;
    '--topic')
        return
        ;;
    esac
}

_herald_gateway_health() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--admin --timeout)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--admin')
        return
        ;;
    '--timeout')
        return
        ;;
    esac
}

_herald_device() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __herald_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    run|unregister|plan)
        # Offer subcommand argument completions
        "_herald_device_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'run unregister plan' -- "${cur}"))
        ;;
    esac
}

_herald_device_run() {
    repeating_flags=()
    non_repeating_flags=(--json --desktop --unifiedpush --live-activities --widgets --print-config --version -h --help)
    repeating_options=(--gateway --app --legacy-app --bundle --language --entitlements)
    non_repeating_options=(--data-dir --ca --time-zone --prompts --enrollment-secret-file --agent-socket --log-level --focus --log-format --config)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--gateway')
        return
        ;;
    '--ca')
        return
        ;;
    '--app')
        return
        ;;
    '--legacy-app')
        return
        ;;
    '--bundle')
        return
        ;;
    '--time-zone')
        return
        ;;
    '--language')
        return
        ;;
    '--prompts')
        return
        ;;
    '--enrollment-secret-file')
        return
        ;;
    '--agent-socket')
        return
        ;;
    '--log-level')
        return
        ;;
    '--entitlements')
        return
        ;;
    '--focus')
        return
        ;;
    '--log-format')
        __herald_add_completions -W 'text'$'\n''json'
        return
        ;;
    '--config')
        return
        ;;
    esac
}

_herald_device_unregister() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--data-dir --app --gateway --ca)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--app')
        return
        ;;
    '--gateway')
        return
        ;;
    '--ca')
        return
        ;;
    esac
}

_herald_device_plan() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--requests --from --until --time-zone --events)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--requests')
        return
        ;;
    '--from')
        return
        ;;
    '--until')
        return
        ;;
    '--time-zone')
        return
        ;;
    '--events')
        return
        ;;
    esac
}

_herald_provider() {
    repeating_flags=()
    non_repeating_flags=(--print-config --version -h --help)
    repeating_options=()
    non_repeating_options=(--data-dir --port --api-token-file --host --gateway --ca --key --key-id --team --cert --cert-key --default-language --concurrency --missed-window --feedback-interval --vapid-key --vapid-subject --log-level --log-format --otlp-endpoint --config)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--port')
        return
        ;;
    '--api-token-file')
        return
        ;;
    '--host')
        return
        ;;
    '--gateway')
        return
        ;;
    '--ca')
        return
        ;;
    '--key')
        return
        ;;
    '--key-id')
        return
        ;;
    '--team')
        return
        ;;
    '--cert')
        return
        ;;
    '--cert-key')
        return
        ;;
    '--default-language')
        return
        ;;
    '--concurrency')
        return
        ;;
    '--missed-window')
        return
        ;;
    '--feedback-interval')
        return
        ;;
    '--vapid-key')
        return
        ;;
    '--vapid-subject')
        return
        ;;
    '--log-level')
        __herald_add_completions -W 'trace'$'\n''debug'$'\n''info'$'\n''notice'$'\n''warning'$'\n''error'$'\n''critical'
        return
        ;;
    '--log-format')
        __herald_add_completions -W 'text'$'\n''json'
        return
        ;;
    '--otlp-endpoint')
        return
        ;;
    '--config')
        return
        ;;
    esac
}

_herald_keys() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __herald_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    create|certificate|list|revoke|jwt|vapid)
        # Offer subcommand argument completions
        "_herald_keys_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'create certificate list revoke jwt vapid' -- "${cur}"))
        ;;
    esac
}

_herald_keys_create() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=(--topic)
    non_repeating_options=(--data-dir --database --team --out --key-id --environment)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--database')
        return
        ;;
    '--team')
        return
        ;;
    '--topic')
        return
        ;;
    '--out')
        return
        ;;
    '--key-id')
        return
        ;;
    '--environment')
        return
        ;;
    esac
}

_herald_keys_certificate() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=(--variant)
    non_repeating_options=(--data-dir --database --team --topic --environment --out-cert --out-key --out-p12 --p12-password-file)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--database')
        return
        ;;
    '--team')
        return
        ;;
    '--topic')
        return
        ;;
    '--variant')
        __herald_add_completions -W 'voip'$'\n''complication'
        return
        ;;
    '--environment')
        return
        ;;
    '--out-cert')
        return
        ;;
    '--out-key')
        return
        ;;
    '--out-p12')
        return
        ;;
    '--p12-password-file')
        return
        ;;
    esac
}

_herald_keys_list() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--data-dir --database)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--database')
        return
        ;;
    esac
}

_herald_keys_revoke() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--data-dir --database --key-id)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--database')
        return
        ;;
    '--key-id')
        return
        ;;
    esac
}

_herald_keys_jwt() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--key --key-id --team)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--key')
        return
        ;;
    '--key-id')
        return
        ;;
    '--team')
        return
        ;;
    esac
}

_herald_keys_vapid() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--out)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--out')
        return
        ;;
    esac
}

_herald_feedback() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __herald_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    certificate|read|list)
        # Offer subcommand argument completions
        "_herald_feedback_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'certificate read list' -- "${cur}"))
        ;;
    esac
}

_herald_feedback_certificate() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--data-dir --database --topic --out-cert --out-key)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--database')
        return
        ;;
    '--topic')
        return
        ;;
    '--out-cert')
        return
        ;;
    '--out-key')
        return
        ;;
    esac
}

_herald_feedback_read() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--address --cert --key --ca)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--address')
        return
        ;;
    '--cert')
        return
        ;;
    '--key')
        return
        ;;
    '--ca')
        return
        ;;
    esac
}

_herald_feedback_list() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--data-dir --database --topic --environment)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--database')
        return
        ;;
    '--topic')
        return
        ;;
    '--environment')
        return
        ;;
    esac
}

_herald_tokens() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __herald_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    create|revoke|list)
        # Offer subcommand argument completions
        "_herald_tokens_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'create revoke list' -- "${cur}"))
        ;;
    esac
}

_herald_tokens_create() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--data-dir --database --topic --environment)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--database')
        return
        ;;
    '--topic')
        return
        ;;
    '--environment')
        return
        ;;
    esac
}

_herald_tokens_revoke() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--data-dir --database --token)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--database')
        return
        ;;
    '--token')
        return
        ;;
    esac
}

_herald_tokens_list() {
    repeating_flags=()
    non_repeating_flags=(--json --active --version -h --help)
    repeating_options=()
    non_repeating_options=(--data-dir --database --limit --after --topic --device)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--database')
        return
        ;;
    '--limit')
        return
        ;;
    '--after')
        return
        ;;
    '--topic')
        return
        ;;
    '--device')
        return
        ;;
    esac
}

_herald_devices() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __herald_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    list)
        # Offer subcommand argument completions
        "_herald_devices_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'list' -- "${cur}"))
        ;;
    esac
}

_herald_devices_list() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--data-dir --database --limit --after)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--database')
        return
        ;;
    '--limit')
        return
        ;;
    '--after')
        return
        ;;
    esac
}

_herald_held() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __herald_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    list)
        # Offer subcommand argument completions
        "_herald_held_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'list' -- "${cur}"))
        ;;
    esac
}

_herald_held_list() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--data-dir --database --limit --after --token --device --topic)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--database')
        return
        ;;
    '--limit')
        return
        ;;
    '--after')
        return
        ;;
    '--token')
        return
        ;;
    '--device')
        return
        ;;
    '--topic')
        return
        ;;
    esac
}

_herald_receipts() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __herald_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    show)
        # Offer subcommand argument completions
        "_herald_receipts_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'show' -- "${cur}"))
        ;;
    esac
}

_herald_receipts_show() {
    repeating_flags=()
    non_repeating_flags=(--json --version -h --help)
    repeating_options=()
    non_repeating_options=(--data-dir --database --apns-id)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--database')
        return
        ;;
    '--apns-id')
        return
        ;;
    esac
}

_herald_push() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __herald_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    send)
        # Offer subcommand argument completions
        "_herald_push_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'send' -- "${cur}"))
        ;;
    esac
}

_herald_push_send() {
    repeating_flags=()
    non_repeating_flags=(--receipt --content-available --mutable-content --input-push-token --progress --no-progress --version -h --help)
    repeating_options=(--token --data)
    non_repeating_options=(--gateway --ca --key --key-id --team --cert --cert-key --topic --webpush --vapid-key --vapid-subject --ttl --urgency --webpush-topic --navigate --tokens --alert --title --subtitle --badge --sound --category --thread-id --interruption-level --payload --event --content-state --timestamp --stale-date --dismissal-date --relevance-score --attributes-type --attributes --input-push-channel --channel --priority --expiration --collapse-id --push-type --apns-id --concurrency --connections --attempts --timeout)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--gateway')
        return
        ;;
    '--ca')
        return
        ;;
    '--key')
        return
        ;;
    '--key-id')
        return
        ;;
    '--team')
        return
        ;;
    '--cert')
        return
        ;;
    '--cert-key')
        return
        ;;
    '--topic')
        return
        ;;
    '--webpush')
        return
        ;;
    '--vapid-key')
        return
        ;;
    '--vapid-subject')
        return
        ;;
    '--ttl')
        return
        ;;
    '--urgency')
        return
        ;;
    '--webpush-topic')
        return
        ;;
    '--navigate')
        return
        ;;
    '--token')
        return
        ;;
    '--tokens')
        return
        ;;
    '--alert')
        return
        ;;
    '--title')
        return
        ;;
    '--subtitle')
        return
        ;;
    '--badge')
        return
        ;;
    '--sound')
        return
        ;;
    '--category')
        return
        ;;
    '--thread-id')
        return
        ;;
    '--interruption-level')
        return
        ;;
    '--data')
        return
        ;;
    '--payload')
        return
        ;;
    '--event')
        return
        ;;
    '--content-state')
        return
        ;;
    '--timestamp')
        return
        ;;
    '--stale-date')
        return
        ;;
    '--dismissal-date')
        return
        ;;
    '--relevance-score')
        return
        ;;
    '--attributes-type')
        return
        ;;
    '--attributes')
        return
        ;;
    '--input-push-channel')
        return
        ;;
    '--channel')
        return
        ;;
    '--priority')
        return
        ;;
    '--expiration')
        return
        ;;
    '--collapse-id')
        return
        ;;
    '--push-type')
        return
        ;;
    '--apns-id')
        return
        ;;
    '--concurrency')
        return
        ;;
    '--connections')
        return
        ;;
    '--attempts')
        return
        ;;
    '--timeout')
        return
        ;;
    esac
}

_herald_channels() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __herald_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    create|list|show|delete)
        # Offer subcommand argument completions
        "_herald_channels_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'create list show delete' -- "${cur}"))
        ;;
    esac
}

_herald_channels_create() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--gateway --ca --key --key-id --team --cert --cert-key --topic --storage-policy)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--gateway')
        return
        ;;
    '--ca')
        return
        ;;
    '--key')
        return
        ;;
    '--key-id')
        return
        ;;
    '--team')
        return
        ;;
    '--cert')
        return
        ;;
    '--cert-key')
        return
        ;;
    '--topic')
        return
        ;;
    '--storage-policy')
        return
        ;;
    esac
}

_herald_channels_list() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--gateway --ca --key --key-id --team --cert --cert-key --topic)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--gateway')
        return
        ;;
    '--ca')
        return
        ;;
    '--key')
        return
        ;;
    '--key-id')
        return
        ;;
    '--team')
        return
        ;;
    '--cert')
        return
        ;;
    '--cert-key')
        return
        ;;
    '--topic')
        return
        ;;
    esac
}

_herald_channels_show() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--gateway --ca --key --key-id --team --cert --cert-key --topic --channel)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--gateway')
        return
        ;;
    '--ca')
        return
        ;;
    '--key')
        return
        ;;
    '--key-id')
        return
        ;;
    '--team')
        return
        ;;
    '--cert')
        return
        ;;
    '--cert-key')
        return
        ;;
    '--topic')
        return
        ;;
    '--channel')
        return
        ;;
    esac
}

_herald_channels_delete() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--gateway --ca --key --key-id --team --cert --cert-key --topic --channel)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--gateway')
        return
        ;;
    '--ca')
        return
        ;;
    '--key')
        return
        ;;
    '--key-id')
        return
        ;;
    '--team')
        return
        ;;
    '--cert')
        return
        ;;
    '--cert-key')
        return
        ;;
    '--topic')
        return
        ;;
    '--channel')
        return
        ;;
    esac
}

_herald_backup() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--data-dir --database --out --tls-cert --tls-key)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--database')
        return
        ;;
    '--out')
        return
        ;;
    '--tls-cert')
        return
        ;;
    '--tls-key')
        return
        ;;
    esac
}

_herald_restore() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--from --data-dir)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--from')
        return
        ;;
    '--data-dir')
        return
        ;;
    esac
}

_herald_doctor() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __herald_offer_flags_options -1
}

_herald_bench() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=()
    __herald_offer_flags_options 0

    # Offer subcommand / subcommand argument completions
    local -r subcommand="${unparsed_words[0]}"
    unset 'unparsed_words[0]'
    unparsed_words=("${unparsed_words[@]}")
    case "${subcommand}" in
    prepare|baseline|delivery|broadcast|scale|scheduler|provider-schedule)
        # Offer subcommand argument completions
        "_herald_bench_${subcommand}"
        ;;
    *)
        # Offer subcommand completions
        COMPREPLY+=($(compgen -W 'prepare baseline delivery broadcast scale scheduler provider-schedule' -- "${cur}"))
        ;;
    esac
}

_herald_bench_prepare() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--data-dir --database --tokens --url --out --topic --webpush-url)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--database')
        return
        ;;
    '--tokens')
        return
        ;;
    '--url')
        return
        ;;
    '--out')
        return
        ;;
    '--topic')
        return
        ;;
    '--webpush-url')
        return
        ;;
    esac
}

_herald_bench_baseline() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--port --tls-cert --tls-key)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--port')
        return
        ;;
    '--tls-cert')
        return
        ;;
    '--tls-key')
        return
        ;;
    esac
}

_herald_bench_delivery() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--data-dir --database --url --gateway --ca --devices --connections --streams --requests --pace --idle-devices --gateway-pid --admin)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--database')
        return
        ;;
    '--url')
        return
        ;;
    '--gateway')
        return
        ;;
    '--ca')
        return
        ;;
    '--devices')
        return
        ;;
    '--connections')
        return
        ;;
    '--streams')
        return
        ;;
    '--requests')
        return
        ;;
    '--pace')
        return
        ;;
    '--idle-devices')
        return
        ;;
    '--gateway-pid')
        return
        ;;
    '--admin')
        return
        ;;
    esac
}

_herald_bench_broadcast() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--data-dir --database --url --channels --gateway --ca --devices --connections --streams)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--data-dir')
        return
        ;;
    '--database')
        return
        ;;
    '--url')
        return
        ;;
    '--channels')
        return
        ;;
    '--gateway')
        return
        ;;
    '--ca')
        return
        ;;
    '--devices')
        return
        ;;
    '--connections')
        return
        ;;
    '--streams')
        return
        ;;
    esac
}

_herald_bench_scale() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--work --devices --sources --concurrency --pushes --reconnect-rate --non-readers --storm-deadline --ping-interval --nodes --database --devices-per-generator --heap-profile)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--work')
        return
        ;;
    '--devices')
        return
        ;;
    '--sources')
        return
        ;;
    '--concurrency')
        return
        ;;
    '--pushes')
        return
        ;;
    '--reconnect-rate')
        return
        ;;
    '--non-readers')
        return
        ;;
    '--storm-deadline')
        return
        ;;
    '--ping-interval')
        return
        ;;
    '--nodes')
        return
        ;;
    '--database')
        return
        ;;
    '--devices-per-generator')
        return
        ;;
    '--heap-profile')
        return
        ;;
    esac
}

_herald_bench_scheduler() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--apps --requests --days --time-zone)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--apps')
        return
        ;;
    '--requests')
        return
        ;;
    '--days')
        return
        ;;
    '--time-zone')
        return
        ;;
    esac
}

_herald_bench_provider-schedule() {
    repeating_flags=()
    non_repeating_flags=(--version -h --help)
    repeating_options=()
    non_repeating_options=(--registrations --zones --rate --data-dir)
    __herald_offer_flags_options 0

    # Offer option value completions
    case "${prev}" in
    '--registrations')
        return
        ;;
    '--zones')
        return
        ;;
    '--rate')
        return
        ;;
    '--data-dir')
        return
        ;;
    esac
}

_herald_help() {
    repeating_flags=()
    non_repeating_flags=(--version)
    repeating_options=()
    non_repeating_options=()
    __herald_offer_flags_options -1
}

complete -o filenames -F _herald herald
