import { cutText } from '@hourglass/core'

/**
 * The most of a string the model provider sent (the answer's `model`, its
 * id, OpenAI's `system_fingerprint` and `service_tier`) that a span
 * attribute or a metric attribute keeps: the longest a real one runs is a
 * few dozen characters (`gpt-4o-2024-08-06`, `chatcmpl-…`), and 256 is what
 * llm keeps of each stop sequence on the same span.
 */
export const MAX_PROVIDER_TEXT_LENGTH = 256

/**
 * `value` cut to `MAX_PROVIDER_TEXT_LENGTH` characters by core's `cutText`
 * (`…` last, never between the halves of a surrogate pair). The provider's
 * answer is not ours to trust (a compatible server, a proxy, a broken
 * deployment), and OpenTelemetry bounds neither: the SDK's attribute value
 * limit is unset by default, so a megabyte `model` went whole onto every
 * chat span — an OTLP export batch past a collector's 4 MiB receive limit is
 * refused whole, the request's other spans with it — and onto a metric
 * series held until the process ends.
 */
export function providerText(value: string | undefined): string | undefined {
  return value === undefined ? undefined : cutText(value, MAX_PROVIDER_TEXT_LENGTH)
}
