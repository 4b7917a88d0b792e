import { expect, it } from 'vitest'
import { expectEachAnswer } from './answersEach.js'

// A timing file (run alone): its outcome is decided within a deadline, which
// a loaded machine could run out first.
//
// The provider refusing the prompt (a content-policy 400, never retried): the
// model service left the RequestRejectedError to Express, whose page took the
// error's `status` (the provider's 400) in HTML; the API failed to parse it
// as JSON, and the caller got a 500 about that SyntaxError
// (`Unexpected token '<'`), the refusal nowhere in it.
it('three-hop: a prompt the provider refuses reaches the caller as a 422 naming the refusal, in JSON, not a 500 about parsing an HTML page', async () => {
  // Refused before generating, and not sent again: one call per request, none paid.
  await expectEachAnswer(
    './providerRefuses.mjs',
    {
      status: 422,
      body: {
        error: 'request_rejected',
        kind: 'content_policy',
        reason: expect.stringContaining('rejected as a result of our safety system'),
      },
    },
    'provider: 2 calls, 0 paid; the slow one ended as "error"',
  )
})
