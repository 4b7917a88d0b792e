// Test support (providerTruncates.timing.test.ts), loaded with `node --import`
// before the example: its fake provider cuts every answer at the output cap
// (`finish_reason: "length"`), as a real one does when the answer needs more
// tokens than `max_tokens` allows, where the example's never does.
import { FakeProvider, reply } from '@hourglass/testkit'

const start = FakeProvider.start
FakeProvider.start = async function (...args) {
  const provider = await start.apply(this, args)
  return provider.setReply(reply.text('Rayleigh', { finishReason: 'length' }))
}
