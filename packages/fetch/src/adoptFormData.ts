import { FormData as UndiciFormData } from 'undici'

/**
 * A `FormData` made by another fetch implementation — above all Node's
 * global `FormData`, from the copy of undici bundled with Node, a class
 * npm's undici does not recognise — rebuilt as undici's own, its entries
 * copied in order: strings as they are, files and blobs with their file
 * names. Given as it is, undici's fetch took it for a string and sent the
 * text "[object FormData]" as `text/plain`. Anything else is returned
 * unchanged: for any other body this costs a few property reads and no
 * allocation.
 */
export function adoptFormData<T>(body: T): T | UndiciFormData {
  if (!isForeignFormData(body)) return body
  return copiedForm(body)
}

/**
 * A new undici `FormData` with `form`'s entries in order: strings as they
 * are, files and blobs (the same objects, unread) with their file names.
 * Also how a call takes undici's own form when it is made (snapshotBody).
 */
export function copiedForm(form: globalThis.FormData | UndiciFormData): UndiciFormData {
  const copy = new UndiciFormData()
  for (const [name, value] of form.entries()) {
    if (typeof value === 'string') copy.append(name, value)
    // A Blob from Node's FormData is a File (named "blob" when appended
    // without a name): Node's Blob and File, the classes undici takes too.
    else copy.append(name, value, (value as { name?: unknown }).name as string | undefined)
  }
  return copy
}

/** What undici's own dispatcher takes for form data (its `isFormDataLike`), when it is not undici's class. */
function isForeignFormData(value: unknown): value is globalThis.FormData {
  if (typeof value !== 'object' || value === null || value instanceof UndiciFormData) return false
  const form = value as Partial<Record<keyof globalThis.FormData, unknown>>
  return (
    typeof form.append === 'function' &&
    typeof form.entries === 'function' &&
    typeof form.getAll === 'function' &&
    typeof form.has === 'function' &&
    (value as { [Symbol.toStringTag]?: unknown })[Symbol.toStringTag] === 'FormData'
  )
}
