/**
 * `deep-research bench`, simulated, in this process: the benchmark's tasks chosen by id, language and topic, researched
 * into the official scorer's `{id, prompt, article}` lines and a table of time and cost per task, with progress on
 * stderr; a second run goes on where the first stopped, running only what it had not completed.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as fs from "node:fs"
import * as nodePath from "node:path"
import { parseIds } from "../src/Bench.js"
import { cli, describeRan, tempDir } from "./support/inProcess.js"

const Article = Schema.parseJson(Schema.Struct({ id: Schema.Number, prompt: Schema.String, article: Schema.String }))

/** The scorer's lines, in the order of their ids (a run appends each as its task ends). */
const articlesOf = (dir: string) =>
  fs
    .readFileSync(nodePath.join(dir, "articles.jsonl"), "utf8")
    .trim()
    .split("\n")
    .map((line) => Schema.decodeUnknownSync(Article)(line))
    .sort((a, b) => a.id - b.id)

describe("deep-research bench", () => {
  it("runs the chosen tasks into the scorer's lines and a table, and a second run goes on where it stopped", async () => {
    const dir = tempDir()
    const out = nodePath.join(dir, "bench")
    const common = ["--simulate", "--max-rounds", "1", "--store", nodePath.join(dir, "store"), "--out", out]
    const first = await cli(["bench", "--ids", "1,51", ...common])
    assert.strictEqual(first.code, 0, describeRan(first))
    assert.deepStrictEqual(
      articlesOf(out).map((line) => line.id),
      [1, 51]
    )
    for (const line of articlesOf(out)) {
      assert.include(line.article, "Simulated run", "a simulated article says so")
      assert.isAbove(line.prompt.length, 20)
    }
    // In the order of their ids, however the tasks ended.
    assert.deepStrictEqual(
      fs
        .readFileSync(nodePath.join(out, "articles.jsonl"), "utf8")
        .trim()
        .split("\n")
        .map((line) => Schema.decodeUnknownSync(Article)(line).id),
      [1, 51]
    )
    assert.include(first.stderr, "2 tasks selected")
    assert.match(first.stderr, /\[2\/2\] task \d+ \(\w+, [^)]+\) completed in/)
    assert.match(first.stdout, /^\s+1\s+zh\s+.*completed/m)
    assert.match(first.stdout, /^\s+51\s+en\s+.*completed/m)
    assert.include(first.stdout, "total: 2 completed, 0 failed")
    assert.include(first.stdout, `Articles for the scorer: ${nodePath.join(out, "articles.jsonl")}`)
    assert.isTrue(fs.existsSync(nodePath.join(out, "table.md")))

    const second = await cli(["bench", "--ids", "1,51-52", ...common])
    assert.strictEqual(second.code, 0, describeRan(second))
    assert.include(second.stderr, "3 tasks selected")
    assert.include(second.stderr, "2 already completed")
    assert.include(second.stderr, "task 52 (en,")
    assert.notInclude(second.stderr, "task 1 (zh,", "a completed task is not run again")
    assert.deepStrictEqual(
      articlesOf(out).map((line) => line.id),
      [1, 51, 52]
    )
  })

  it("chooses the tasks of a tasks file by language, topic and number", async () => {
    const dir = tempDir()
    const tasks = nodePath.join(dir, "query.jsonl")
    const task = (id: number, language: string, topic: string) =>
      JSON.stringify({ id, topic, language, prompt: `Question ${id} about ${topic}?` })
    fs.writeFileSync(
      tasks,
      [task(7, "en", "Science & Technology"), task(8, "zh", "Science & Technology"), task(9, "en", "Travel")].join("\n")
    )
    const out = nodePath.join(dir, "bench")
    const ran = await cli([
      "bench",
      "--tasks",
      tasks,
      "--language",
      "en",
      "--topic",
      "science & technology,Travel",
      "--limit",
      "1",
      "--simulate",
      "--max-rounds",
      "1",
      "--store",
      nodePath.join(dir, "store"),
      "--out",
      out
    ])
    assert.strictEqual(ran.code, 0, describeRan(ran))
    assert.deepStrictEqual(
      articlesOf(out).map((line) => [line.id, line.prompt]),
      [[7, "Question 7 about Science & Technology?"]]
    )
  })

  it("takes ids and ranges, and refuses what is neither", async () => {
    assert.deepStrictEqual(parseIds("1, 2,51-53"), Either.right([1, 2, 51, 52, 53]))
    assert.isTrue(Either.isLeft(parseIds("5-3")))
    const refused = await cli(["bench", "--ids", "one", "--simulate"])
    assert.strictEqual(refused.code, 2, describeRan(refused))
    assert.include(refused.stderr, `--ids takes task ids and ranges such as 1,2,51-60; "one" is not one`)
  })
})
