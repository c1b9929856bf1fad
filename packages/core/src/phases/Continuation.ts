/**
 * Going deeper: a finished session reopened in a new direction (`Pipeline.extend`). Its report is kept as a version,
 * supervision, synthesis and verification are marked to run again, and the supervisor goes on from the brief, the
 * findings and the sources the session holds, for a few more rounds; the report is then written again as a new
 * version. Pages the session already read are answered from its stored sources, never fetched again (`storedPages`).
 * Also what changed between two versions of a report: the sections and the sources it added.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as ContentExtractor from "../ContentExtractor.js"
import type { ResearchInvalidInput } from "../Errors.js"
import * as Novelty from "../Novelty.js"
import * as ReportText from "../ReportText.js"
import { Continuation, type Report, ReportVersion } from "../Research.js"
import { Session } from "../Session.js"
import { SessionStore } from "../SessionStore.js"
import { ExtractedPage, type ExtractResult, type Source } from "../Source.js"
import type * as Usage from "../Usage.js"

/** The continuation's rounds when none is given. */
export const defaultRounds = 2

/** The phases a continuation runs again. */
const again: ReadonlyArray<Usage.Phase> = ["supervision", "synthesis", "verification"]

/**
 * The finished `session` reopened in `direction`: its report kept as the newest earlier version, the phases after the
 * brief to run again, at most `maxRounds` more supervision rounds. Stored running by the caller, which then runs it.
 */
export const reopen = (session: Session, direction: string, maxRounds: number, now: number): Session => {
  const { report, verification, supervisionStopReason: _stopped, error: _error, ...rest } = session
  const kept =
    report === undefined
      ? []
      : [
          new ReportVersion({
            version: session.reportVersions.length + 1,
            report,
            ...(verification === undefined ? {} : { verification }),
            sources: session.sources.length,
            ...(session.continuations.length === 0 ? {} : { direction: session.continuations.at(-1)?.direction }),
            supersededAt: now
          })
        ]
  const continuation = new Continuation({
    direction: direction.trim(),
    requestedAt: now,
    afterRound: session.rounds.length,
    maxRounds,
    supervisionMillisBefore: session.metrics.find((m) => m.phase === "supervision")?.durationMillis ?? 0
  })
  return new Session({
    ...rest,
    status: "running",
    updatedAt: now,
    phasesCompleted: session.phasesCompleted.filter((phase) => !again.includes(phase)),
    continuations: [...session.continuations, continuation],
    reportVersions: [...session.reportVersions, ...kept]
  })
}

/** The completed `session` reopened in `direction`, stored (running) before its research goes on. */
export const stored = (
  session: Session,
  direction: string,
  rounds: number | undefined
): Effect.Effect<Session, ResearchInvalidInput, SessionStore> =>
  Effect.gen(function* () {
    const now = yield* Clock.currentTimeMillis
    const reopened = reopen(session, direction, rounds ?? defaultRounds, now)
    yield* Effect.flatMap(SessionStore, (store) => store.save(reopened))
    return reopened
  })

/**
 * Whether supervision has run all its rounds: `maxRounds` of a new research, or a continuation's own rounds after
 * those of the research it continues.
 */
export const roundsSpent = (session: Session, maxRounds: number): boolean => {
  const continuation = session.continuations.at(-1)
  return session.rounds.length - (continuation?.afterRound ?? 0) >= (continuation?.maxRounds ?? maxRounds)
}

/** Milliseconds of supervision before the continuation in progress: its time limit counts from there. */
export const supervisionMillisBefore = (session: Session): number =>
  session.continuations.at(-1)?.supervisionMillisBefore ?? 0

/**
 * The content extractor in context, answering the URLs of `sources` from their stored text (a page the session
 * already read is not fetched again) and sending only the others.
 */
export const storedPages =
  (sources: ReadonlyArray<Source>) =>
  <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R | ContentExtractor.ContentExtractor> => {
    if (sources.length === 0) return effect
    const byUrl = new Map(sources.map((source) => [Novelty.normalizeUrl(source.url), source] as const))
    return Effect.updateService(effect, ContentExtractor.ContentExtractor, (extractor) => ({
      name: extractor.name,
      extract: (urls) => {
        const stored = (url: string) => byUrl.get(Novelty.normalizeUrl(url))
        const unread = urls.filter((url) => stored(url) === undefined)
        const fetched = unread.length === 0 ? Effect.succeed([]) : extractor.extract(unread)
        return Effect.map(fetched, (results): ReadonlyArray<ExtractResult> => {
          let next = 0
          return urls.flatMap((url) => {
            const source = stored(url)
            if (source !== undefined) {
              return [new ExtractedPage({ url, title: source.title, content: source.content }, true)]
            }
            const result = results[next++]
            return result === undefined ? [] : [result]
          })
        })
      }
    }))
  }

// =============================================================================
// What changed
// =============================================================================

/** What a report version added to the one before it. */
export interface Changes {
  /** Section headings the newer report has and the older had not. */
  readonly sectionsAdded: ReadonlyArray<string>
  /** Sections the newer report no longer has. */
  readonly sectionsRemoved: ReadonlyArray<string>
  /** Sources the newer report cites and the older did not (by URL). */
  readonly sourcesAdded: ReadonlyArray<{ readonly url: string; readonly title: string }>
}

/** The section headings of a report's body (its title and source list left out). */
const headingsOf = (report: Report): ReadonlyArray<string> =>
  ReportText.parse(report.markdown).body.flatMap((line) => {
    const heading = /^\s{0,3}#{2,6}\s+(.*?)\s*#*\s*$/.exec(line.text)
    return heading?.[1] === undefined || heading[1] === "" ? [] : [heading[1]]
  })

/** What `newer` added to (and dropped from) `older`: its sections and its cited sources. */
export const changes = (older: Report, newer: Report): Changes => {
  const before = new Set(headingsOf(older).map((h) => h.toLowerCase()))
  const after = headingsOf(newer)
  const afterSet = new Set(after.map((h) => h.toLowerCase()))
  const cited = new Set(older.citations.map((c) => Novelty.normalizeUrl(c.url)))
  return {
    sectionsAdded: after.filter((h) => !before.has(h.toLowerCase())),
    sectionsRemoved: headingsOf(older).filter((h) => !afterSet.has(h.toLowerCase())),
    sourcesAdded: newer.citations
      .filter((c) => !cited.has(Novelty.normalizeUrl(c.url)))
      .map((c) => ({ url: c.url, title: c.title }))
  }
}
