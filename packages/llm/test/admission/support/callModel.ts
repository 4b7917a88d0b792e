import type { Deadline } from '@hourglass/core'
import type { Admission } from '../../../src/admission/Admission.js'

export interface CallOptions {
  provider: string
  url: string
  keys: string[]
  deadline: Deadline
  hasFallback?: boolean
}

/**
 * What the policy does around admission, reduced to its bones: ask for a
 * permit, send one request with the permitted key, report what came back,
 * and go round again after a 429 (admission decides whether that means a
 * wait, another key, or an immediate refusal).
 */
export async function callModel(
  admission: Admission,
  options: CallOptions,
): Promise<{ text: string; key: string | undefined; attempts: number }> {
  let attempts = 0
  for (;;) {
    const permit = await admission.acquire({
      provider: options.provider,
      keys: options.keys,
      deadline: options.deadline,
      hasFallback: options.hasFallback,
    })
    attempts++
    const res = await fetch(options.url, {
      method: 'POST',
      headers: { authorization: `Bearer ${permit.key}`, 'content-type': 'application/json' },
      body: '{}',
      signal: options.deadline.signal,
    })
    const body = await res.text()
    if (res.status === 200) {
      await permit.report({ ok: true })
      return { text: body, key: permit.key, attempts }
    }
    const retryAfter = res.headers.get('retry-after')
    await permit.report({
      ok: false,
      error: {
        kind: res.status === 429 ? 'rate_limited' : 'server_error',
        status: res.status,
        retryAfterMs: retryAfter === null ? undefined : Number(retryAfter) * 1000,
      },
    })
  }
}
