/**
 * The paths the gateway's router answers, as Express matches its routes:
 * any letter case, an optional trailing slash, one segment for a model id.
 */
const GATEWAY_PATH = /^\/(?:v1\/(?:chat\/completions|models(?:\/[^/]+)?)|healthz|readyz)\/?$/i
const METRICS_PATH = /^\/metrics\/?$/i

/**
 * Whether the router answers this path itself (with any method: a wrong one
 * is its 405). Mounted at the root of an app (`app.use(gateway)`, then the
 * app's own routes), every request passes through the router: the gateway's
 * request tracking, deadline and drain are for these alone, and a request
 * for anything else falls through to the app untouched — no 504 of the
 * gateway's at `deadline.defaultMs`, not counted or cut by `close()`, no
 * `connection: close` after it. `path` is relative to the mount point.
 */
export function isGatewayPath(path: string, metrics: boolean): boolean {
  return GATEWAY_PATH.test(path) || (metrics && METRICS_PATH.test(path))
}
