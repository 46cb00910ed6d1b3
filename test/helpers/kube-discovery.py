#!/usr/bin/env python3
# kube-discovery.py — the smallest Kubernetes API discovery kubectl needs for client-side dry runs (pods in v1).
# Usage: kube-discovery.py PORTFILE — listens on 127.0.0.1 (port 0), writes the port, answers discovery only.
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DOCS = {
    "/api": {"kind": "APIVersions", "versions": ["v1"],
             "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]},
    "/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": []},
    "/api/v1": {"kind": "APIResourceList", "groupVersion": "v1", "resources": [
        {"name": "pods", "singularName": "pod", "namespaced": True, "kind": "Pod",
         "verbs": ["create", "delete", "get", "list"], "shortNames": ["po"]}]},
    "/version": {"major": "1", "minor": "32", "gitVersion": "v1.32.0"},
}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        doc = DOCS.get(self.path.split("?", 1)[0])
        body = json.dumps(doc if doc is not None else {"kind": "Status", "code": 404}).encode()
        self.send_response(200 if doc is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(sys.argv[1], "w") as f:
    f.write(str(server.server_address[1]))
server.serve_forever()
