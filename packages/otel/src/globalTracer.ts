import { type Tracer, type TracerProvider, trace } from '@opentelemetry/api'

/**
 * The global tracer provider's tracer, looked up again whenever the global
 * provider is another object: `trace.disable()` (which OpenTelemetry asks
 * for before a second SDK registers, in a test suite or an in-process
 * restart) replaces the global proxy, and a tracer taken from the old one
 * kept following the SDK registered then, shut down: every later span lost.
 */
export function globalTracer(name: string, version: string): Tracer {
  let provider: TracerProvider | undefined
  let tracer: Tracer | undefined
  const current = (): Tracer => {
    const now = trace.getTracerProvider()
    if (now !== provider || tracer === undefined) {
      provider = now
      tracer = now.getTracer(name, version)
    }
    return tracer
  }
  return {
    startSpan: (spanName, options, context) => current().startSpan(spanName, options, context),
    startActiveSpan: ((...args: Parameters<Tracer['startActiveSpan']>) =>
      (current().startActiveSpan as (...a: unknown[]) => unknown)(
        ...args,
      )) as Tracer['startActiveSpan'],
  }
}
