/** Test doubles of the providers: a local emulator of the vendors' wire protocols. */
export * as Emulator from "./Emulator.js"
