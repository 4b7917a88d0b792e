import type {
  ChannelName,
  EgressAttemptEndMessage,
  EgressAttemptMessage,
  EgressRetryMessage,
  EgressRetrySkippedMessage,
  IngressClientClosedMessage,
  IngressEndMessage,
  IngressExpireMessage,
  IngressInvalidHeaderMessage,
  IngressLateWriteMessage,
  IngressStartMessage,
  LlmAttemptMessage,
  SliceEndMessage,
  SliceStartMessage,
} from '@hourglass/core'

/** The message each channel this package listens to carries (shapes owned by core's `channels.ts`). */
export interface MessageByChannel {
  'hourglass:ingress:start': IngressStartMessage
  'hourglass:ingress:invalid-header': IngressInvalidHeaderMessage
  'hourglass:ingress:expire': IngressExpireMessage
  'hourglass:ingress:client-closed': IngressClientClosedMessage
  'hourglass:ingress:late-write': IngressLateWriteMessage
  'hourglass:ingress:end': IngressEndMessage
  'hourglass:slice:start': SliceStartMessage
  'hourglass:slice:end': SliceEndMessage
  'hourglass:egress:attempt': EgressAttemptMessage
  'hourglass:egress:attempt-end': EgressAttemptEndMessage
  'hourglass:egress:retry': EgressRetryMessage
  'hourglass:egress:retry-skipped': EgressRetrySkippedMessage
  'hourglass:llm:attempt': LlmAttemptMessage
}

export type ObservedChannel = keyof MessageByChannel & ChannelName

/** One subscriber per channel; tracing and metrics each provide a set. */
export type Handlers = { [K in ObservedChannel]?: (message: MessageByChannel[K]) => void }

/** A number fit for an attribute: finite, rounded to 0.1 ms; undefined otherwise. */
export function ms(value: number | undefined): number | undefined {
  if (value === undefined || !Number.isFinite(value)) return undefined
  return Math.round(value * 10) / 10
}

/** Drop undefined values: attribute setters reject them under exactOptionalPropertyTypes. */
export function defined(
  attributes: Record<string, string | number | boolean | undefined>,
): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {}
  for (const [key, value] of Object.entries(attributes)) {
    if (value !== undefined) out[key] = value
  }
  return out
}

/** A low-cardinality error class for `error.type`: the stable code, else the class name. */
export function errorType(error: unknown): string {
  if (typeof error === 'object' && error !== null) {
    const code = (error as { code?: unknown }).code
    if (typeof code === 'string' && code !== '') return code
    const name = (error as { name?: unknown }).name
    if (typeof name === 'string' && name !== '') return name
  }
  return 'Error'
}
