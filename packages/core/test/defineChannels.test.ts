import diagnostics from 'node:diagnostics_channel'
import {
  type ChannelMessage,
  coreChannels,
  defineChannel,
  defineChannels,
  onChannels,
  type SliceEndMessage,
} from '@hourglass/core'
import { describe, expect, expectTypeOf, it, vi } from 'vitest'

// Groups made up for these tests are not in `ChannelGroups`: reach the registry untyped.
type UntypedOn = (group: string, listener: (channels: unknown) => void) => () => void
const on = onChannels as unknown as UntypedOn

let groups = 0
/** A group name no other test has used: the registry lives as long as the process. */
const freshGroup = () => `test-group-${++groups}`
const channelsOf = (group: string) => ({
  ping: defineChannel<{ n: number }>(`hourglass:${group}:ping`),
})

describe('defineChannels / onChannels', () => {
  it('hands a group already defined to the listener at once', () => {
    const group = freshGroup()
    const channels = defineChannels(group, channelsOf(group))
    const seen: unknown[] = []
    on(group, (c) => seen.push(c))
    expect(seen).toEqual([channels])
  })

  it('hands a group defined later to the listener when it is defined, once', () => {
    const group = freshGroup()
    const seen: unknown[] = []
    on(group, (c) => seen.push(c))
    expect(seen).toEqual([])
    const channels = defineChannels(group, channelsOf(group))
    expect(seen).toEqual([channels])
    defineChannels(group, channelsOf(group))
    expect(seen).toEqual([channels])
  })

  it('never calls a listener cancelled before its group was defined', () => {
    const group = freshGroup()
    const seen: unknown[] = []
    const cancel = on(group, (c) => seen.push(c))
    const kept = on(group, (c) => seen.push(['kept', c]))
    cancel()
    cancel()
    const channels = defineChannels(group, channelsOf(group))
    expect(seen).toEqual([['kept', channels]])
    kept()
  })

  it('keeps the first definition of a group: a second copy of a package publishes on the same names', () => {
    const group = freshGroup()
    const first = defineChannels(group, channelsOf(group))
    const second = defineChannels(group, channelsOf(group))
    const seen: unknown[] = []
    on(group, (c) => seen.push(c))
    expect(seen).toEqual([first])
    // Both objects are views of the same process-wide channel.
    const messages: unknown[] = []
    const listener = (m: unknown) => messages.push(m)
    first.ping.subscribe(listener)
    second.ping.publish(() => ({ n: 1 }))
    first.ping.unsubscribe(listener)
    expect(messages).toEqual([{ n: 1 }])
  })

  it('is shared by two installed copies of core (a Symbol.for key on globalThis)', async () => {
    const path = '../src/defineChannel.ts?copy=2'
    const copy = (await import(path)) as typeof import('../src/defineChannel.js')
    expect(copy.defineChannels).not.toBe(defineChannels)
    const copyOn = copy.onChannels as unknown as UntypedOn

    const early = freshGroup()
    const seen: unknown[] = []
    copyOn(early, (c) => seen.push(c))
    const channels = defineChannels(early, channelsOf(early))
    expect(seen).toEqual([channels])

    const late = freshGroup()
    const fromCopy = copy.defineChannels(late, channelsOf(late))
    on(late, (c) => seen.push(c))
    expect(seen).toEqual([channels, fromCopy])
  })

  it('does not let a throwing listener fail the definition: the error is rethrown on the next tick', () => {
    const group = freshGroup()
    const failure = new Error('subscriber bug')
    const seen: unknown[] = []
    on(group, () => {
      throw failure
    })
    on(group, (c) => seen.push(c))
    const deferred: Array<() => void> = []
    const defer = (fn: () => void) => void deferred.push(fn)
    const nextTick = vi
      .spyOn(process, 'nextTick')
      .mockImplementation(defer as typeof process.nextTick)
    let channels: unknown
    try {
      channels = defineChannels(group, channelsOf(group))
    } finally {
      nextTick.mockRestore()
    }
    expect(seen).toEqual([channels])
    expect(deferred).toHaveLength(1)
    expect(() => deferred[0]?.()).toThrow(failure)
  })

  it('types a group by its publisher: its keys and each message', () => {
    const names: string[] = []
    onChannels('core', (core) => {
      names.push(core.sliceEnd.name)
      expectTypeOf(core.sliceEnd).toEqualTypeOf(coreChannels.sliceEnd)
      // @ts-expect-error a key the publisher does not declare
      core.sliceFinish
    })
    expect(names).toEqual(['hourglass:slice:end'])
    expectTypeOf<ChannelMessage<typeof coreChannels.sliceEnd>>().toEqualTypeOf<SliceEndMessage>()
    // @ts-expect-error a group no package declares
    onChannels('no-such-group', () => {})
  })
})

describe('coreChannels', () => {
  it('keeps the wire names users subscribe to by hand', () => {
    expect(Object.values(coreChannels).map((c) => c.name)).toEqual([
      'hourglass:deadline:create',
      'hourglass:deadline:expire',
      'hourglass:deadline:cancel',
      'hourglass:slice:start',
      'hourglass:slice:end',
    ])
  })

  it('publishes to subscribers by name and builds nothing without one', () => {
    const channel = coreChannels.deadlineCancel
    const build = vi.fn(() => ({ deadline: undefined as never, reason: 'x' }))
    channel.publish(build)
    expect(build).not.toHaveBeenCalled()
    const messages: unknown[] = []
    const fn = (m: unknown) => messages.push(m)
    diagnostics.subscribe('hourglass:deadline:cancel', fn)
    try {
      expect(channel.hasSubscribers).toBe(true)
      channel.publish(build)
    } finally {
      diagnostics.unsubscribe('hourglass:deadline:cancel', fn)
    }
    expect(build).toHaveBeenCalledOnce()
    expect(messages).toEqual([{ deadline: undefined, reason: 'x' }])
  })
})
