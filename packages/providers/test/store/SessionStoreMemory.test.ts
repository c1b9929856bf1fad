/** The session store contract, against the memory store of core's testing API. */
import { MemorySessionStore } from "@deep-research/core/testing"
import * as Effect from "effect/Effect"
import { contract } from "../support/sessionStoreContract.js"

contract(
  "memory",
  Effect.map(MemorySessionStore.make, (store) => ({ store })),
  { corruptible: false }
)
