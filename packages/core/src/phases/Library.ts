/**
 * A run that starts from the library (the `library` setting): before any search, the passages of earlier sessions'
 * sources that match the question and its brief become sources of this session, each marked with the session it came
 * from (`Source.origin`). The researchers are shown them first (`Task.library`), cite them as any other, and nothing of
 * them is fetched again. Taken once, before the first round; a store without a library is said, not an error. Where
 * sessions have owners (`SourceLibrary.RunReach` in context), only passages of the sessions this session's owner
 * reaches.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import { qualityOfUrl } from "../internal/research/sourceQuality.js"
import * as Novelty from "../Novelty.js"
import type { Session } from "../Session.js"
import type { Service as SessionStoreService } from "../SessionStore.js"
import * as SourceLibrary from "../SourceLibrary.js"
import * as SourcePolicy from "../SourcePolicy.js"
import { Source, SourceOrigin } from "../Source.js"
import type { Task } from "../Task.js"
import * as Checkpoint from "./Checkpoint.js"

/** Sources a run takes from the library at most. */
export const maxSources = 8

/** Passages searched for them: a source's several matching passages count once. */
const passagesSearched = 24

/** Characters of a library source shown to the researchers at most: past it, only its matching passages. */
const maxContent = 6_000

/** The words a run's library search is made of: the question and the brief. */
const searchText = (task: Task): string => [task.query, task.brief?.brief ?? ""].join("\n")

/** A passage's source as the earlier session stored it, when it can still be read. */
const storedSource = (store: SessionStoreService, passage: SourceLibrary.Passage) =>
  store.load(passage.sessionId).pipe(
    Effect.map((session) => session.sources.find((source) => source.id === passage.sourceId)),
    Effect.orElseSucceed(() => undefined)
  )

/** The matching passages of one page, best first. */
type Page = readonly [SourceLibrary.Passage, ...Array<SourceLibrary.Passage>]

/** One source of the library, under the id `library-s<k>` in this session. */
const sourceOf = (store: SessionStoreService, passages: Page, number: number, now: number) =>
  Effect.gen(function* () {
    const [first] = passages
    const stored = yield* storedSource(store, first)
    const matched = passages.map((passage) => passage.text).join("\n\n[…]\n\n")
    const content =
      stored !== undefined && stored.content.length <= maxContent ? stored.content : matched.slice(0, maxContent)
    const origin = new SourceOrigin({ sessionId: first.sessionId, sourceId: first.sourceId })
    return new Source({
      id: `library-s${number}`,
      url: first.url,
      title: stored?.title ?? first.title,
      content,
      ...(stored?.summary !== undefined && content === stored.content ? { summary: stored.summary } : {}),
      provider: stored?.provider ?? "library",
      quality: stored?.quality ?? qualityOfUrl(first.url),
      ...(stored?.publishedDate !== undefined ? { publishedDate: stored.publishedDate } : {}),
      retrievedAt: stored?.retrievedAt ?? now,
      rawLength: stored?.rawLength ?? content.length,
      ...(stored?.work !== undefined ? { work: stored.work } : {}),
      origin
    })
  })

/** The passages grouped by page, best first: at most `maxSources` pages, none the session holds already. */
const byPage = (passages: ReadonlyArray<SourceLibrary.Passage>, held: ReadonlySet<string>): ReadonlyArray<Page> => {
  const pages = new Map<string, [SourceLibrary.Passage, ...Array<SourceLibrary.Passage>]>()
  for (const passage of passages) {
    const key = Novelty.normalizeUrl(passage.url)
    if (held.has(key)) continue
    const page = pages.get(key)
    // A page's passages from one session: the same page stored by another session is the same source.
    if (page !== undefined) {
      if (page[0]?.sessionId === passage.sessionId) page.push(passage)
    } else if (pages.size < maxSources) pages.set(key, [passage])
  }
  return [...pages.values()]
}

/** The library's sources for a session about to research `task` that its source policy keeps, and those it removed. */
export const sourcesFor = (task: Task, session: Session, store: SessionStoreService) =>
  Effect.gen(function* () {
    const library = yield* Effect.serviceOption(SourceLibrary.SourceLibrary)
    if (Option.isNone(library)) {
      yield* Effect.logWarning("the library was asked for, but this session store keeps none: research starts afresh")
      return { kept: [], removed: [] }
    }
    const reach = yield* Effect.serviceOption(SourceLibrary.RunReach)
    const reaches = Option.isSome(reach) ? yield* reach.value.forSession(session.id) : undefined
    const passages = yield* library.value
      .search(searchText(task), { limit: passagesSearched, match: "any", excludeSession: session.id, reaches })
      .pipe(Effect.orElseSucceed((): ReadonlyArray<SourceLibrary.Passage> => []))
    const held = new Set(session.sources.map((source) => Novelty.normalizeUrl(source.url)))
    const now = yield* Clock.currentTimeMillis
    const policy = SourcePolicy.fromSettings(task.config)
    const found = yield* Effect.forEach(byPage(passages, held), (page, i) => sourceOf(store, page, i + 1, now))
    // The run's source policy holds for what it takes from the library as for what it finds, and says what it removed.
    const kept: Array<Source> = []
    const removed: Array<SourcePolicy.Removal> = []
    for (const source of found) {
      const reason = SourcePolicy.check(policy, source)
      if (reason === undefined) kept.push(source)
      else removed.push(new SourcePolicy.Removal({ url: source.url, reason }))
    }
    return { kept, removed }
  })

/**
 * Adds the library's sources to the session, once, before its first round, and to `removals` what the source policy
 * left out of them; returns how many it added.
 */
export const consult = (
  task: Task,
  handle: Checkpoint.Handle,
  store: SessionStoreService,
  removals: Ref.Ref<SourcePolicy.Removals>
) =>
  Effect.gen(function* () {
    const session = yield* handle.get
    if (session.rounds.length > 0 || session.sources.some((source) => source.origin !== undefined)) return 0
    const { kept: found, removed } = yield* sourcesFor(task, session, store)
    yield* Ref.update(removals, (earlier) => SourcePolicy.addRemovals(earlier, removed))
    if (found.length > 0) {
      yield* handle.update("library", (s) => Checkpoint.patch(s, { sources: [...s.sources, ...found] }))
    }
    const sessions = new Set(found.map((source) => source.origin?.sessionId)).size
    yield* Effect.logInfo(
      found.length === 0
        ? "the library holds nothing that matches this question: research starts afresh"
        : `from the library: ${found.length} sources of ${sessions} earlier session${sessions === 1 ? "" : "s"}`
    )
    return found.length
  }).pipe(Effect.withSpan("Library.consult"))
