/**
 * Secrets generated under DATA_DIR/secrets (JWT secret, gateway encryption
 * key, receipt signing key) when none is configured: stored once, owner-only,
 * and when processes start together on a new DATA_DIR, the one that stores
 * first wins and the others take its secret instead of failing to start.
 */
import { afterEach, describe, expect, it } from "@effect/vitest"
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { persistedSecretFile } from "../../src/platform/Secrets.js"

const created: Array<string> = []
afterEach(() => {
  for (const directory of created.splice(0)) rmSync(directory, { recursive: true, force: true })
})

const dataDir = () => {
  const directory = mkdtempSync(join(tmpdir(), "secrets-"))
  created.push(directory)
  return directory
}

describe("secrets persisted under DATA_DIR", () => {
  it("a new secret is stored owner-only, and read back as it is without being created again", () => {
    const directory = dataDir()
    expect(persistedSecretFile(directory, "key", () => "first")).toBe("first")
    expect(persistedSecretFile(directory, "key", () => "second")).toBe("first")
    expect(statSync(join(directory, "secrets", "key")).mode & 0o777).toBe(0o600)
    expect(statSync(join(directory, "secrets")).mode & 0o777).toBe(0o700)
    expect(readdirSync(join(directory, "secrets"))).toEqual(["key"])
  })

  it("when another process stores the secret while this one creates its own, both use the one stored first", () => {
    const directory = dataDir()
    const file = join(directory, "secrets", "key")
    // The other process's write lands between this one's check and its own store.
    const mine = persistedSecretFile(directory, "key", () => {
      writeFileSync(file, "theirs", { mode: 0o600 })
      return "mine"
    })
    expect(mine).toBe("theirs")
    expect(readFileSync(file, "utf8")).toBe("theirs")
    expect(readdirSync(join(directory, "secrets"))).toEqual(["key"])
  })
})
