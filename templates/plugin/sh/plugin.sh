#!/bin/sh
# app-{{name}}: a plugin for `app`. Run it as `app {{name}} [COMMAND]`.
#
# It speaks app's plugin protocol:
#   app-{{name}} __app_metadata     one line of JSON describing the plugin
#   app-{{name}} __complete WORDS   completion candidates, then :<directive>
# and, because its metadata says "context":"stdin", `app` writes the JSON
# context as the first line of stdin (APP_CONTEXT=stdin). The same facts are
# always in the APP_* environment variables too.
#
# Exit codes: 0 ok, 1 failure, 2 usage error.
set -eu

NAME="{{name}}"
VERSION="0.1.0"
DESCRIPTION="{{description}}"
COMMANDS="hello context help"

case "${1-}" in
__app_metadata)
    printf '{"apiVersion":"app.plugin/v1","name":"%s","version":"%s","description":"%s","context":"stdin","completion":true}\n' \
        "$NAME" "$VERSION" "$DESCRIPTION"
    exit 0
    ;;
__complete)
    shift
    # Only the first word is completed; the last word is the one being typed.
    if [ "$#" -le 1 ]; then
        current="${1-}"
        for c in $COMMANDS; do
            case "$c" in "$current"*) printf '%s\n' "$c" ;; esac
        done
    fi
    echo ":4"
    exit 0
    ;;
esac

# Logging, as app's SDK does it: `app --log` arrives as APP_LOG (0 silent,
# 1 error, 2 warn (the default), 3 info, 4 debug, 5 trace, or those names)
# and `app --log-format` as APP_LOG_FORMAT: `text` writes
# "app-NAME: warning: message", `json` one object a line with time, level,
# plugin and message. Log lines go to stderr; stdout is the plugin's output.
case "$(printf '%s' "${APP_LOG-2}" | tr 'A-Z' 'a-z')" in
0 | off | silent | none) LOG_LEVEL=0 ;;
1 | error) LOG_LEVEL=1 ;;
3 | info) LOG_LEVEL=3 ;;
4 | debug) LOG_LEVEL=4 ;;
5 | trace) LOG_LEVEL=5 ;;
*) LOG_LEVEL=2 ;;
esac

# log LEVEL MESSAGE, LEVEL one of error warn info debug trace; `fatal` is an
# error that ends the plugin, written at any level.
log() {
    level="$1"
    shift
    case "$level" in
    fatal | error) n=1 tag="error: " ;;
    warn) n=2 tag="warning: " ;;
    info) n=3 tag="" ;;
    debug) n=4 tag="debug: " ;;
    *) n=5 tag="trace: " ;;
    esac
    [ "$level" = fatal ] || [ "$n" -le "$LOG_LEVEL" ] || return 0
    plugin="${APP_PLUGIN_NAME:-$NAME}"
    if [ "${APP_LOG_FORMAT-}" = json ]; then
        time="$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)"
        case "$time" in *N*) time="$(date -u +%Y-%m-%dT%H:%M:%SZ)" ;; esac
        [ "$level" = fatal ] && level=error
        printf '{"time":"%s","level":"%s","plugin":"%s","message":"%s"}\n' \
            "$time" "$level" "$(json_escape "$plugin")" "$(json_escape "$*")" >&2
    elif [ "$level" = fatal ]; then
        printf 'app-%s: %s\n' "$plugin" "$*" >&2
    else
        printf 'app-%s: %s%s\n' "$plugin" "$tag" "$*" >&2
    fi
}

# The text of a JSON string: backslashes, quotes, tabs and newlines escaped.
json_escape() {
    printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g; s/	/\\t/g' |
        awk 'NR > 1 { printf "\\n" } { printf "%s", $0 }'
}

# The context: the first line of stdin when app put it there, else the
# environment (also when the plugin is run directly, without app).
CONTEXT_JSON=""
if [ "${APP_CONTEXT-}" = "stdin" ]; then
    IFS= read -r CONTEXT_JSON || true
fi
# A string field of the context document; enough for flat string values.
context_field() {
    printf '%s' "$CONTEXT_JSON" | sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p"
}
plugin_name="$(context_field plugin_name)"
plugin_name="${plugin_name:-${APP_PLUGIN_NAME:-$NAME}}"
if [ -n "$CONTEXT_JSON" ]; then log debug "context from stdin"; else log debug "context from the environment"; fi

usage() {
    cat <<USAGE
app $NAME: $DESCRIPTION

Usage: app $NAME [COMMAND]

Commands:
  hello [WHO]  Say hello (the default)
  context      Print the context app passed (JSON, or the APP_* variables)
  help         Show this help

Exit codes: 0 ok, 1 failure, 2 usage error.
USAGE
}

command="${1-hello}"
[ "$#" -gt 0 ] && shift
case "$command" in
hello)
    who="${1-world}"
    echo "hello $who from $plugin_name $VERSION (app ${APP_VERSION-not used}, log level $LOG_LEVEL)"
    ;;
context)
    if [ -n "$CONTEXT_JSON" ]; then
        printf '%s\n' "$CONTEXT_JSON"
    else
        env | grep '^APP_' | sort || true
    fi
    ;;
help | -h | --help)
    usage
    ;;
*)
    log fatal "unknown command '$command'; run 'app $NAME help'"
    exit 2
    ;;
esac
