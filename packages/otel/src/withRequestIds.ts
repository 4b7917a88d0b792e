import { currentRequestId } from '@hourglass/core'
import type { SpanOptions, Tracer } from '@opentelemetry/api'
import { ATTR_REQUEST_ID } from './attributes.js'

/**
 * `tracer`, with every span it starts carrying the request id of the work in
 * progress (`hourglass.request_id`, when a server set one with core's
 * `runWithRequestId`). Handlers start their spans synchronously in the
 * publisher's async context, so the id read here is the request's.
 * `onRequestId`, when given, hears each id so read, in that same context
 * (the request's server span may not have had it yet: see traceHandlers).
 */
export function withRequestIds(tracer: Tracer, onRequestId?: (id: string) => void): Tracer {
  const startSpan: Tracer['startSpan'] = (name, options, context) => {
    const id = currentRequestId()
    if (id === undefined) return tracer.startSpan(name, options, context)
    onRequestId?.(id)
    const tagged: SpanOptions = {
      ...options,
      attributes: { ...options?.attributes, [ATTR_REQUEST_ID]: id },
    }
    return tracer.startSpan(name, tagged, context)
  }
  return {
    startSpan,
    startActiveSpan: tracer.startActiveSpan.bind(tracer) as Tracer['startActiveSpan'],
  }
}
