// Type-only: these bring each publisher's `ChannelGroups` entry (its channels
// and their message types) into this build. Nothing is loaded at run time:
// the channels are found through core's registry (`onChannels`).
import type {} from '@hourglass/bullmq'
import { type ChannelGroups, type ChannelMessage, errorCode } from '@hourglass/core'
import type {} from '@hourglass/express'
import type {} from '@hourglass/fetch'
import type {} from '@hourglass/grpc'
import type { DialectName } from '@hourglass/llm'

/** The channel groups this package listens to, as their publishers declare them. */
export type ObservedGroups = Pick<
  ChannelGroups,
  'core' | 'express' | 'fetch' | 'llm' | 'grpc' | 'bullmq'
>

/**
 * One subscriber per channel, by group and by the publisher's key for it
 * (`express.start`, `fetch.attemptEnd`): a channel renamed by its package is a
 * type error here, and no wire name is spelled in this package.
 */
export type Handlers = {
  [G in keyof ObservedGroups]?: {
    [K in keyof ObservedGroups[G]]?: (message: ChannelMessage<ObservedGroups[G][K]>) => void
  }
}

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

/**
 * A low-cardinality error class for `error.type`: core's one vocabulary
 * (`errorCode`: the stable code, else the error's own code, else its name).
 */
export const errorType = errorCode

/**
 * The methods the HTTP semantic conventions know (RFC 9110, PATCH, QUERY):
 * `http.request.method` takes one of these or `_OTHER`.
 */
const KNOWN_METHODS: ReadonlySet<string> = new Set([
  'CONNECT',
  'DELETE',
  'GET',
  'HEAD',
  'OPTIONS',
  'PATCH',
  'POST',
  'PUT',
  'QUERY',
  'TRACE',
])

/**
 * `http.request.method` as the HTTP conventions require it: a known method,
 * else `_OTHER`. fetch sends any token as a method, and a proxy that passes
 * its caller's on (an HTTP/2 `:method` is any token) made every distinct one
 * a new series of the egress histogram, and a new span name.
 */
export function httpMethod(method: string): string {
  return KNOWN_METHODS.has(method) ? method : '_OTHER'
}

/**
 * `hourglass.deadline.retry.reason` for a model retry: its kind, else its
 * error's class, else its HTTP status (`network` for status 0, see
 * `modelStatusType`). `hourglass:llm:attempt` declares all
 * three optional, so a message may name none: then undefined, and the
 * attribute is left out, as OpenTelemetry users expect of a value not known —
 * never the string "undefined", which would count as a reason of its own.
 */
export function modelRetryReason(m: {
  errorKind?: string | undefined
  errorClass?: string | undefined
  status?: number | undefined
}): string | undefined {
  return m.errorKind ?? m.errorClass ?? modelStatusType(m.status)
}

/**
 * `hourglass.deadline.retry.reason` of a model attempt not tried again on
 * its model (why set). An attempt llm started as a retry and never sent
 * (`sent: false`: fetch refused it at once, its deadline all but over or its
 * caller gone) is that retry given up before it left, as llm's
 * `retry-skipped` says of one given up during its wait: its reason is the
 * failure the retry was for (`retryReason`), not the never-sent attempt's
 * own `deadline_exceeded` or `aborted`, or the same retry counted under
 * another reason by a few ms of clock. Any other attempt: its own failure.
 */
export function modelSkippedReason(m: {
  sent?: false | undefined
  retryReason?: string | undefined
  errorKind?: string | undefined
  errorClass?: string | undefined
  status?: number | undefined
}): string | undefined {
  if (retryNeverSent(m)) return m.retryReason
  return modelRetryReason(m)
}

/** A model attempt made as a retry (`retryReason`, the failure before it) that llm never sent. */
export function retryNeverSent(m: {
  sent?: false | undefined
  retryReason?: string | undefined
}): m is { sent: false; retryReason: string } {
  return m.sent === false && m.retryReason !== undefined
}

/**
 * A model attempt's HTTP status as a failure class: the status as text, but
 * `network` for 0, which llm reports for a failure that got no HTTP answer
 * (DNS, a refused or cut connection) and names `network` itself
 * (`ErrorKind`); "0" read as a status no server sent.
 */
function modelStatusType(status: number | undefined): string | undefined {
  if (status === undefined) return undefined
  return status === 0 ? 'network' : String(status)
}

/**
 * A model attempt's `http.response.status_code`: left out for llm's status 0
 * (no HTTP answer came, as the egress span of the same send says by leaving
 * it out) and, as always, when llm names none.
 */
export function modelHttpStatus(status: number | undefined): number | undefined {
  return status === 0 ? undefined : status
}

/**
 * A model attempt llm returned as its answer (`success`) although that
 * answer ended in an error: finish reason `error` (DeepSeek's
 * `insufficient_system_resource`, Gemini's `MALFORMED_FUNCTION_CALL`) on a
 * stream that had delivered tokens first, so llm could neither retry it
 * nor hand it to a fallback. The same answer with nothing delivered is a
 * failed attempt (`server_error`), and a stream broken after its first
 * token by an error frame is one too (`why = after-first-byte`): this one
 * is reported as that twin, or it was an UNSET span and a success in
 * `calls.succeeded` while the gateway answered it as `stream_interrupted`.
 */
export function endedInError(m: { decision: string; finishReason?: string | undefined }): boolean {
  return m.decision === 'success' && m.finishReason === 'error'
}

/** `error.type` and retry reason of an answer that ended in an error: llm's kind for the same answer with no token. */
export const ENDED_IN_ERROR_TYPE = 'server_error'
/** Why it was not tried again: llm's `why` for a stream broken after its first token. */
export const ENDED_IN_ERROR_WHY = 'after-first-byte'

/**
 * A model attempt's `errorKind` as the chat span's `error.type`. llm's kinds
 * (`rate_limited`, `overloaded`, `aborted`, …) are its own low-cardinality
 * vocabulary and kept; but the deadline ending the attempt is the one failure
 * every other Hourglass span names too, and they all say `DEADLINE_EXCEEDED`
 * (core's code): with llm's `deadline_exceeded` beside it, a query for
 * `error.type = DEADLINE_EXCEEDED` missed every model attempt the deadline ended.
 */
export function modelErrorType(errorKind: string | undefined): string | undefined {
  return errorKind === 'deadline_exceeded' ? 'DEADLINE_EXCEEDED' : errorKind
}

/**
 * A streamed model attempt's time to its first token, in seconds (the
 * conventions' unit), for `gen_ai.response.time_to_first_chunk` and its
 * metric; undefined for a whole answer, a stream whose first token never
 * came, or a value that is no duration.
 */
export function firstChunkSeconds(m: {
  stream?: true | undefined
  firstTokenMs?: number | undefined
}): number | undefined {
  const ms = m.firstTokenMs
  if (m.stream !== true || ms === undefined || !Number.isFinite(ms)) return undefined
  return Math.max(0, ms) / 1000
}

/**
 * A model attempt's `error.type`, on its chat span and its duration metric
 * alike; undefined for a success. A success whose answer ended in an error
 * failed all the same (see `endedInError`).
 */
export function modelAttemptErrorType(m: {
  decision: string
  finishReason?: string | undefined
  errorKind?: string | undefined
  errorClass?: string | undefined
  status?: number | undefined
  stoppedBy?: string | undefined
  deadline?: { readonly done: boolean; readonly reason: unknown } | undefined
}): string | undefined {
  if (endedInError(m)) return ENDED_IN_ERROR_TYPE
  if (m.decision === 'success' || modelStoppedByCaller(m)) return undefined
  return (
    cancelledBy(m) ??
    modelErrorType(m.errorKind) ??
    m.errorClass ??
    modelStatusType(m.status) ??
    'error'
  )
}

/**
 * The code of the cancel that stopped a model attempt (core's `errorCode` of
 * its deadline's reason: `CLIENT_CLOSED` when the client left, a shutdown's
 * own), for llm's `aborted` when the caller did not stop it: its deadline
 * was cancelled. Its egress span, and instrumentation-undici's beside it,
 * say that code (fetch reads the deadline's reason); the chat span and the
 * duration metric said `aborted`, as for a caller's own abort, and a query
 * for `error.type = CLIENT_CLOSED` missed every model attempt a client's
 * leaving cut — as `DEADLINE_EXCEEDED` once missed the expired ones.
 */
function cancelledBy(m: {
  errorKind?: string | undefined
  stoppedBy?: string | undefined
  deadline?: { readonly done: boolean; readonly reason: unknown } | undefined
}): string | undefined {
  if (m.errorKind !== 'aborted' || m.stoppedBy === 'caller') return undefined
  const deadline = m.deadline
  if (deadline?.done !== true || deadline.reason === undefined) return undefined
  return errorCode(deadline.reason)
}

/**
 * An outbound attempt whose answer came and whose caller then stopped reading
 * its body — `res.body.cancel()` once the status and headers told it enough,
 * or after the part it wanted, with or without a reason of its own; its
 * signal aborted while it read. fetch ends such an attempt with the stop's
 * code (`AbortError`, the reason's), as it ends one the network cut, and
 * says who stopped it (`stoppedBy: 'caller'`): the call did not fail, and the
 * HTTP conventions make a client's span ERROR for a 4xx or 5xx or a request that failed, not
 * for an answer its reader chose to leave. A stop before any answer (phase
 * `headers`, `connect`…) is a request that failed, and a body the deadline
 * (`DEADLINE_EXCEEDED`), a client that left (`CLIENT_CLOSED`) or the network
 * cut is a failure of its own code — also when a signal that follows the
 * deadline stopped it first (llm's, reading a model attempt's stream under
 * a slice's signal): fetch tells the deadline's end from the caller's stop
 * by where it came from, not by its code (a caller's own abort with a
 * `ClientClosedError` is its choice, as llm's chat span says).
 */
export function stoppedByCaller(m: {
  phase?: string | undefined
  statusCode?: number | undefined
  stoppedBy?: string | undefined
}): boolean {
  return m.phase === 'body' && m.statusCode !== undefined && m.stoppedBy === 'caller'
}

/**
 * A model attempt whose answer had come (an HTTP status: a stream's 200, a
 * whole answer being read) and whose caller then stopped it — the consumer
 * left its `for await`, called the stream's `cancel`, or aborted the call's
 * signal (llm's `stoppedBy: 'caller'`) —: the call did not fail, as an
 * egress span's answer its caller stopped reading (`stoppedByCaller`): no
 * `error.type`, status UNSET, no skipped retry. A 4xx or 5xx answer is an
 * error all the same, as on the egress span (the client-span rule). llm's record keeps its
 * `decision: 'fail'`, `errorKind: 'aborted'`. A stop before any answer (no
 * status) is a request that failed, as on the egress span; the deadline
 * (its expiry, or a cancel: the client left) is never a caller's stop.
 */
export function modelStoppedByCaller(m: {
  stoppedBy?: string | undefined
  status?: number | undefined
}): boolean {
  return m.stoppedBy === 'caller' && m.status !== undefined && m.status > 0 && m.status < 400
}

/**
 * The GenAI conventions' well-known `gen_ai.provider.name` values (the
 * registry's members, as semconv 1.45's incubating
 * `GEN_AI_PROVIDER_NAME_VALUE_*` and the GenAI conventions repository list
 * them). An adapter named one of these is that provider, whatever wire it
 * speaks: `groq` or `x_ai` on OpenAI's, `deepseek` on its Anthropic-compatible
 * endpoint.
 */
const WELL_KNOWN_PROVIDERS: ReadonlySet<string> = new Set([
  'openai',
  'gcp.gen_ai',
  'gcp.vertex_ai',
  'gcp.gemini',
  'anthropic',
  'cohere',
  'azure.ai.inference',
  'azure.ai.openai',
  'ibm.watsonx.ai',
  'aws.bedrock',
  'perplexity',
  'x_ai',
  'deepseek',
  'groq',
  'mistral_ai',
  'moonshot_ai',
])

/**
 * The provider each llm dialect speaks to. The conventions list no value for
 * the Chinese providers (the attribute is an open enum): each gets the
 * lower-case name of the platform its API is served from, the host llm's
 * docs give for it — DashScope (Alibaba Cloud Model Studio, the value the
 * qwen-agent OpenTelemetry instrumentation reports for it), Qianfan (Baidu
 * AI Cloud), Volcano Engine (Ark: `volces.com`) —, as `gcp.gemini` is named
 * after its endpoint and not its models. A record of every `DialectName`,
 * so a dialect llm adds is a type error here until it is placed.
 */
const DIALECT_PROVIDERS: Readonly<Record<DialectName, string>> = {
  openai: 'openai',
  deepseek: 'deepseek',
  qwen: 'dashscope',
  ernie: 'qianfan',
  doubao: 'volcengine',
  anthropic: 'anthropic',
  gemini: 'gcp.gemini',
}

function dialectProvider(name: string | undefined): string | undefined {
  return name !== undefined && Object.hasOwn(DIALECT_PROVIDERS, name)
    ? DIALECT_PROVIDERS[name as DialectName]
    : undefined
}

/**
 * A model attempt's (or an admission decision's, a cooldown's)
 * `gen_ai.provider.name`. The adapter's name is the caller's choice — the
 * gateway names each adapter after its config key (`oa`, `an`) — and GenAI
 * dashboards group by the conventions' values, so the name counts only when
 * it is one of them (`WELL_KNOWN_PROVIDERS`); the adapter's name itself is
 * `hourglass.llm.provider`. Else the wire the attempt spoke (`dialect`),
 * when it identifies the provider (Anthropic's, Gemini's, DeepSeek's and
 * the Chinese providers' dialects: `DIALECT_PROVIDERS`); else the name when
 * it is llm's own name for one (an adapter called `gemini` on Gemini's
 * OpenAI-compatible endpoint, or a message without a dialect from an
 * adapter that kept llm's default name); else, on OpenAI's wire, `openai`:
 * the conventions' "best knowledge" for an OpenAI-compatible endpoint,
 * whose `server.address` says which host it was (and the spans then carry
 * `openai.response.*`, as that value announces). An attempt without a
 * dialect and any other name (an older llm's) keeps the name: the chat span
 * requires the attribute, and nothing better is known.
 */
export function genAiProvider(m: { provider: string; dialect?: string | undefined }): string {
  return knownGenAiProvider(m) ?? m.provider
}

/**
 * `genAiProvider`, but nothing when only the adapter's own name is known:
 * for llm's admission and cooldown events, whose messages carry no dialect.
 * Given the name there, the gateway's config key (`oa`) still went out as
 * `gen_ai.provider.name` beside the chat span's `openai`, and a trace query
 * for the provider missed the events that explain its attempts;
 * `hourglass.llm.provider` names the adapter on them.
 */
export function knownGenAiProvider(m: {
  provider: string
  dialect?: string | undefined
}): string | undefined {
  if (WELL_KNOWN_PROVIDERS.has(m.provider)) return m.provider
  const byDialect = m.dialect === 'openai' ? undefined : dialectProvider(m.dialect)
  return byDialect ?? dialectProvider(m.provider) ?? dialectProvider(m.dialect)
}

/**
 * The GenAI conventions' `gen_ai.operation.name` of a model attempt: `chat`,
 * but `generate_content` for Gemini's own API (`:generateContent`), the
 * conventions' own example of that value ("if one of them applies, that
 * value MUST be used"), as the google-genai instrumentation reports it
 * (Vertex AI's still says `chat`). Chosen by the wire format the attempt
 * spoke (`dialect`), not by the adapter's name, which a caller may set:
 * Gemini's OpenAI-compatible endpoint is `chat`. An attempt never sent has
 * no dialect: its adapter's name stands in.
 */
export function genAiOperation(m: { dialect?: string | undefined; provider: string }): string {
  return (m.dialect ?? m.provider) === 'gemini' ? 'generate_content' : 'chat'
}

/**
 * The dialects that speak OpenAI's wire format (llm's `openAICompatible`),
 * whose answers' `system_fingerprint` and `service_tier` the
 * `openai.response.*` attributes name. Anthropic's answer has a
 * `usage.service_tier` too (`standard`, `priority`), which llm reports as the
 * same `serviceTier`: under an `openai.` name it read as OpenAI's tier on an
 * Anthropic span. A record of every `DialectName`, so a dialect llm adds is a
 * type error here until it is placed.
 */
const OPENAI_WIRE: Readonly<Record<DialectName, boolean>> = {
  openai: true,
  deepseek: true,
  qwen: true,
  ernie: true,
  doubao: true,
  anthropic: false,
  gemini: false,
}

/**
 * Whether a model attempt spoke an OpenAI-compatible dialect: by its
 * `dialect`, else (an attempt never sent has none) its adapter's name, as
 * `genAiOperation` reads it. A name llm does not know is not.
 */
export function spokeOpenAI(m: { dialect?: string | undefined; provider: string }): boolean {
  const name = m.dialect ?? m.provider
  return Object.hasOwn(OPENAI_WIRE, name) && OPENAI_WIRE[name as DialectName]
}
