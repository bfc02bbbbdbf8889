"""An SSE feed for the tests, shaped like the ones people relay (run by
tests/it/feeds/; written here, not a copy of any service):

  wiki    Wikimedia EventStreams framing over HTTPS: one path and query,
          two required headers and a bearer token (401 otherwise),
          `retry:`, `event: message`, ids that are JSON arrays of Kafka
          positions, the stream name at /meta/stream, `:ok` heartbeats;
          the connection is dropped every DROP events and a resume by
          Last-Event-ID replays what follows.
  text    `event: price` / `data: 101.5`: not JSON.
  429     429 with Retry-After: 2 on the first request, then `text`.
  204     204 No Content.
  html    200 with an HTML page.

Every request is appended to LOG as one JSON line (path, the headers the
test checks, Last-Event-ID). Usage: feed_server.py MODE PORT LOG COUNT
[CERT KEY TOKEN]."""

import json
import socketserver
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

MODE, PORT, LOG, COUNT = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
CERT, KEY, TOKEN = (sys.argv[5:8] + [None, None, None])[:3]
PATH = "/v2/stream/recentchange?since=2026-12-01T00%3A00%3A00Z"
DROP = 7
lock = threading.Lock()
requests = 0


def wiki_event(n):
    ident = json.dumps([{"topic": "eqiad.mediawiki.recentchange", "partition": 0, "offset": n}])
    data = json.dumps({"meta": {"stream": "mediawiki.recentchange", "id": f"e{n}"},
                       "title": f"Page {n}", "seq": n})
    return f"event: message\nid: {ident}\ndata: {data}\n\n"


def resume_after(header):
    if not header:
        return 0
    try:
        return int(json.loads(header)[0]["offset"])
    except (ValueError, KeyError, IndexError, TypeError):
        return 0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        global requests
        with lock:
            requests += 1
            first = requests == 1
            with open(LOG, "a") as f:
                f.write(json.dumps({
                    "path": self.path,
                    "api_user_agent": self.headers.get("Api-User-Agent"),
                    "two": self.headers.get("X-Two"),
                    "authorization": self.headers.get("Authorization"),
                    "user_agent": self.headers.get("User-Agent"),
                    "accept_encoding": self.headers.get("Accept-Encoding"),
                    "last_event_id": self.headers.get("Last-Event-ID"),
                    "time": time.time(),
                }) + "\n")
        if MODE == "204":
            self.answer(204, b"", "text/plain")
        elif MODE == "html":
            self.answer(200, b"<html><body>Sign in</body></html>", "text/html; charset=utf-8")
        elif MODE == "429" and first:
            self.send_response(429)
            self.send_header("Retry-After", "2")
            self.send_header("Content-Type", "text/plain")
            body = b"slow down \x1b[31mplease"
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif MODE in ("text", "429"):
            self.stream_text()
        else:
            self.stream_wiki()

    def answer(self, status, body, ctype):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def start_stream(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def stream_text(self):
        self.start_stream()
        for n in range(1, COUNT + 1):
            self.wfile.write(f"event: price\ndata: {100 + n}.5\n\n".encode())
        self.wfile.flush()
        self.hold()

    def stream_wiki(self):
        if self.path != PATH:
            return self.answer(404, b"no such stream", "text/plain")
        if (self.headers.get("Authorization") != f"Bearer {TOKEN}"
                or not self.headers.get("Api-User-Agent") or self.headers.get("X-Two") != "2"):
            return self.answer(401, b'{"error":"who are you?"}', "application/json")
        self.start_stream()
        self.wfile.write(b"retry: 200\n:ok\n\n")
        after = resume_after(self.headers.get("Last-Event-ID"))
        sent = 0
        for n in range(after + 1, COUNT + 1):
            self.wfile.write(wiki_event(n).encode())
            self.wfile.write(b":ok\n\n")
            self.wfile.flush()
            sent += 1
            if sent == DROP:
                return  # dropped: the client resumes by Last-Event-ID
        self.hold()

    def hold(self):
        # Heartbeats until the client goes away (bounded: 120 s).
        for _ in range(240):
            try:
                self.wfile.write(b":ok\n\n")
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.5)


class Server(socketserver.ThreadingMixIn, HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


server = Server(("127.0.0.1", PORT), Handler)
if CERT:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(CERT, KEY)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
server.serve_forever()
