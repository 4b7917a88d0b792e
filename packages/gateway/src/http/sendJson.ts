import type { ServerResponse } from 'node:http'

/**
 * Writes `body` as JSON with `status`: what `res.json` does, minus the ETag
 * it hashes from every body (a SHA-1 per answer, for a header no client of a
 * POST API uses) and Express's content negotiation. The deadline
 * middleware's late-write guard covers these writers as it does `json`.
 */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  res.statusCode = status
  res.setHeader('content-type', 'application/json; charset=utf-8')
  res.setHeader('content-length', Buffer.byteLength(text))
  res.end(text)
}
