#!/usr/bin/env python3
"""A real OTLP trace receiver for planwave's tests.

Listens on 127.0.0.1 (OTLP/HTTP protobuf at POST /v1/traces, and OTLP/gRPC when --grpc is
given), decodes every export request with the official `opentelemetry-proto` package, and
appends each span as one JSON line to OUT (ids in hex, attributes as plain values) before it
answers, so once the exporting program has exited every span it sent is in the file.

First stdout line: {"http": PORT, "grpc": PORT or null}. Runs until killed.
"""

import argparse
import gzip
import json
import sys
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

LOCK = threading.Lock()


def any_value(v):
    kind = v.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    if kind == "bytes_value":
        return v.bytes_value.hex()
    return getattr(v, kind)


def attrs(kvs):
    return {kv.key: any_value(kv.value) for kv in kvs}


def span_json(resource, scope, s):
    return {
        "trace_id": s.trace_id.hex(),
        "span_id": s.span_id.hex(),
        "parent_span_id": s.parent_span_id.hex(),
        "name": s.name,
        "kind": trace_pb2.Span.SpanKind.Name(s.kind),
        "start_ns": s.start_time_unix_nano,
        "end_ns": s.end_time_unix_nano,
        "status": {
            "code": trace_pb2.Status.StatusCode.Name(s.status.code),
            "message": s.status.message,
        },
        "attributes": attrs(s.attributes),
        "events": [{"name": e.name, "attributes": attrs(e.attributes)} for e in s.events],
        "links": [
            {
                "trace_id": l.trace_id.hex(),
                "span_id": l.span_id.hex(),
                "attributes": attrs(l.attributes),
            }
            for l in s.links
        ],
        "resource": resource,
        "scope": scope,
    }


def record(out, req, transport):
    lines = []
    for rs in req.resource_spans:
        resource = attrs(rs.resource.attributes)
        for ss in rs.scope_spans:
            for s in ss.spans:
                j = span_json(resource, ss.scope.name, s)
                j["transport"] = transport
                lines.append(json.dumps(j))
    with LOCK, open(out, "a", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")
        f.flush()


def http_handler(out):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            req = trace_service_pb2.ExportTraceServiceRequest()
            try:
                req.ParseFromString(body)
            except Exception as e:  # a bad body is the client's bug: say so
                self.send_error(400, str(e))
                return
            record(out, req, "http")
            reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    return Handler


def start_grpc(out):
    import grpc
    from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

    class Service(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request, context):
            record(out, request, "grpc")
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, port


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", help="file that receives one JSON line per span")
    ap.add_argument("--grpc", action="store_true", help="also serve OTLP/gRPC")
    a = ap.parse_args()
    open(a.out, "a").close()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), http_handler(a.out))
    grpc_server, grpc_port = start_grpc(a.out) if a.grpc else (None, None)
    print(json.dumps({"http": httpd.server_address[1], "grpc": grpc_port}), flush=True)
    try:
        httpd.serve_forever()
    finally:
        if grpc_server is not None:
            grpc_server.stop(0)


if __name__ == "__main__":
    sys.exit(main())
