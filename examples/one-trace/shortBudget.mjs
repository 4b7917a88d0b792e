// Test support (shortBudget.test.ts), loaded with `node --import` before the
// example: its request carries a 20 ms budget instead of 1000 ms, as a user
// trying a shorter one would write, too short for it to reach the last hops.
const send = globalThis.fetch
globalThis.fetch = function (url, init = {}) {
  return send.call(this, url, {
    ...init,
    headers: { ...init.headers, 'x-deadline-remaining-ms': '20' },
  })
}
