/**
 * What every `SessionStore` must do, as one suite run against each store (memory, files, PostgreSQL), so that they
 * behave alike: checkpoints replaced whole, the event log in order, reports and artefacts beside their session, a
 * corrupt session reported and never overwritten, and one run at a time.
 */
import { Errors, ResearchConfig, ResearchEvents, Session, SessionStore } from "@deep-research/core"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"

/** A store under test, and what the suite can do to its data from outside. */
export interface Harness {
  readonly store: SessionStore.Service
  /** A second store over the same data, as another process would open it. */
  readonly reopen?: Effect.Effect<SessionStore.Service, never, Scope.Scope> | undefined
  /** Damages a saved session's stored data the way a crash or a hand edit could. */
  readonly corrupt?: ((id: string) => Effect.Effect<void>) | undefined
  /** The damaged data kept aside for a session, as the store keeps it. */
  readonly corruptKept?: ((id: string) => Effect.Effect<ReadonlyArray<string>>) | undefined
}

export const makeSession = (id: string, fields: Partial<ConstructorParameters<typeof Session.Session>[0]> = {}) =>
  new Session.Session({
    version: Session.currentVersion,
    id,
    query: `What about ${id}?`,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    config: ResearchConfig.defaults,
    status: "running",
    rounds: [],
    sources: [],
    metrics: [],
    usage: [],
    ...fields
  })

const event = (fields: ResearchEvents.EventInput, sessionId: string, timestamp = 1): ResearchEvents.ResearchEvent =>
  Schema.decodeUnknownSync(ResearchEvents.ResearchEvent)({ ...fields, sessionId, timestamp })

const encode = Schema.encodeSync(Session.Session)

const tagOf = <A, E extends { readonly _tag: string }, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.flip(effect), (error) => error._tag)

/**
 * Registers the contract's tests for one store. `corruptible`: the store has a stored form that can be damaged
 * (the memory store has none), and the harness gives `corrupt` and `corruptKept`.
 */
export const contract = (
  name: string,
  harness: Effect.Effect<Harness, never, Scope.Scope>,
  options: { readonly corruptible: boolean }
) =>
  describe(`SessionStore contract: ${name}`, () => {
    it.scoped("a saved session loads as saved, and a new checkpoint replaces it", () =>
      Effect.gen(function* () {
        const { store } = yield* harness
        const first = makeSession("alpha")
        yield* store.save(first)
        assert.deepStrictEqual(encode(yield* store.load("alpha")), encode(first))
        const second = makeSession("alpha", { status: "completed", updatedAt: 1_700_000_000_500 })
        yield* store.save(second)
        assert.deepStrictEqual(encode(yield* store.load("alpha")), encode(second))
        assert.strictEqual(yield* tagOf(store.load("nobody")), "ResearchSessionNotFound")
      })
    )

    it.scoped("checkpoints saved at once: the one loaded is one of them, whole", () =>
      Effect.gen(function* () {
        const { store } = yield* harness
        const versions = Array.from({ length: 12 }, (_, n) =>
          makeSession("racing", {
            updatedAt: 1_700_000_000_000 + n,
            query: `question ${n} ${"x".repeat(2_000 * n)}`
          })
        )
        yield* Effect.forEach(versions, (session) => store.save(session), { concurrency: "unbounded" })
        const loaded = encode(yield* store.load("racing"))
        assert.isTrue(versions.some((session) => JSON.stringify(encode(session)) === JSON.stringify(loaded)))
      })
    )

    it.scoped("the event log comes back in the order it was appended, events from several writers included", () =>
      Effect.gen(function* () {
        const { store } = yield* harness
        const id = "logged"
        yield* store.appendEvents(id, [event({ _tag: "SessionStarted", query: "q" }, id, 1)])
        const writers = ["a", "b", "c", "d"]
        yield* Effect.forEach(
          writers,
          (writer) =>
            Effect.forEach(
              [1, 2, 3, 4, 5],
              (n) =>
                store.appendEvents(id, [
                  event({ _tag: "RoundStarted", round: n }, id, n * 10),
                  event({ _tag: "ClarificationAsked", question: `${writer}${n}` }, id, n * 10 + 1)
                ]),
              { discard: true }
            ),
          { concurrency: "unbounded", discard: true }
        )
        const events = yield* store.events(id)
        assert.strictEqual(events.length, 1 + writers.length * 10)
        assert.strictEqual(events[0]?._tag, "SessionStarted")
        for (const writer of writers) {
          const asked = events.flatMap((e) =>
            e._tag === "ClarificationAsked" && e.question.startsWith(writer) ? [e.question] : []
          )
          assert.deepStrictEqual(
            asked,
            [1, 2, 3, 4, 5].map((n) => `${writer}${n}`)
          )
        }
        // A batch stays together: each question follows its round.
        events.forEach((e, index) => {
          if (e._tag === "ClarificationAsked") assert.strictEqual(events[index - 1]?._tag, "RoundStarted")
        })
        assert.strictEqual(yield* tagOf(store.events("never-written")), "ResearchSessionNotFound")
      })
    )

    it.scoped("a report and named artefacts are kept beside their session", () =>
      Effect.gen(function* () {
        const { store } = yield* harness
        yield* store.save(makeSession("judged"))
        yield* store.saveReport("judged", "# Report\n")
        assert.isTrue(Option.isNone(yield* store.artefact("judged", "evaluation.json")))
        yield* store.saveArtefact("judged", "evaluation.json", '{"score":1}\n')
        yield* store.saveArtefact("judged", "evaluation.json", '{"score":2}\n')
        assert.deepStrictEqual(yield* store.artefact("judged", "evaluation.json"), Option.some('{"score":2}\n'))
        assert.strictEqual(yield* tagOf(store.artefact("unknown", "evaluation.json")), "ResearchSessionNotFound")
        for (const bad of ["../evaluation.json", "session.json", "report.md", "Evaluation.json", "noextension"]) {
          assert.strictEqual(yield* tagOf(store.saveArtefact("judged", bad, "x")), "ResearchInvalidInput", bad)
        }
      })
    )

    it.scoped("the artefact of a name of every session that keeps one is read at once", () =>
      Effect.gen(function* () {
        const { store } = yield* harness
        for (const id of ["owned-a", "owned-b", "unowned"]) yield* store.save(makeSession(id))
        yield* store.saveArtefact("owned-a", "caller.json", '{"caller":"a"}')
        yield* store.saveArtefact("owned-b", "caller.json", '{"caller":"b"}')
        yield* store.saveArtefact("unowned", "evaluation.json", "{}")
        const read = store.artefactOfEach
        assert.isDefined(read)
        if (read === undefined) return
        const owners = yield* read("caller.json")
        assert.deepStrictEqual(
          [...owners].sort(([a], [b]) => a.localeCompare(b)),
          [
            ["owned-a", '{"caller":"a"}'],
            ["owned-b", '{"caller":"b"}']
          ]
        )
        assert.strictEqual((yield* read("nothing.json")).size, 0)
        assert.strictEqual(yield* tagOf(read("../caller.json")), "ResearchInvalidInput")
      })
    )

    it.scoped("a deleted artefact is gone, and the session and its other artefacts stay", () =>
      Effect.gen(function* () {
        const { store } = yield* harness
        yield* store.save(makeSession("pruned"))
        yield* store.saveReport("pruned", "# Report\n")
        yield* store.saveArtefact("pruned", "requests.json", "{}")
        yield* store.saveArtefact("pruned", "evaluation.json", '{"score":1}\n')
        yield* store.deleteArtefact("pruned", "requests.json")
        assert.isTrue(Option.isNone(yield* store.artefact("pruned", "requests.json")))
        assert.deepStrictEqual(yield* store.artefact("pruned", "evaluation.json"), Option.some('{"score":1}\n'))
        assert.strictEqual((yield* store.load("pruned")).id, "pruned")
        // Deleting what is not there (any more, or ever) is not an error.
        yield* store.deleteArtefact("pruned", "requests.json")
        yield* store.deleteArtefact("never-saved", "requests.json")
        for (const bad of ["../evaluation.json", "session.json", "report.md", "events.jsonl"]) {
          assert.strictEqual(yield* tagOf(store.deleteArtefact("pruned", bad)), "ResearchInvalidInput", bad)
        }
        assert.strictEqual(yield* tagOf(store.deleteArtefact("../x", "requests.json")), "ResearchInvalidInput")
      })
    )

    it.scoped("ids that could name something else are refused before anything is touched", () =>
      Effect.gen(function* () {
        const { store } = yield* harness
        for (const id of ["../x", "a/b", "", "-dash", "a b"]) {
          assert.strictEqual(yield* tagOf(store.load(id)), "ResearchInvalidInput", id)
          assert.strictEqual(
            yield* tagOf(store.save(makeSession("ok")).pipe(Effect.zipRight(store.delete(id)))),
            "ResearchInvalidInput"
          )
        }
      })
    )

    it.scoped("list is newest first; delete removes everything of a session", () =>
      Effect.gen(function* () {
        const { store } = yield* harness
        yield* store.save(makeSession("older", { createdAt: 1 }))
        yield* store.save(makeSession("newer", { createdAt: 2 }))
        yield* store.appendEvents("newer", [event({ _tag: "SessionStarted", query: "q" }, "newer")])
        yield* store.saveArtefact("newer", "evaluation.json", "{}")
        assert.deepStrictEqual(
          (yield* store.list).map((s) => s.id),
          ["newer", "older"]
        )
        yield* store.delete("newer")
        assert.deepStrictEqual(
          (yield* store.list).map((s) => s.id),
          ["older"]
        )
        assert.strictEqual(yield* tagOf(store.load("newer")), "ResearchSessionNotFound")
        assert.strictEqual(yield* tagOf(store.events("newer")), "ResearchSessionNotFound")
        assert.strictEqual(yield* tagOf(store.delete("newer")), "ResearchSessionNotFound")
      })
    )

    it.scoped("list says which sessions carry the simulated mark", () =>
      Effect.gen(function* () {
        const { store } = yield* harness
        yield* store.save(makeSession("simulated", { createdAt: 2 }))
        yield* store.save(makeSession("real", { createdAt: 1 }))
        yield* store.saveArtefact("simulated", SessionStore.simulatedMark, '{"simulated": true}')
        yield* store.saveArtefact("real", "evaluation.json", "{}")
        assert.deepStrictEqual(
          (yield* store.list).map((s) => [s.id, s.simulated]),
          [
            ["simulated", true],
            ["real", undefined]
          ]
        )
      })
    )

    it.scoped("a session is held by one run at a time, and free again once that run lets it go", () =>
      Effect.gen(function* () {
        const { store, reopen } = yield* harness
        yield* store.save(makeSession("held"))
        const others = reopen === undefined ? [store] : [store, yield* reopen]
        yield* Effect.scoped(
          Effect.gen(function* () {
            yield* store.lock("held")
            for (const other of others) {
              const busy = yield* Effect.flip(Effect.scoped(other.lock("held")))
              assert.instanceOf(busy, Errors.ResearchSessionBusy)
              assert.strictEqual(yield* tagOf(other.delete("held")), "ResearchSessionBusy")
            }
          })
        )
        for (const other of others) yield* Effect.scoped(other.lock("held"))
        // Many runs racing for one session: exactly one gets it.
        const attempts = yield* Effect.forEach(
          Array.from({ length: 8 }, (_, n) => others[n % others.length] ?? store),
          (other) => Effect.exit(other.lock("held")),
          { concurrency: "unbounded" }
        )
        assert.strictEqual(attempts.filter(Exit.isSuccess).length, 1)
      })
    )

    if (!options.corruptible) return
    it.scoped("a corrupt session is reported, listed as corrupt, and kept rather than overwritten", () =>
      Effect.gen(function* () {
        const { store, corrupt, corruptKept } = yield* harness
        if (corrupt === undefined || corruptKept === undefined) return assert.fail("the harness cannot damage data")
        yield* store.save(makeSession("damaged"))
        yield* corrupt("damaged")
        const error = yield* Effect.flip(store.load("damaged"))
        assert.instanceOf(error, Errors.ResearchSessionCorrupt)
        const listed = (yield* store.list).find((s) => s.id === "damaged")
        assert.strictEqual(listed?.status, "corrupt")
        const fresh = makeSession("damaged", { status: "completed" })
        yield* store.save(fresh)
        assert.deepStrictEqual(encode(yield* store.load("damaged")), encode(fresh))
        const kept = yield* corruptKept("damaged")
        assert.strictEqual(kept.length, 1)
      })
    )
  })
