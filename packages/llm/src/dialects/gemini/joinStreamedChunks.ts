import { asArray, asRecord, get, getRecord } from '../safeJson.js'

/**
 * `streamGenerateContent` without `alt=sse` answers with a JSON array of
 * `GenerateContentResponse` chunks (https://ai.google.dev/api/generate-content
 * #method:-models.streamgeneratecontent) — what a stream request gets through
 * a proxy that drops the query, read as a whole answer. The chunks as one
 * response: the first candidate's parts in order, adjacent text of one kind
 * (answer or thought) joined as a stream's deltas are, unless the later part
 * carries a signature of its own; the last finish reason, usage and feedback
 * said; the first id and model version; every chunk's `logprobsResult`
 * steps in order. No chunk with a candidate: the first
 * chunk, as it is (a blocked prompt's `promptFeedback`).
 */
export function joinStreamedChunks(chunks: readonly unknown[]): unknown {
  const parts: Record<string, unknown>[] = []
  // Each chunk's `logprobsResult` holds its own tokens': joined, step by step.
  let logprobs: { chosenCandidates: unknown[]; topCandidates: unknown[] } | undefined
  let candidate: Record<string, unknown> | undefined
  const joined: Record<string, unknown> = {}
  for (const chunk of chunks) {
    for (const key of ['responseId', 'modelVersion'] as const) {
      if (joined[key] === undefined && get(chunk, key) !== undefined) joined[key] = get(chunk, key)
    }
    for (const key of ['usageMetadata', 'promptFeedback'] as const) {
      if (get(chunk, key) !== undefined) joined[key] = get(chunk, key)
    }
    const first = asRecord(asArray(get(chunk, 'candidates'))[0])
    if (first === undefined) continue
    candidate = { ...candidate, ...first }
    const result = getRecord(first, 'logprobsResult')
    if (result !== undefined) {
      logprobs ??= { chosenCandidates: [], topCandidates: [] }
      for (const key of ['chosenCandidates', 'topCandidates'] as const) {
        for (const step of asArray(get(result, key))) logprobs[key].push(step)
      }
    }
    for (const part of asArray(get(getRecord(first, 'content'), 'parts'))) {
      const record = asRecord(part)
      if (record === undefined) continue
      const last = parts.at(-1)
      if (last !== undefined && continuesText(last, record)) {
        last['text'] = `${last['text'] as string}${record['text'] as string}`
      } else parts.push({ ...record })
    }
  }
  if (candidate === undefined) return chunks[0]
  candidate['content'] = { role: 'model', parts }
  if (logprobs !== undefined) candidate['logprobsResult'] = logprobs
  joined['candidates'] = [candidate]
  return joined
}

/** `next` is more of `last`'s text: both text alone, of one kind, `next` unsigned. */
function continuesText(last: Record<string, unknown>, next: Record<string, unknown>): boolean {
  return (
    typeof last['text'] === 'string' &&
    typeof next['text'] === 'string' &&
    next['thoughtSignature'] === undefined &&
    (last['thought'] === true) === (next['thought'] === true)
  )
}
