/**
 * Whether an error body is a web page — nginx's, Apache's, IIS's,
 * Cloudflare's or Google's front end answering for the provider ("<html>
 * <head><title>400 The plain HTTP request was sent to HTTPS port…") — by
 * its opening. Not any `<`: a provider's words may start with a tag they
 * name ("<think> …"), or quote XML they refuse (`<?xml`, a tool result).
 *
 * Exported: the gateway names such a page rather than quoting it.
 */
export function looksLikeWebPage(text: string): boolean {
  return MARKUP_PAGE.test(text)
}

const MARKUP_PAGE = /^\s*<(?:!doctype\s+html|html|head|body|title)\b/i
