import { createFetch } from '@hourglass/fetch'
import { afterAll, describe, expect, it } from 'vitest'

describe('createFetch with a URL that does not parse', () => {
  const fetch = createFetch()
  afterAll(() => fetch.close())

  it("rejects with undici's own TypeError, which names the URL, not its bare cause", async () => {
    const error = await fetch('http://127.0.0.1:80a/').catch((e: unknown) => e)
    expect(error).toBeInstanceOf(TypeError)
    expect((error as Error).message).toBe('Failed to parse URL from http://127.0.0.1:80a/')
  })
})
