import { expect, it } from 'vitest'
import { AnthropicToolIds } from '../../src/dialects/anthropic/toolUseId.js'

// Trying `_2`, `_3`, … from the start for every repeat of one id made a
// history n²/2 lookups: 14,000 `call_0` turns (2.5 MB, within the gateway's
// body limit) held the event loop ~20 s, and 20,000 took 15–27 s. Linear now:
// ~30 ms, so the 5 s timeout leaves two orders of magnitude for a busy machine.
it('repeats of one id cost the same per call however many there are (20,000 `call_0` turns)', {
  timeout: 5_000,
}, () => {
  const ids = new AnthropicToolIds()
  const sent = new Set<string>()
  let last = ''
  for (let i = 0; i < 20_000; i++) {
    last = ids.call('call_0', i)
    sent.add(last)
    expect(ids.result('call_0')).toBe(last)
  }
  expect(sent.size).toBe(20_000)
  expect(last).toBe('call_0_20000')
})
