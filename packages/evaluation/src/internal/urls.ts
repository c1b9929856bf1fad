/** Comparing the URLs a report lists with the URLs its session retrieved. */
import { Novelty } from "@deep-research/core"

/**
 * Core's comparable form of a URL, with `%28` / `%29` read as parentheses on both sides: a report's source list
 * writes `)` as `%29` so that its markdown link does not end early, while the session keeps the URL as found.
 */
export const urlKey = (url: string): string => Novelty.normalizeUrl(url.replace(/%28/gi, "(").replace(/%29/gi, ")"))
