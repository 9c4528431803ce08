"""A minimal OTLP/HTTP trace receiver for the tests: decodes each POST to
/v1/traces with the `opentelemetry-proto` package and appends it, as JSON,
one line per request, to OUT, and each body's size in bytes, one line per
request, to OUT.bytes. Listens on 127.0.0.1 on a free port, which it
writes to PORT_FILE once it is ready. With MAX_BODY, a larger body is
refused with 413, as a collector's `max_request_body_size` refuses it.

usage: python3 receiver.py PORT_FILE OUT [MAX_BODY]
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2

port_file, out = sys.argv[1], sys.argv[2]
max_body = int(sys.argv[3]) if len(sys.argv) > 3 else None


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("content-length", 0))
        if max_body is not None and length > max_body:
            self.send_response(413)
            self.send_header("connection", "close")
            self.end_headers()
            self.wfile.write(b"request body too large")
            self.close_connection = True
            return
        body = self.rfile.read(length)
        if self.path != "/v1/traces" or self.headers.get("content-type") != "application/x-protobuf":
            self.send_response(404)
            self.end_headers()
            return
        req = trace_service_pb2.ExportTraceServiceRequest()
        try:
            req.ParseFromString(body)
        except Exception as e:  # a malformed body is the exporter's bug
            self.send_response(400)
            self.end_headers()
            self.wfile.write(str(e).encode())
            return
        doc = json_format.MessageToDict(req)
        with open(out, "a") as f:
            f.write(json.dumps(doc) + "\n")
        with open(out + ".bytes", "a") as f:
            f.write(f"{len(body)}\n")
        reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


server = HTTPServer(("127.0.0.1", 0), Handler)
with open(port_file + ".tmp", "w") as f:
    f.write(str(server.server_address[1]))
import os

os.replace(port_file + ".tmp", port_file)
server.serve_forever()
