/**
 * How far V8 lets a Node process's heap grow past what its last full collection kept before it collects again, once
 * what is alive is large.
 *
 * V8 picks that factor itself, up to 4 when the process spends little of its time collecting, which is the case of a
 * process whose sessions mostly wait for the network: with many sessions at once most of its RSS is garbage not yet
 * collected. A factor of 2 (`percent` 100) takes a large part of that away with no cost a user sees there, while with
 * few sessions (little alive) it costs more frequent collections for memory nobody was short of (the figures:
 * BENCHMARKS.md, "Home-made parts"). So the factor is set only while the last full collection kept more than
 * `aboveMiB`, and given back to V8 below it.
 * V8 sizes the heap at the end of each full collection, so a change counts from the collection after the one that
 * made it: the threshold has to be crossed on the way up. Unlike a heap limit, the factor never makes a process that
 * really holds more run out of memory.
 *
 * `deep-research` runs every command under it (`limited()`), and the sessions benchmark as the CLI does. A process
 * started with its own `--heap-growing-percent` (on the command line or in `NODE_OPTIONS`) keeps it. V8's flag is one
 * a process, so one watcher sets it at a time: a `limit` made while another is open (a `layer()` inside `limited()`,
 * say) leaves the flag to the first.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { constants, PerformanceObserver } from "node:perf_hooks"
import * as v8 from "node:v8"

export interface Options {
  /** The heap may grow to `1 + percent / 100` times what the last full collection kept (100 by default). */
  readonly percent?: number
  /** The factor applies while that collection kept more than this many MiB (128 by default). */
  readonly aboveMiB?: number
}

/** The growth `limit` sets when none is given: the heap may double what the last full collection kept. */
export const defaultPercent = 100

/**
 * The live heap above which `limit` bounds the growth when no other is given: over what 20 sessions at once keep (60
 * to 80 MiB after a full collection), under what 1,000 keep on their way up (170 MiB, then 460).
 */
export const defaultAboveMiB = 128

const ownSetting = /^--heap[-_]growing[-_]percent(=|$)/

/** Whether the process was started with a growth of its own, in its flags or in `NODE_OPTIONS`. */
export const startedWithOwn = (
  execArgv: ReadonlyArray<string> = process.execArgv,
  nodeOptions: string | undefined = process.env["NODE_OPTIONS"]
): boolean => [...execArgv, ...(nodeOptions ?? "").split(/\s+/)].some((flag) => ownSetting.test(flag))

/**
 * Whether a watcher of this process is open: kept on the global object, so that two copies of this module in one
 * process (two versions of the package) still make one watcher.
 */
const watching = Symbol.for("@deep-research/cli/HeapGrowth/watching")
const globals = globalThis as { [watching]?: boolean }

// V8 reads the flag at each collection; 0 is its own choice.
const setGrowth = (percent: number) => v8.setFlagsFromString(`--heap-growing-percent=${percent}`)

const validated = (options: Options) => {
  const percent = options.percent ?? defaultPercent
  const aboveMiB = options.aboveMiB ?? defaultAboveMiB
  if (!Number.isInteger(percent) || percent < 1 || percent > 300) {
    throw new RangeError(`the heap's growth must be a whole number of percent from 1 to 300, not ${percent}`)
  }
  if (!(aboveMiB >= 0))
    throw new RangeError(`the live heap above which the growth applies must be >= 0, not ${aboveMiB}`)
  return { percent, aboveBytes: aboveMiB * 2 ** 20 }
}

/**
 * Bounds the heap's growth for as long as the scope is open, unless the process was started with a growth of its own
 * or another `limit` of the process is open: after each full collection, the factor is set when the heap then held
 * more than `aboveMiB`, and given back to V8 when it held less. Succeeds with whether it watches; options out of range
 * are a defect.
 */
export const limit = (options: Options = {}): Effect.Effect<boolean, never, Scope.Scope> =>
  Effect.suspend(() => {
    const { aboveBytes, percent } = validated(options)
    if (startedWithOwn()) return Effect.succeed(false)
    let bounded = false
    const decide = () => {
      // Read right after a full collection: what it kept, plus what was allocated since (little).
      const large = v8.getHeapStatistics().used_heap_size > aboveBytes
      if (large === bounded) return
      bounded = large
      setGrowth(large ? percent : 0)
    }
    return Effect.map(
      Effect.acquireRelease(
        // Checked and taken in one step: of two limits made at once, one watches.
        Effect.sync(() => {
          if (globals[watching] === true) return undefined
          globals[watching] = true
          const observer = new PerformanceObserver((list) => {
            if (list.getEntries().some(isMajor)) decide()
          })
          observer.observe({ entryTypes: ["gc"] })
          decide()
          return observer
        }),
        (observer) =>
          observer === undefined
            ? Effect.void
            : Effect.sync(() => {
                observer.disconnect()
                globals[watching] = false
                if (bounded) setGrowth(0)
              })
      ),
      (observer) => observer !== undefined
    )
  })

/** A garbage collection entry of a full collection (its `detail` says the kind). */
const isMajor = (entry: object): boolean =>
  "detail" in entry &&
  typeof entry.detail === "object" &&
  entry.detail !== null &&
  "kind" in entry.detail &&
  entry.detail.kind === constants.NODE_PERFORMANCE_GC_MAJOR

/** Runs `self` with the heap's growth bounded (`limit`) while it runs. */
export const limited =
  (options: Options = {}) =>
  <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.acquireUseRelease(
      Scope.make(),
      (scope) => Effect.zipRight(Scope.extend(limit(options), scope), self),
      (scope, exit) => Scope.close(scope, exit)
    )

/** `limit` for the life of a layer. */
export const layer = (options: Options = {}): Layer.Layer<never> => Layer.scopedDiscard(limit(options))
