"""A small OTLP/HTTP trace receiver, for the example's check: what an OpenTelemetry Collector
does with spans, minus everything but writing them down.

    python3 otlp_receiver.py SPANS_FILE

Listens on a free loopback port and prints one JSON line, {"event":"ready","port":N}, once it
does. Each POST to /v1/traces (protobuf ExportTraceServiceRequest, gzip or not, as
OTLP/HTTP sends it) is decoded with the opentelemetry-proto package and every span in it is
appended to SPANS_FILE as one JSON object per line:

    {"service": ..., "name": ..., "trace_id": hex, "span_id": hex, "parent_span_id": hex or "",
     "kind": ..., "start_ns": ..., "end_ns": ..., "status": "UNSET"|"OK"|"ERROR", "attributes": {...},
     "events": [{"name": ..., "attributes": {...}}], "links": [{"trace_id":..., "span_id":...}]}

SIGTERM or SIGINT stops it (exit 0).
"""

import gzip
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2


def value_of(any_value):
    """An OTLP AnyValue as a plain Python value."""
    kind = any_value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [value_of(item) for item in any_value.array_value.values]
    if kind == "kvlist_value":
        return {item.key: value_of(item.value) for item in any_value.kvlist_value.values}
    if kind == "bytes_value":
        return any_value.bytes_value.hex()
    return getattr(any_value, kind)


def attributes_of(key_values):
    return {item.key: value_of(item.value) for item in key_values}


def span_record(service, span):
    return {
        "service": service,
        "name": span.name,
        "trace_id": span.trace_id.hex(),
        "span_id": span.span_id.hex(),
        "parent_span_id": span.parent_span_id.hex(),
        "kind": trace_pb2.Span.SpanKind.Name(span.kind),
        "start_ns": span.start_time_unix_nano,
        "end_ns": span.end_time_unix_nano,
        "status": trace_pb2.Status.StatusCode.Name(span.status.code).replace("STATUS_CODE_", ""),
        "attributes": attributes_of(span.attributes),
        "events": [{"name": event.name, "attributes": attributes_of(event.attributes)} for event in span.events],
        "links": [{"trace_id": link.trace_id.hex(), "span_id": link.span_id.hex()} for link in span.links],
    }


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        sys.exit(2)
    spans_path = sys.argv[1]
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            if self.path != "/v1/traces":
                self.send_error(404, "only /v1/traces is received here")
                return
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            request = trace_service_pb2.ExportTraceServiceRequest()
            try:
                request.ParseFromString(body)
            except Exception as error:  # a malformed request is the sender's fault: say so
                self.send_error(400, f"not an ExportTraceServiceRequest: {error}")
                return
            lines = []
            for resource_spans in request.resource_spans:
                service = attributes_of(resource_spans.resource.attributes).get("service.name", "")
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        lines.append(json.dumps(span_record(service, span)))
            with lock, open(spans_path, "a", encoding="utf-8") as spans:
                for line in lines:
                    spans.write(line + "\n")
            reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, format, *args):  # quiet: the check prints what matters
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    print(json.dumps({"event": "ready", "port": server.server_address[1]}, separators=(",", ":")), flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
