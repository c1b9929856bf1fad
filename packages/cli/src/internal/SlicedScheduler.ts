/**
 * An Effect scheduler for a Node process that hosts many research sessions: fiber work runs in slices of at most
 * `sliceMillis` of the event loop's time, and the work left over waits for the loop's next turn. Timers and sockets
 * (the HTTP API's requests, the MCP transport, the sessions' own answers and time limits) are then served between
 * slices instead of behind every session's work.
 *
 * Effect's default scheduler lets fibers run on for up to 2,048 consecutive microtask turns before it lets timers
 * and I/O in, however long that takes; with a thousand sessions whose answers arrive together that held the event
 * loop far longer than a slice (BENCHMARKS.md, "Home-made parts"). Slicing changes when work runs, not how much there
 * is.
 *
 * `deep-research` runs every command under it (`withSlices()`), and the benchmarks as the CLI does.
 */
import * as Effect from "effect/Effect"
import type * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Scheduler from "effect/Scheduler"
import { performance } from "node:perf_hooks"

export interface Options {
  /** The longest stretch of fiber work before timers and I/O get their turn, in milliseconds (5 by default). */
  readonly sliceMillis?: number
}

/** The slice `make` uses when none is given. */
export const defaultSliceMillis = 5

/** Consecutive microtask turns a fiber's queue takes at most within a slice, as Effect's default scheduler does. */
const maxTurnsInSlice = 2048

class Sliced implements Scheduler.Scheduler {
  private sliceStart = 0
  private sliceOpen = false
  // Fibers' queues whose turn comes after the current slice, in the order they were put off.
  private later: Array<() => void> = []
  private laterScheduled = false

  constructor(private readonly sliceMillis: number) {}

  // A slice begins with the first work of a turn of the event loop and ends when the loop comes round again.
  private readonly endSlice = () => {
    this.sliceOpen = false
  }

  private beginSlice(now: number) {
    if (this.sliceOpen) return
    this.sliceOpen = true
    this.sliceStart = now
    setImmediate(this.endSlice)
  }

  private scheduleLater() {
    if (this.laterScheduled) return
    this.laterScheduled = true
    setImmediate(this.runLater)
  }

  // Runs the queues put off, in order, for one slice; the rest wait for the loop's next turn.
  private readonly runLater = () => {
    this.laterScheduled = false
    this.sliceOpen = false
    this.beginSlice(performance.now())
    const queued = this.later
    this.later = []
    let next = 0
    try {
      while (next < queued.length && (next === 0 || performance.now() - this.sliceStart < this.sliceMillis)) {
        const drain = queued[next++]
        drain?.()
      }
    } finally {
      if (next < queued.length) this.later = queued.slice(next).concat(this.later)
      if (this.later.length > 0) this.scheduleLater()
    }
  }

  private putOff(drain: (turns: number) => void) {
    this.later.push(() => drain(0))
    this.scheduleLater()
  }

  private readonly runnerOf = Scheduler.SchedulerRunner.cached((turns, drain) => {
    const now = performance.now()
    this.beginSlice(now)
    if (turns < maxTurnsInSlice && now - this.sliceStart < this.sliceMillis) {
      // Looked at again when it runs: fibers woken together (a gate opened, a burst of answers) are each given a turn
      // in the slice as they are woken, and without this second look they would all run in it, however long it grew.
      Promise.resolve(undefined).then(() => {
        if (performance.now() - this.sliceStart < this.sliceMillis) drain(turns + 1)
        else this.putOff(drain)
      })
    } else {
      this.putOff(drain)
    }
  })

  shouldYield(fiber: Fiber.RuntimeFiber<unknown, unknown>): number | false {
    return Scheduler.defaultScheduler.shouldYield(fiber)
  }

  scheduleTask(task: Scheduler.Task, priority: number, fiber?: Fiber.RuntimeFiber<unknown, unknown>): void {
    this.runnerOf(fiber).scheduleTask(task, priority)
  }
}

/** A scheduler that runs fiber work in slices of `sliceMillis` (a positive number; 5 ms by default). */
export const make = (options: Options = {}): Scheduler.Scheduler => {
  const sliceMillis = options.sliceMillis ?? defaultSliceMillis
  if (!(sliceMillis > 0) || !Number.isFinite(sliceMillis)) {
    throw new RangeError(`sliceMillis must be a positive number of milliseconds, not ${sliceMillis}`)
  }
  return new Sliced(sliceMillis)
}

/** Runs `effect`, and every fiber it starts, on a sliced scheduler. */
export const withSlices =
  (options: Options = {}) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.withScheduler(effect, make(options))

/** A sliced scheduler for the effects the layer is provided to. */
export const layer = (options: Options = {}): Layer.Layer<never> => Layer.setScheduler(make(options))
