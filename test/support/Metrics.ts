/** Reading `GET /metrics` in tests: the Prometheus text, and one sample of it. */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { request } from "./Raw.js"

/** The exposition of the server at `base`, read with its METRICS_TOKEN. */
export const scrape = (base: string, token: string) =>
  Effect.map(request(`${base}/metrics`, { headers: { authorization: `Bearer ${token}` } }), (response) => {
    expect(response.status, response.text).toBe(200)
    expect(response.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/)
    return response.text
  })

/** The value of the sample `name{labels}` (labels in any order), or undefined. */
export const sample = (text: string, name: string, labels: Record<string, string>) => {
  for (const line of text.split("\n")) {
    const match = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match === null || match[1] !== name) continue
    const found = Object.fromEntries(
      [...(match[2] ?? "").matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!])
    )
    if (Object.entries(labels).every(([key, value]) => found[key] === value)) return Number(match[3])
  }
  return undefined
}
