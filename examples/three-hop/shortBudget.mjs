// Test support (shortBudget.test.ts), loaded with `node --import` before the
// example: its requests carry a 5 ms budget instead of 1000 ms, as a user
// trying a shorter one would write, too short for them to reach the provider.
const send = globalThis.fetch
globalThis.fetch = function (url, init = {}) {
  return send.call(this, url, {
    ...init,
    headers: { ...init.headers, 'x-deadline-remaining-ms': '5' },
  })
}
