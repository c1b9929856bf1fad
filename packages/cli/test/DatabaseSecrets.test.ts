import { assert, describe, it } from "@effect/vitest"
import * as Redacted from "effect/Redacted"
import { databaseSecrets } from "../src/internal/config/credentials.js"

const secrets = (url: string) => databaseSecrets(Redacted.make(url)).map(Redacted.value)

describe("a database URL's secrets", () => {
  it("are its password and the URL that holds it", () => {
    const url = "postgres://deep:s%40cret@db.example:5432/research"
    assert.sameMembers(secrets(url), [url, "s@cret", "s%40cret"])
    assert.sameMembers(secrets("postgres://db.example/research?password=hunter22"), [
      "postgres://db.example/research?password=hunter22",
      "hunter22"
    ])
  })

  it("are none when it has no password: an address an operator must be able to read", () => {
    assert.deepStrictEqual(secrets("postgres://postgres@127.0.0.1:5432/test"), [])
  })

  it("are the whole text when it is no URL", () => {
    assert.deepStrictEqual(secrets("host=db user=deep password=x"), ["host=db user=deep password=x"])
  })
})
