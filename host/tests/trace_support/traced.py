"""What the traced agents share: a loopback stub of the OpenAI API on a
port of its own, a tracer provider that keeps the finished spans in memory,
and, at the end, the spans written as one OTLP protobuf
ExportTraceServiceRequest with the stub's log as JSON."""

import json
import threading
from http.server import ThreadingHTTPServer


def serve(handler):
    """The stub server for `handler`, answering on a thread of its own."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def send_json(handler, value):
    """Answer the request `handler` serves with `value` as JSON."""
    data = json.dumps(value).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def tracing():
    """The global tracer provider, its spans kept in memory: (trace, provider, exporter)."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return trace, provider, exporter


def finish(provider, exporter, server, trace_out, stub_log, answered):
    """Write the spans to `trace_out` and what the stub answered to `stub_log`, and stop the stub."""
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    provider.force_flush()
    with open(trace_out, "wb") as f:
        f.write(encode_spans(exporter.get_finished_spans()).SerializeToString())
    with open(stub_log, "w") as f:
        json.dump(answered, f)
    server.shutdown()
