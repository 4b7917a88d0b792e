// A fake OpenAI provider and an @hourglass/gateway in front of it, in one
// process of their own: the bench calls either, the same way.
import { startGateway } from '@hourglass/gateway'
import { reply, startFakeProvider } from '@hourglass/testkit'
import { announceReady } from '../lib/child.js'

const fake = await startFakeProvider({
  dialect: 'openai',
  reply: reply.text('Hello from the fake provider, answering at once.'),
})
const running = await startGateway({
  port: 0,
  // Discarded: the bench measures the gateway's work, not a terminal's.
  logger: () => {},
  config: {
    providers: { fake: { dialect: 'openai', baseURL: fake.baseURL, apiKeys: ['sk-test'] } },
    models: { 'gpt-4o-mini': { fallback: [{ provider: 'fake', model: 'gpt-4o-mini' }] } },
  },
})
announceReady({ direct: fake.baseURL, gateway: `${running.url}/v1` })
// The fake keeps every request record; forget them now and then so a long run stays flat.
setInterval(() => fake.reset(), 5000).unref()
