// Test support (providerRateLimited.timing.test.ts), loaded with
// `node --import` before the example: its fake provider answers every call
// with OpenAI's 429 and `Retry-After: 30`, as a real one at its limit does,
// where the example's never limits.
import { FakeProvider, openAIErrors } from '@hourglass/testkit'

const start = FakeProvider.start
FakeProvider.start = async function (...args) {
  const provider = await start.apply(this, args)
  return provider.setReply(openAIErrors.rateLimited({ retryAfterS: 30 }))
}
