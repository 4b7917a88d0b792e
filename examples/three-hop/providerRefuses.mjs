// Test support (providerRefuses.timing.test.ts), loaded with `node --import`
// before the example: its fake provider refuses every prompt (OpenAI's 400
// `content_policy_violation`), as a real one refuses a question it will not
// answer, where the example's never does.
import { FakeProvider, openAIErrors } from '@hourglass/testkit'

const start = FakeProvider.start
FakeProvider.start = async function (...args) {
  const provider = await start.apply(this, args)
  return provider.setReply(openAIErrors.contentPolicy())
}
