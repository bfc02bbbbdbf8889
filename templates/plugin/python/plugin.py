#!/usr/bin/env python3
"""app-{{name}}: a plugin for `app`. Run it as `app {{name}} [COMMAND]`.

It speaks app's plugin protocol:
  app-{{name}} __app_metadata     one line of JSON describing the plugin
  app-{{name}} __complete WORDS   completion candidates, then :<directive>
and, because its metadata says "context": "stdin", `app` writes the JSON
context as the first line of stdin (APP_CONTEXT=stdin). The same facts are
always in the APP_* environment variables too.

Exit codes: 0 ok, 1 failure, 2 usage error.
"""
import json
import os
import sys

NAME = "{{name}}"
VERSION = "0.1.0"
DESCRIPTION = "{{description}}"
COMMANDS = {
    "hello": "Say hello (the default)",
    "context": "Print the context app passed, as JSON",
    "help": "Show this help",
}
# cobra's completion directive: 4 = no file completion.
NO_FILE_COMP = 4


def metadata():
    print(json.dumps({
        "apiVersion": "app.plugin/v1",
        "name": NAME,
        "version": VERSION,
        "description": DESCRIPTION,
        "context": "stdin",
        "completion": True,
    }, separators=(",", ":")))


def complete(words):
    """The words after the plugin name; the last is the one being typed."""
    if len(words) <= 1:
        current = words[0] if words else ""
        for command, help_text in COMMANDS.items():
            if command.startswith(current):
                print(f"{command}\t{help_text}")
    print(f":{NO_FILE_COMP}")


def load_context():
    """The context: the first line of stdin when app put it there, else the
    APP_* environment, else defaults (the plugin was run directly)."""
    if os.environ.get("APP_CONTEXT") == "stdin":
        line = sys.stdin.readline()
        try:
            return json.loads(line)
        except ValueError as e:
            print(f"app-{NAME}: the first line of stdin is not an app context ({e}); "
                  "run the plugin through app, or without APP_CONTEXT=stdin", file=sys.stderr)
            sys.exit(1)
    env = os.environ
    return {
        "plugin_name": env.get("APP_PLUGIN_NAME", NAME),
        "app_version": env.get("APP_VERSION"),
        "log": int(env.get("APP_LOG", "2")),
        "hosts": [h for h in env.get("APP_HOSTS", "").split(",") if h],
        "config": env.get("APP_CONFIG"),
        "data_dir": env.get("APP_DATA_DIR"),
        "runtime_dir": env.get("APP_RUNTIME_DIR"),
        "args": sys.argv[1:],
    }


def usage():
    print(f"app {NAME}: {DESCRIPTION}\n\nUsage: app {NAME} [COMMAND]\n\nCommands:")
    for command, help_text in COMMANDS.items():
        print(f"  {command:<10} {help_text}")
    print("\nExit codes: 0 ok, 1 failure, 2 usage error.")


def main(args):
    if args[:1] == ["__app_metadata"]:
        metadata()
        return 0
    if args[:1] == ["__complete"]:
        complete(args[1:])
        return 0
    ctx = load_context()
    command = args[0] if args else "hello"
    if command == "hello":
        who = args[1] if len(args) > 1 else "world"
        print(f"hello {who} from {ctx.get('plugin_name', NAME)} {VERSION} "
              f"(app {ctx.get('app_version') or 'not used'}, log level {ctx.get('log', 2)})")
    elif command == "context":
        print(json.dumps(ctx, indent=2, sort_keys=True))
    elif command in ("help", "-h", "--help"):
        usage()
    else:
        print(f"app-{NAME}: unknown command '{command}'; run 'app {NAME} help'", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
