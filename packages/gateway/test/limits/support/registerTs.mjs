import { register } from 'node:module'

register('./tsHooks.mjs', import.meta.url)
