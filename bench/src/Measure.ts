/**
 * What the benchmarks measure and how they summarise it: backend requests in flight (seen from the server side of
 * the loopback emulator through Node's `http.server.*` diagnostics channels), unions of intervals, concurrency
 * profiles, medians and the machine the figures were taken on.
 */
import * as diagnostics from "node:diagnostics_channel"
import * as fs from "node:fs"
import type * as Http from "node:http"
import * as os from "node:os"
import { performance } from "node:perf_hooks"

// =============================================================================
// Backend requests in flight
// =============================================================================

/** One request as the backend saw it: from its headers arriving to the last byte of its answer. */
export interface Interval {
  readonly path: string
  /** The `x-bench-role` header the benchmark's models send, when present. */
  readonly role: string | undefined
  readonly start: number
  end: number
}

/** Records every request an in-process HTTP server handles, for as long as it is started. */
export interface Recorder {
  readonly start: () => void
  readonly stop: () => ReadonlyArray<Interval>
}

interface ServerMessage {
  readonly request: Http.IncomingMessage
}

const isServerMessage = (message: unknown): message is ServerMessage =>
  typeof message === "object" && message !== null && "request" in message

/** A recorder over the `http.server.request.start` / `http.server.response.finish` channels. */
export const makeRecorder = (): Recorder => {
  let open = new Map<Http.IncomingMessage, Interval>()
  let done: Array<Interval> = []
  const onStart = (message: unknown): void => {
    if (!isServerMessage(message)) return
    const role = message.request.headers["x-bench-role"]
    open.set(message.request, {
      path: message.request.url ?? "",
      role: typeof role === "string" ? role : undefined,
      start: performance.now(),
      end: Number.NaN
    })
  }
  const onFinish = (message: unknown): void => {
    if (!isServerMessage(message)) return
    const interval = open.get(message.request)
    if (interval === undefined) return
    open.delete(message.request)
    interval.end = performance.now()
    done.push(interval)
  }
  return {
    start: () => {
      open = new Map()
      done = []
      diagnostics.subscribe("http.server.request.start", onStart)
      diagnostics.subscribe("http.server.response.finish", onFinish)
    },
    stop: () => {
      diagnostics.unsubscribe("http.server.request.start", onStart)
      diagnostics.unsubscribe("http.server.response.finish", onFinish)
      const now = performance.now()
      // A request still open at the end (none is expected) counts as in flight until now.
      for (const interval of open.values()) done.push({ ...interval, end: now })
      return done
    }
  }
}

/** Total length of the union of intervals, clipped to [from, to]. */
export const unionLength = (intervals: ReadonlyArray<Interval>, from: number, to: number): number => {
  const sorted = intervals
    .map((i) => [Math.max(from, i.start), Math.min(to, i.end)] as const)
    .filter(([a, b]) => b > a)
    .sort((x, y) => x[0] - y[0])
  let total = 0
  let currentStart = Number.NaN
  let currentEnd = Number.NaN
  for (const [a, b] of sorted) {
    if (Number.isNaN(currentStart) || a > currentEnd) {
      if (!Number.isNaN(currentStart)) total += currentEnd - currentStart
      currentStart = a
      currentEnd = b
    } else if (b > currentEnd) currentEnd = b
  }
  if (!Number.isNaN(currentStart)) total += currentEnd - currentStart
  return total
}

/**
 * The critical path: the longest chain of requests each of which started after the one before it had ended (as a
 * request that needs the previous one's answer must), by the sum of their latencies. With each request waiting for
 * the answers it needs and nothing else, a run's wall time is this sum; what the run adds beyond it (its own work,
 * its waits for a limiter or for work it does not need) is the gap between the two.
 */
export const criticalPath = (intervals: ReadonlyArray<Interval>): number => {
  const byEnd = [...intervals].filter((i) => i.end > i.start).sort((a, b) => a.end - b.end)
  // best[k]: the longest chain ending with byEnd[k]; prefix[k]: the longest over byEnd[0..k].
  const prefix: Array<number> = []
  let longest = 0
  for (const [k, interval] of byEnd.entries()) {
    // The last request that ended before this one started (binary search over the ends).
    let low = 0
    let high = k - 1
    let before = -1
    while (low <= high) {
      const mid = (low + high) >> 1
      const candidate = byEnd[mid]
      if (candidate !== undefined && candidate.end <= interval.start) {
        before = mid
        low = mid + 1
      } else high = mid - 1
    }
    const best = interval.end - interval.start + (before >= 0 ? (prefix[before] ?? 0) : 0)
    longest = Math.max(longest, best)
    prefix.push(Math.max(best, k > 0 ? (prefix[k - 1] ?? 0) : 0))
  }
  return longest
}

/**
 * The requests along the critical path, in order: the chain whose latencies sum to `criticalPath`. Each one started
 * after the one before it had ended, so each waited for the one before it (or could have).
 */
export const criticalChain = (intervals: ReadonlyArray<Interval>): ReadonlyArray<Interval> => {
  const byEnd = [...intervals].filter((i) => i.end > i.start).sort((a, b) => a.end - b.end)
  const best: Array<number> = []
  const previous: Array<number> = []
  // bestBefore[k]: the index over byEnd[0..k] whose chain is longest.
  const bestBefore: Array<number> = []
  for (const [k, interval] of byEnd.entries()) {
    let low = 0
    let high = k - 1
    let before = -1
    while (low <= high) {
      const mid = (low + high) >> 1
      const candidate = byEnd[mid]
      if (candidate !== undefined && candidate.end <= interval.start) {
        before = mid
        low = mid + 1
      } else high = mid - 1
    }
    const link = before >= 0 ? (bestBefore[before] ?? -1) : -1
    best.push(interval.end - interval.start + (link >= 0 ? (best[link] ?? 0) : 0))
    previous.push(link)
    const prior = k > 0 ? (bestBefore[k - 1] ?? -1) : -1
    bestBefore.push(prior >= 0 && (best[prior] ?? 0) >= (best[k] ?? 0) ? prior : k)
  }
  const chain: Array<Interval> = []
  for (let k = bestBefore[byEnd.length - 1] ?? -1; k >= 0; k = previous[k] ?? -1) {
    const interval = byEnd[k]
    if (interval !== undefined) chain.push(interval)
  }
  return chain.reverse()
}

/** The gaps (no interval open) inside [from, to], longest first. */
export const gaps = (
  intervals: ReadonlyArray<Interval>,
  from: number,
  to: number
): ReadonlyArray<{ readonly start: number; readonly length: number }> => {
  const sorted = [...intervals].sort((x, y) => x.start - y.start)
  const out: Array<{ start: number; length: number }> = []
  let cursor = from
  for (const interval of sorted) {
    if (interval.start > cursor) out.push({ start: cursor, length: interval.start - cursor })
    cursor = Math.max(cursor, interval.end)
  }
  if (to > cursor) out.push({ start: cursor, length: to - cursor })
  return out.sort((a, b) => b.length - a.length)
}

/** Peak and time-weighted mean of how many intervals are open, over [from, to] or over the time any is open. */
export const concurrency = (
  intervals: ReadonlyArray<Interval>,
  from: number,
  to: number
): { readonly peak: number; readonly meanWhileBusy: number; readonly meanOverall: number } => {
  const events: Array<readonly [number, number]> = []
  for (const interval of intervals) {
    events.push([Math.max(from, interval.start), 1], [Math.min(to, interval.end), -1])
  }
  // Ends before starts at the same instant, so back-to-back requests do not count as overlapping.
  events.sort((x, y) => x[0] - y[0] || x[1] - y[1])
  let open = 0
  let peak = 0
  let area = 0
  let busy = 0
  let last = from
  for (const [at, delta] of events) {
    area += open * (at - last)
    if (open > 0) busy += at - last
    last = at
    open += delta
    peak = Math.max(peak, open)
  }
  return { peak, meanWhileBusy: busy === 0 ? 0 : area / busy, meanOverall: to > from ? area / (to - from) : 0 }
}

// =============================================================================
// Statistics and the machine
// =============================================================================

/** The median of some numbers. */
export const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1
    ? (sorted[middle] ?? Number.NaN)
    : ((sorted[middle - 1] ?? 0) + (sorted[middle] ?? 0)) / 2
}

/** Rounds to a number of decimals, for printing. */
export const round = (value: number, decimals = 1): number => {
  const factor = 10 ** decimals
  return Math.round(value * factor) / factor
}

/** The machine the figures were taken on. */
export const machine = () => ({
  cpus: os.availableParallelism(),
  cpuModel: os.cpus()[0]?.model ?? "unknown",
  memoryGiB: round(os.totalmem() / 1024 ** 3, 1),
  node: process.version,
  platform: `${os.platform()} ${os.release()}`,
  // Other work on the machine competes for the same cores; figures taken under load are pessimistic.
  loadAverage1m: round(os.loadavg()[0] ?? 0, 2)
})

/** Times a synchronous function, in milliseconds. */
export const time = <A>(f: () => A): { readonly value: A; readonly millis: number } => {
  const start = performance.now()
  const value = f()
  return { value, millis: performance.now() - start }
}

// =============================================================================
// CPU by thread
// =============================================================================

/** CPU milliseconds of this process's main thread and of all its other threads (V8's helpers, libuv's pool). */
export interface ThreadCpu {
  readonly main: number
  readonly other: number
}

/**
 * The CPU each of this process's threads has used so far, from Linux's `/proc/self/task/<tid>/stat` (user and system
 * time, fields 14 and 15, in clock ticks of 1/100 s, Linux's USER_HZ). Undefined where there is no such file.
 */
export const threadCpu = (): ThreadCpu | undefined => {
  let tasks: ReadonlyArray<string>
  try {
    tasks = fs.readdirSync("/proc/self/task")
  } catch {
    return undefined
  }
  let main = 0
  let other = 0
  for (const task of tasks) {
    let stat: string
    try {
      stat = fs.readFileSync(`/proc/self/task/${task}/stat`, "utf8")
    } catch {
      continue // the thread ended between the listing and the read
    }
    // The command name (field 2) is in parentheses and may hold spaces: the fields are counted after it.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    const millis = (Number(fields[11]) + Number(fields[12])) * 10
    if (task === String(process.pid)) main += millis
    else other += millis
  }
  return { main, other }
}

/**
 * The CPU milliseconds (user and system) of this process's children that have ended and been waited for, from Linux's
 * `/proc/self/stat` (fields 16 and 17, in clock ticks of 1/100 s); undefined where there is no such file. The
 * difference across a `spawnSync` is that child's whole-process CPU.
 */
export const childrenCpu = (): number | undefined => {
  let stat: string
  try {
    stat = fs.readFileSync("/proc/self/stat", "utf8")
  } catch {
    return undefined
  }
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
  return (Number(fields[13]) + Number(fields[14])) * 10
}
