/**
 * How bench/gateway.ts measures one target: a warm-up, then concurrency 1
 * timed per request, a fixed 500 requests/s and as fast as 100 connections
 * go (sustained), each after the machine settles.
 */
import type autocannon from "autocannon"
import { Agent, request as httpRequest } from "node:http"
import { cannon, pause } from "./support.js"

export const LOADS = ["concurrency_1", "rate_500", "sustained"] as const
export type Load = (typeof LOADS)[number]

export interface LoadResult {
  readonly p50_ms: number
  readonly p99_ms: number
  readonly mean_ms: number
  readonly requests_per_s: number
  readonly non_2xx: number
  readonly errors: number
}

/** The loads autocannon drives (concurrency 1 is timed by `sequential`). */
const cannonLoads: Record<Exclude<Load, "concurrency_1">, Partial<autocannon.Options>> = {
  rate_500: { connections: 50, overallRate: 500 },
  sustained: { connections: 100 }
}

export interface Target {
  readonly name: string
  readonly url: string
  readonly headers: Record<string, string>
}

/** The `q` quantile of sorted values, rounded to 0.01 ms. */
export const quantile = (sorted: ReadonlyArray<number>, q: number) =>
  Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! * 100) / 100

/**
 * One request to `target` over `agent`: its status and the milliseconds to
 * its last byte, counted from `started` (by default, now).
 */
export const timedRequest = (target: Target, body: string, agent: Agent, started = performance.now()) =>
  new Promise<{ status: number; ms: number }>((resolve, reject) => {
    const request = httpRequest(
      new URL(target.url),
      { method: "POST", agent, headers: { ...target.headers, "content-length": Buffer.byteLength(body) } },
      (response) => {
        response.resume()
        response.on("end", () => resolve({ status: response.statusCode ?? 0, ms: performance.now() - started }))
      }
    )
    request.on("error", reject)
    request.end(body)
  })

/**
 * `perSecond` requests a second for `seconds`, open loop: each is due at a
 * fixed time whether or not earlier ones have answered, and its latency
 * counts from when it was due (so a stall is not hidden by sending less).
 * Answers once every request has settled.
 */
export const openLoop = (target: Target, body: string, agent: Agent, perSecond: number, seconds: number) =>
  new Promise<{ latencies: Array<number>; failed: number }>((resolve) => {
    const total = Math.round(perSecond * seconds)
    const interval = 1000 / perSecond
    const latencies: Array<number> = []
    let failed = 0
    let sent = 0
    let settled = 0
    const settle = () => {
      settled += 1
      if (settled === total) resolve({ latencies, failed })
    }
    const startedAt = performance.now()
    const tick = () => {
      const due = Math.min(total, Math.floor((performance.now() - startedAt) / interval) + 1)
      for (; sent < due; sent++) {
        timedRequest(target, body, agent, startedAt + sent * interval)
          .then(
            ({ status, ms }) => (status >= 200 && status < 300 ? latencies.push(ms) : (failed += 1)),
            () => (failed += 1)
          )
          .finally(settle)
      }
      if (sent < total) setTimeout(tick, 1)
    }
    tick()
  })

/**
 * Concurrency 1, timed per request with `performance.now()` over one
 * keep-alive connection: autocannon's histogram counts whole milliseconds,
 * too coarse where the gateways add about a millisecond.
 */
const sequential = async (target: Target, body: string, seconds: number) => {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const latencies: Array<number> = []
  let non2xx = 0
  let errors = 0
  const until = Date.now() + seconds * 1000
  while (Date.now() < until) {
    await timedRequest(target, body, agent).then(
      ({ status, ms }) => (status >= 200 && status < 300 ? latencies.push(ms) : (non2xx += 1)),
      () => (errors += 1)
    )
  }
  agent.destroy()
  const sorted = [...latencies].sort((a, b) => a - b)
  return {
    p50_ms: quantile(sorted, 0.5),
    p99_ms: quantile(sorted, 0.99),
    mean_ms: Math.round((latencies.reduce((sum, ms) => sum + ms, 0) / latencies.length) * 100) / 100,
    requests_per_s: Math.round(latencies.length / seconds),
    non_2xx: non2xx,
    errors
  } satisfies LoadResult
}

/**
 * Warm-up, then each load; before each measurement `settle` waits until the
 * machine is quiet again (by default a fixed pause), so no run measures the
 * previous one's backlog.
 */
export const measure = async (
  target: Target,
  body: string,
  seconds: number,
  settle: () => Promise<void> = () => pause(5_000)
) => {
  const base = { url: target.url, method: "POST" as const, body, headers: target.headers, duration: seconds }
  await cannon({ ...base, connections: 20, duration: 3 }) // warm-up
  await settle()
  const results: Partial<Record<Load, LoadResult>> = { concurrency_1: await sequential(target, body, seconds) }
  for (const [load, options] of Object.entries(cannonLoads) as Array<[Load, Partial<autocannon.Options>]>) {
    await settle()
    const result = await cannon({ ...base, ...options })
    results[load] = {
      p50_ms: result.latency.p50,
      p99_ms: result.latency.p99,
      mean_ms: result.latency.average,
      requests_per_s: Math.round(result.requests.average),
      non_2xx: result.non2xx,
      errors: result.errors
    }
  }
  return results as Record<Load, LoadResult>
}
