// Test support (providerDown.timing.test.ts), loaded with `node --import`
// before the example: its fake provider answers every call with a 500 (the
// provider failing), where the example's never fails.
import { FakeProvider, openAIErrors } from '@hourglass/testkit'

const start = FakeProvider.start
FakeProvider.start = async function (...args) {
  const provider = await start.apply(this, args)
  return provider.setReply(openAIErrors.serverError())
}
