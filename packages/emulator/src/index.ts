/**
 * The vendors' wire as they publish it, served on 127.0.0.1: what `deep-research --simulate`, the tests and the
 * benchmarks run against instead of the vendors. The product's mirror, kept apart from the product.
 */
export * as Emulator from "./Emulator.js"
