import { it } from 'vitest'
import { expectEachAnswer } from './answersEach.js'

// A timing file (run alone): its outcome is decided within a deadline, which
// a loaded machine could run out first.
//
// The provider cutting every answer at max_tokens: callModel raised the cap,
// then asked the model to continue, twice (4 calls a request, all paid), and
// threw OutputTruncatedError with what was produced. The model service left
// it to Express, whose HTML page the API failed to parse as JSON: the caller
// got a 500 about that SyntaxError (`Unexpected token '<'`), the 8 paid
// answers nowhere in it.
it('three-hop: an answer the provider keeps cutting at max_tokens reaches the caller as the text produced, marked truncated, in JSON', async () => {
  await expectEachAnswer(
    './providerTruncates.mjs',
    {
      status: 200,
      body: {
        // The raised cap's answer (it replaced the first, cut one), then each
        // "continue" turn's, joined.
        text: 'RayleighRayleighRayleigh',
        truncated: true,
        // OpenAI's finish_reason for an answer cut at its cap: short and
        // stable. It was the error's message — the recovery steps taken, the
        // characters produced, a cost budget's figures when that stopped it:
        // the model service's internals, not its caller's to parse.
        reason: 'length',
      },
    },
    'provider: 8 calls, 8 paid; the slow one ended as "success"',
  )
})
