import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, expect, it } from 'vitest'
import {
  callModel,
  isModelUnavailable,
  type ModelUnavailableError,
  openAICompatible,
  type ProviderError,
} from '../../src/index.js'

// A provider (or the proxy in front of it) that answers a redirect: the
// failure named the Location so the operator can fix the base URL — whole,
// query included. A redirect to a login page or a signed URL carries a token
// or a signature there (`?token=…`, `X-Amz-Signature=…`), and that message is
// logged (the gateway's attempt lines, the error's message, its cause):
// only `key=`, `access_token=` and URL credentials were redacted. The fix
// needs the new address, not the values in its query.

const TOKEN = 'MARKtok7c21e9'
const SIGNATURE = 'MARKsig40d8aa'
const FRAGMENT = 'MARKfrag5e3b'

const servers: { close(): void }[] = []
afterEach(() => {
  for (const s of servers.splice(0)) s.close()
})

async function redirecting(location: string): Promise<string> {
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => res.writeHead(307, { location }).end())
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  servers.push(server)
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`
}

async function failure(location: string): Promise<ProviderError> {
  const baseURL = await redirecting(location)
  const model = openAICompatible({ baseURL, apiKey: 'sk-test-0000', model: 'm' })
  const thrown = await callModel({
    models: [model],
    request: { messages: [{ role: 'user', content: 'hi' }], maxTokens: 5 },
    limits: { admission: false },
  }).catch((e: unknown) => e)
  expect(isModelUnavailable(thrown)).toBe(true)
  return (thrown as ModelUnavailableError).lastCause as ProviderError
}

it.each([
  [
    'absolute',
    `https://login.example/v2/chat?token=${TOKEN}&X-Amz-Signature=${SIGNATURE}#${FRAGMENT}`,
    'https://login.example/v2/chat?token=[redacted]&X-Amz-Signature=[redacted]',
  ],
  [
    'relative',
    `/v2/chat?sig=${SIGNATURE}&token=${TOKEN}&${SIGNATURE}#${FRAGMENT}`,
    '/v2/chat?sig=[redacted]&token=[redacted]&[redacted]',
  ],
  // A servlet container's session in the path (`;jsessionid=`), as fetch
  // cuts it from what it shows: it was named whole.
  [
    'path-parameter',
    `https://login.example/app;jsessionid=${TOKEN}/chat;v=${SIGNATURE}`,
    'https://login.example/app/chat',
  ],
  ['relative path-parameter', `/app;jsessionid=${TOKEN}/chat`, '/app/chat'],
  // A protocol-relative one's credentials (no scheme for the message's
  // scrubber to find): shown whole before.
  ['protocol-relative', `//user:${TOKEN}@login.example/v1/chat`, '//login.example/v1/chat'],
  ['backslashed', `\\\\user:${TOKEN}@login.example/v1`, '\\\\login.example/v1'],
  // A tab the URL parser drops: `/\t/` is `//` to it.
  ['tabbed', `/\t/user:${TOKEN}@login.example/v1`, '//login.example/v1'],
])(
  'a %s Location is named with the values of its query redacted, no fragment',
  async (_kind, location, shown) => {
    const cause = await failure(location)
    expect(cause.normalized.message).toBe(
      `HTTP 307: the provider redirected to ${shown}; adapters do not follow redirects: set baseURL to the new address`,
    )
    for (const text of [cause.message, cause.normalized.message, String(cause.stack)]) {
      expect(text).not.toContain(TOKEN)
      expect(text).not.toContain(SIGNATURE)
      expect(text).not.toContain(FRAGMENT)
    }
  },
)
