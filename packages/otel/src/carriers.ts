import { DEADLINE_HEADER } from '@hourglass/core'
import { diag, type TextMapGetter, type TextMapSetter } from '@opentelemetry/api'

/** The part of grpc-js's `Metadata` a propagator needs (structural: grpc-js is not a dependency). */
export interface MetadataCarrier {
  get(key: string): ReadonlyArray<string | Uint8Array>
  set(key: string, value: string): void
  getMap(): Record<string, unknown>
}

/**
 * The deadline travels in the packages' own form (`grpc-timeout` and the
 * header the client interceptor writes, the expiry stored with a job): a
 * `DeadlinePropagator` in the global propagator must not add a second copy.
 */
const carriedByHourglass = (key: string) => key.toLowerCase() === DEADLINE_HEADER

/** Reads a `traceparent` (and any other propagator field) from gRPC metadata; binary values are skipped. */
export const metadataGetter: TextMapGetter<MetadataCarrier> = {
  keys: (carrier) => Object.keys(carrier.getMap()),
  get(carrier, key) {
    const values = carrier.get(key).filter((v): v is string => typeof v === 'string')
    if (values.length === 0) return undefined
    return values.length === 1 ? values[0] : values
  },
}

/**
 * Writes propagator fields into the copy of the metadata about to be sent.
 * A field grpc-js refuses (`Metadata.set` throws for a key or value it
 * cannot send: Jaeger's `uberctx-<baggage key>` with a space in the key) is
 * skipped, the others still written: thrown, it cut the propagator short and
 * left the call's span started and never ended.
 */
export const metadataSetter: TextMapSetter<MetadataCarrier> = {
  set(carrier, key, value) {
    if (carriedByHourglass(key)) return
    try {
      carrier.set(key, value)
    } catch (error) {
      diag.warn(
        `@hourglass/otel: propagator field ${JSON.stringify(key)} not sent in gRPC metadata`,
        error,
      )
    }
  },
}

/** Writes propagator fields into the record stored with a job. */
export const recordSetter: TextMapSetter<Record<string, string>> = {
  set(carrier, key, value) {
    if (!carriedByHourglass(key)) carrier[key] = value
  },
}
