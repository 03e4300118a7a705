/**
 * Summarises V8 CPU profiles written by BENCH_CPU_PROFILE=<dir> (one file
 * per thread): busy milliseconds per thread (idle samples left out) and the
 * files that took the most self time, so two commits' profiles of the same
 * benchmark can be compared per request served.
 * Usage: npx tsx bench/profile-summary.ts <dir> [top=15]
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"

interface CallFrame {
  readonly functionName: string
  readonly url: string
}
interface CpuProfile {
  readonly nodes: ReadonlyArray<{ readonly id: number; readonly callFrame: CallFrame }>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const dir = process.argv[2]
if (dir === undefined) throw new Error("usage: npx tsx bench/profile-summary.ts <dir> [top]")
const top = Number(process.argv[3] ?? 15)

/** `nm:<package>` for dependencies, the repository path for ours, the URL for Node's own modules. */
const shortName = (url: string): string => {
  const dependency = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
  if (dependency !== null) return `nm:${dependency[1]}`
  const ours = /\/(src|services|bench)\/(.*)$/.exec(url)
  return ours !== null ? `${ours[1]}/${ours[2]}` : url === "" ? "(native)" : url
}

for (const file of readdirSync(dir).filter((name) => name.endsWith(".cpuprofile")).sort()) {
  const profile = JSON.parse(readFileSync(join(dir, file), "utf8")) as CpuProfile
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]))
  const selfMicros = new Map<string, number>()
  let busy = 0
  profile.samples.forEach((id, i) => {
    const frame = frames.get(id)
    const delta = profile.timeDeltas[i] ?? 0
    if (frame === undefined || frame.functionName === "(idle)") return
    busy += delta
    const name = shortName(frame.url)
    selfMicros.set(name, (selfMicros.get(name) ?? 0) + delta)
  })
  console.log(`${file}: busy ${(busy / 1000).toFixed(0)} ms`)
  for (const [name, micros] of [...selfMicros].sort((a, b) => b[1] - a[1]).slice(0, top)) {
    console.log(`  ${(micros / 1000).toFixed(0).padStart(7)} ms  ${name}`)
  }
}
