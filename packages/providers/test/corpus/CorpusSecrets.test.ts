/**
 * A key in a user's document (a `.env` copied into the corpus folder, say) stays out of the corpus's index on disk and
 * of everything the corpus answers, when the corpus is given the process's scrubber; a cache written before, holding
 * the key, is written again without it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Redacted from "effect/Redacted"
import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as LocalCorpus from "../../src/corpus/LocalCorpus.js"
import * as Secrets from "../../src/Secrets.js"

const key = "exa-FAKEEXA-0123456789abcdefghijklmnop"
const token = "Zq7xW2vN9pL4kR8tY3mB6cF1hJ5gD0sA7eU2iO9wQ4zX"
const scrub = Secrets.scrubber([Redacted.make(key), Redacted.make(token)])

const folder = Effect.acquireRelease(
  Effect.promise(async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), "corpus-secrets-"))
    const root = path.join(dir, "corpus")
    await fs.mkdir(root)
    await fs.writeFile(
      path.join(root, "tides.md"),
      `# Tides of ${token.slice(0, 14)}\n\nThe Moon raises the tides. Deployment: EXA_API_KEY=${key} TOKEN=${token}\n`
    )
    return { dir, root, cacheFile: path.join(dir, "index.json") }
  }),
  ({ dir }) => Effect.promise(() => fs.rm(dir, { recursive: true, force: true }))
)

const holdsSecret = (text: string) => text.includes(key.slice(0, 16)) || text.includes(token.slice(0, 12))

describe("a corpus with the process's scrubber", () => {
  it.scoped("keeps a document's secrets out of its index on disk, its results and what it extracts", () =>
    Effect.gen(function* () {
      const { cacheFile, root } = yield* folder
      const corpus = yield* LocalCorpus.make({ root, cacheFile, scrub })
      const results = yield* corpus.search.search("tides Moon deployment", { maxResults: 5 })
      assert.isNotEmpty(results)
      const cache = yield* Effect.promise(() => fs.readFile(cacheFile, "utf8"))
      assert.include(cache, "The Moon raises the tides")
      assert.include(cache, "[redacted]")
      assert.isFalse(holdsSecret(cache), cache)
      assert.isFalse(holdsSecret(JSON.stringify(results)))
    })
  )

  it.scoped("writes again a cache made without the scrubber, which held them", () =>
    Effect.gen(function* () {
      const { cacheFile, root } = yield* folder
      yield* LocalCorpus.make({ root, cacheFile })
      assert.isTrue(holdsSecret(yield* Effect.promise(() => fs.readFile(cacheFile, "utf8"))))
      const corpus = yield* LocalCorpus.make({ root, cacheFile, scrub })
      assert.deepStrictEqual((yield* corpus.lastReport).read, [])
      assert.isFalse(holdsSecret(yield* Effect.promise(() => fs.readFile(cacheFile, "utf8"))))
    })
  )
})
