// Exports two spans with OpenTelemetry's own JavaScript exporter for OTLP/HTTP JSON
// (@opentelemetry/exporter-trace-otlp-http), configured only by the environment as a
// user configures it: OTEL_EXPORTER_OTLP_ENDPOINT (the API's base; the exporter adds
// /v1/traces) and OTEL_EXPORTER_OTLP_HEADERS (the key). One span names the session in
// SESSION_ID, the other none. It prints the export's result as one line of JSON.
const { TracerProvider, SimpleSpanProcessor, InMemorySpanExporter } = require("@opentelemetry/sdk-trace");
const { resourceFromAttributes } = require("@opentelemetry/resources");
const { OTLPTraceExporter } = require("@opentelemetry/exporter-trace-otlp-http");

const memory = new InMemorySpanExporter();
const provider = new TracerProvider({
  resource: resourceFromAttributes({ "service.name": "shopper-js" }),
  spanProcessors: [new SimpleSpanProcessor({ exporter: memory })],
});
const tracer = provider.getTracer("agent");
const span = tracer.startSpan("checkout 4111 1111 1111 1111", {
  attributes: {
    "workflow.session.id": process.env.SESSION_ID,
    "url.full": "https://shop.example/pay?card=4111111111111111",
    steps: ["search", "pay 4111-1111-1111-1111"],
    attempt: 2,
    paid: true,
  },
});
span.end();
tracer.startSpan("no session").end();

const exporter = new OTLPTraceExporter();
exporter.export(memory.getFinishedSpans(), (result) => {
  console.log(JSON.stringify({ code: result.code, error: result.error ? String(result.error.message || result.error) : "" }));
  exporter.shutdown().then(() => provider.shutdown());
});
