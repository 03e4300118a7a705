/**
 * Finds every occurrence of a fixed set of short lower-case strings in one
 * pass over a text: a table keyed by the first two code units narrows each
 * position to the few strings that could start there. Used to run a
 * pattern only where one of its required words occurs.
 */

const BUCKETS = 4096
const MAX_HITS_PER_TRIGGER = 512

const bucketOf = (first: number, second: number) => ((first << 5) ^ second) & (BUCKETS - 1)

export class TriggerIndex {
  /** One-character triggers by code unit (ASCII only): the trigger's index, or -1. */
  private readonly singles = new Int16Array(128).fill(-1)
  private readonly buckets: Array<Array<number> | undefined> = new Array(BUCKETS)
  constructor(readonly triggers: ReadonlyArray<string>) {
    triggers.forEach((trigger, index) => {
      if (trigger.length === 1 && trigger.charCodeAt(0) < 128) {
        this.singles[trigger.charCodeAt(0)] = index
      } else if (trigger.length > 1) {
        const bucket = bucketOf(trigger.charCodeAt(0), trigger.charCodeAt(1))
        ;(this.buckets[bucket] ??= []).push(index)
      }
    })
  }

  /** Positions of each trigger in `lower` (index by trigger; undefined where it does not occur). */
  scan(lower: string): Array<Array<number> | undefined> {
    const hits: Array<Array<number> | undefined> = new Array(this.triggers.length)
    const record = (index: number, at: number) => {
      const list = (hits[index] ??= [])
      if (list.length < MAX_HITS_PER_TRIGGER) list.push(at)
    }
    const length = lower.length
    let second = length > 0 ? lower.charCodeAt(0) : 0
    for (let at = 0; at < length; at++) {
      const first = second
      second = at + 1 < length ? lower.charCodeAt(at + 1) : 0
      if (first < 128 && this.singles[first]! >= 0) record(this.singles[first]!, at)
      const bucket = this.buckets[bucketOf(first, second)]
      if (bucket === undefined) continue
      for (const index of bucket) if (lower.startsWith(this.triggers[index]!, at)) record(index, at)
    }
    return hits
  }
}
