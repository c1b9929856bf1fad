import { assert, describe, it } from "@effect/vitest"
import * as nodePath from "node:path"
import * as Environment from "../src/Environment.js"

describe("Environment", () => {
  it("the store folder is the first choice given, with ~ expanded, else ~/.deep-research", () => {
    assert.strictEqual(Environment.storeFolder(["/flag", "/env"], "/home/u"), "/flag")
    assert.strictEqual(Environment.storeFolder([undefined, " ", "~/research"], "/home/u"), "/home/u/research")
    assert.strictEqual(Environment.storeFolder([undefined], "/home/u"), "/home/u/.deep-research")
    assert.strictEqual(Environment.storeFolder(["~"], "/home/u"), "/home/u")
  })

  it("only a leading ~ is the home folder", () => {
    assert.strictEqual(Environment.expandHome("/data/~x", "/home/u"), "/data/~x")
    assert.strictEqual(Environment.expandHome("~user/x", "/home/u"), "~user/x")
    assert.strictEqual(Environment.expandHome("~\\x", "C:\\Users\\u"), "C:\\Users\\u\\x")
  })

  it("the sessions are in the store folder's sessions folder", () => {
    assert.strictEqual(Environment.sessionsFolder("/s"), nodePath.join("/s", "sessions"))
  })

  it("every key, the database URL and the API token are secrets; base URLs are not", () => {
    for (const name of Object.values(Environment)) {
      if (typeof name !== "string" || !/^[A-Z_]+$/.test(name)) continue
      const secret = /_API_KEY$|_DATABASE_URL$|_API_TOKEN$/.test(name)
      assert.strictEqual(Environment.secretVariables.includes(name), secret, name)
    }
  })
})
