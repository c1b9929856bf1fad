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
 * Work at a scheduling priority below zero (`background`: the runs a server hosts) gives way: it runs in what a slice
 * leaves once the other work put off has had its turn, and at least every 50 ms while the rest takes every slice, so that it is never starved. A burst
 * of clients is then answered before the runs it starts take the loop (BENCHMARKS.md, the serve burst).
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

/** The longest work that gives way waits while other work takes every slice, in milliseconds. */
const starvedMillis = 50

/** The scheduling priority of work that gives way to the rest (`background`). */
export const backgroundPriority = -1

/** Runs `effect`, and every fiber it starts, as work that gives way to the rest under a sliced scheduler. */
export const background = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.withSchedulingPriority(effect, backgroundPriority)

class Sliced implements Scheduler.Scheduler {
  private sliceStart = 0
  private sliceOpen = false
  // Fibers' queues whose turn comes after the current slice, in the order they were put off.
  private later: Array<() => void> = []
  // The same, of work that gives way: run after `later`.
  private laterInBackground: Array<() => void> = []
  // When work that gives way last ran.
  private backgroundRan = 0
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

  private inSlice() {
    return performance.now() - this.sliceStart < this.sliceMillis
  }

  // Runs the queues put off, in order, for one slice: those that give way after the others, and at least one of each
  // lane whatever the time; the rest wait for the loop's next turn.
  private readonly runLater = () => {
    this.laterScheduled = false
    this.sliceOpen = false
    this.beginSlice(performance.now())
    try {
      this.runLane("later")
      this.runLane("laterInBackground")
    } finally {
      if (this.later.length > 0 || this.laterInBackground.length > 0) this.scheduleLater()
    }
  }

  private runLane(lane: "later" | "laterInBackground") {
    const queued = this[lane]
    this[lane] = []
    let next = 0
    // The first of a lane runs whatever the time: the other work's always; the background's when nothing else waits
    // or it has waited `starvedMillis`.
    const now = performance.now()
    const first = lane === "later" || this.later.length === 0 || now - this.backgroundRan >= starvedMillis
    try {
      while (next < queued.length && ((next === 0 && first) || this.inSlice())) queued[next++]?.()
    } finally {
      if (lane === "laterInBackground" && next > 0) this.backgroundRan = performance.now()
      this[lane] = queued.slice(next).concat(this[lane])
    }
  }

  private putOff(drain: (turns: number) => void, inBackground: boolean) {
    ;(inBackground ? this.laterInBackground : this.later).push(() => drain(0))
    this.scheduleLater()
  }

  private readonly runnerOf = Scheduler.SchedulerRunner.cached((turns, drain) => {
    const now = performance.now()
    this.beginSlice(now)
    if (turns < maxTurnsInSlice && now - this.sliceStart < this.sliceMillis) {
      // Looked at again when it runs: fibers woken together (a gate opened, a burst of answers) are each given a turn
      // in the slice as they are woken, and without this second look they would all run in it, however long it grew.
      Promise.resolve(undefined).then(() => {
        if (this.inSlice()) drain(turns + 1)
        else this.putOff(drain, false)
      })
    } else {
      this.putOff(drain, false)
    }
  })

  // Work that gives way always waits for the loop's next turn, and runs there after the rest.
  private readonly backgroundRunnerOf = Scheduler.SchedulerRunner.cached((_turns, drain) => this.putOff(drain, true))

  shouldYield(fiber: Fiber.RuntimeFiber<unknown, unknown>): number | false {
    return Scheduler.defaultScheduler.shouldYield(fiber)
  }

  scheduleTask(task: Scheduler.Task, priority: number, fiber?: Fiber.RuntimeFiber<unknown, unknown>): void {
    ;(priority <= backgroundPriority ? this.backgroundRunnerOf : this.runnerOf)(fiber).scheduleTask(task, priority)
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
