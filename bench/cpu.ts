/**
 * CPU time read from /proc (Linux): per process, per thread of one process,
 * and the difference of two readings per unit of work. Used by the CPU
 * benchmarks (bench/cpu-per-decision.ts, bench/gateway-cpu.ts).
 */
import { readdirSync, readFileSync } from "node:fs"

/** Name and CPU milliseconds (user + system) from a /proc `stat` file. */
const statOf = (path: string) => {
  const raw = readFileSync(path, "utf8")
  const fields = raw.slice(raw.lastIndexOf(")") + 2).split(" ")
  return {
    name: raw.slice(raw.indexOf("(") + 1, raw.lastIndexOf(")")),
    millis: (Number(fields[11]) + Number(fields[12])) * 10
  }
}

/** CPU milliseconds of one process. */
export const cpuOf = (pid: number | string) => statOf(`/proc/${pid}/stat`).millis

/** CPU milliseconds of every process, by "pid:name". */
export const everyProcess = () => {
  const all = new Map<string, number>()
  for (const pid of readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))) {
    try {
      const { millis, name } = statOf(`/proc/${pid}/stat`)
      all.set(`${pid}:${name}`, millis)
    } catch {
      // the process ended meanwhile
    }
  }
  return all
}

/** CPU milliseconds of each thread of `pid`, by "tid:name" ("main" for the process's first thread). */
export const everyThread = (pid: number) => {
  const all = new Map<string, number>()
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const { millis, name } = statOf(`/proc/${pid}/task/${tid}/stat`)
      all.set(`${tid}:${tid === String(pid) ? "main" : name}`, millis)
    } catch {
      // the thread ended meanwhile
    }
  }
  return all
}

/**
 * Microseconds per unit of work by name, between two readings (digits
 * stripped: kworker/1 and kworker/2 add up), the `top` largest.
 */
export const perUnit = (before: Map<string, number>, after: Map<string, number>, units: number, top = 8) => {
  const byName = new Map<string, number>()
  for (const [key, value] of after) {
    const name = key.slice(key.indexOf(":") + 1).replace(/[0-9]+/g, "")
    byName.set(name, (byName.get(name) ?? 0) + value - (before.get(key) ?? 0))
  }
  return Object.fromEntries(
    [...byName]
      .filter(([, ms]) => ms > 0)
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, ms]) => [name, Math.round((ms * 1000) / units)])
  )
}
