// Test support (shortSecondBudget.test.ts), loaded with `node --import`
// before the example: its second request (the slow item) carries a 5 ms
// budget instead of 300 ms, as a user trying a shorter one would write, too
// short for it to reach any handler.
const send = globalThis.fetch
globalThis.fetch = function (url, init = {}) {
  if (!String(url).endsWith('/order/slow')) return send.call(this, url, init)
  return send.call(this, url, {
    ...init,
    headers: { ...init.headers, 'x-deadline-remaining-ms': '5' },
  })
}
