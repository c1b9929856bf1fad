/**
 * Secrets kept out of a text: the values of the keys and tokens a process holds (raw and JSON-escaped), and anything
 * shaped like a vendor's API key, become `[redacted]`, as the session stores write them. For a server to take them out
 * of what its clients send (a question holding a key) before any model, log or store sees it.
 */
import * as Redacted from "effect/Redacted"
import { makeScrubber } from "./store/secretScrubber.js"

/** A text without the given secrets nor anything shaped like a vendor's key (values under 8 characters are left). */
export const scrubber = (secrets: ReadonlyArray<Redacted.Redacted<string>>): ((text: string) => string) => {
  const scrub = makeScrubber(secrets.map(Redacted.value))
  return (text) => scrub(text).text
}
