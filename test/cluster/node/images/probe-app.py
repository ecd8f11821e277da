"""A stand-in application for the real-node tests: it answers the LangGraph server's GET /ok on
port 8000, and reports whether the connection strings the agent rendered open their stores
(GET /stores) and whether this pod can open a TCP connection to a host and port (GET /connect)."""
import json
import os
import socket
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


def check_postgres(uri):
    import psycopg2

    with psycopg2.connect(uri, connect_timeout=5) as conn, conn.cursor() as cur:
        cur.execute("SHOW max_connections")
        return {"ok": True, "max_connections": int(cur.fetchone()[0])}


def check_redis(uri):
    import redis

    client = redis.Redis.from_url(uri, socket_timeout=5, socket_connect_timeout=5)
    return {"ok": bool(client.ping())}


def attempt(check, uri):
    if not uri:
        return {"ok": False, "error": "not set"}
    try:
        return check(uri)
    except Exception as error:  # noqa: BLE001 - the test reads the failure's type
        return {"ok": False, "error": type(error).__name__}


class Handler(BaseHTTPRequestHandler):
    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802 - http.server's name
        url = urlparse(self.path)
        if url.path == "/ok":
            return self.answer(200, {"ok": True})
        if url.path == "/stores":
            return self.answer(200, {
                "DATABASE_URI": attempt(check_postgres, os.environ.get("DATABASE_URI")),
                "POSTGRES_URI": attempt(check_postgres, os.environ.get("POSTGRES_URI")),
                "REDIS_URI": attempt(check_redis, os.environ.get("REDIS_URI")),
            })
        if url.path == "/env":
            names = parse_qs(url.query).get("name", [])
            return self.answer(200, {name: os.environ.get(name) for name in names})
        if url.path == "/connect":
            query = parse_qs(url.query)
            host, port = query["host"][0], int(query["port"][0])
            try:
                with socket.create_connection((host, port), timeout=3):
                    return self.answer(200, {"connected": True})
            except OSError as error:
                return self.answer(200, {"connected": False, "error": type(error).__name__})
        return self.answer(404, {"error": "not found"})

    def log_message(self, format, *args):  # noqa: A002 - the base class's signature
        sys.stderr.write("probe-app: " + (format % args) + "\n")


if __name__ == "__main__":
    print("probe-app: listening on :8000", file=sys.stderr, flush=True)
    ThreadingHTTPServer(("", 8000), Handler).serve_forever()
