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
import datetime
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

# Logging, as app's SDK does it: `app --log` arrives as APP_LOG (0 silent,
# 1 error, 2 warn (the default), 3 info, 4 debug, 5 trace, or those names)
# and `app --log-format` as APP_LOG_FORMAT: `text` writes
# "app-NAME: warning: message", `json` one object a line with time, level,
# plugin and message. Log lines go to stderr; stdout is the plugin's output.
LEVELS = ["off", "error", "warn", "info", "debug", "trace"]
TEXT_TAGS = {"error": "error: ", "warn": "warning: ", "info": "", "debug": "debug: ", "trace": "trace: "}


def log_level():
    word = os.environ.get("APP_LOG", "2").strip().lower()
    if word.isdigit() and int(word) < len(LEVELS):
        return int(word)
    word = {"warning": "warn", "silent": "off", "none": "off"}.get(word, word)
    return LEVELS.index(word) if word in LEVELS else 2


def log(level, message, fatal=False):
    """Writes `message` at `level` ("error" … "trace") when APP_LOG allows;
    `fatal=True` writes an error that ends the plugin at any level."""
    if not fatal and LEVELS.index(level) > log_level():
        return
    plugin = os.environ.get("APP_PLUGIN_NAME") or NAME
    if os.environ.get("APP_LOG_FORMAT") == "json":
        now = datetime.datetime.now(datetime.timezone.utc)
        line = json.dumps({
            "time": now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z",
            "level": level,
            "plugin": plugin,
            "message": message,
        }, separators=(",", ":"))
    else:
        line = f"app-{plugin}: {'' if fatal else TEXT_TAGS[level]}{message}"
    print(line, file=sys.stderr, flush=True)


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
            log("error", f"the first line of stdin is not an app context ({e}); "
                "run the plugin through app, or without APP_CONTEXT=stdin", fatal=True)
            sys.exit(1)
    env = os.environ
    return {
        "plugin_name": env.get("APP_PLUGIN_NAME", NAME),
        "app_version": env.get("APP_VERSION"),
        "log": log_level(),
        "log_format": env.get("APP_LOG_FORMAT", "text"),
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
    log("debug", f"context from {'stdin' if os.environ.get('APP_CONTEXT') == 'stdin' else 'the environment'}")
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
        log("error", f"unknown command '{command}'; run 'app {NAME} help'", fatal=True)
        return 2
    return 0


if __name__ == "__main__":
    try:
        code = main(sys.argv[1:])
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`app {{name}} context | head -1`): not an
        # error. Point stdout at /dev/null so that Python's own flush at exit
        # does not fail again with a traceback.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    sys.exit(code)
