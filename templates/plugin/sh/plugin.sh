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
log="${APP_LOG:-2}"

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
    echo "hello $who from $plugin_name $VERSION (app ${APP_VERSION-not used}, log level $log)"
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
    echo "app-$NAME: unknown command '$command'; run 'app $NAME help'" >&2
    exit 2
    ;;
esac
