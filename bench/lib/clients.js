// The model-call clients compared in items 6 and 7, each called the way its
// documentation suggests, against a testkit fake provider (OpenAI dialect).
import OpenAI from 'openai'
import pRetry from 'p-retry'

export const MODEL = 'gpt-4o-mini'
export const messages = [{ role: 'user', content: 'Say hello.' }]

/** The official client, default retries (maxRetries 2) unless `options` says otherwise. */
export function openaiClient(fake, options = {}) {
  return new OpenAI({ baseURL: fake.baseURL, apiKey: 'sk-test', ...options })
}

/** One plain POST to chat completions; throws on a non-2xx status (so a retry loop sees it). */
export async function postOnce(fake, { signal, stream = false } = {}) {
  const res = await fetch(`${fake.baseURL}/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer sk-test', 'content-type': 'application/json' },
    body: JSON.stringify({ model: MODEL, messages, max_tokens: 64, stream }),
    signal,
  })
  const text = await res.text()
  if (!res.ok) throw Object.assign(new Error(`HTTP ${res.status}`), { status: res.status })
  return text
}

/** The generic loop: p-retry around the plain POST, `options` passed through. */
export function pRetryCall(fake, options = {}, attemptTimeoutMs = 0) {
  return pRetry(
    () =>
      postOnce(fake, {
        signal: attemptTimeoutMs > 0 ? AbortSignal.timeout(attemptTimeoutMs) : undefined,
      }),
    options,
  )
}
