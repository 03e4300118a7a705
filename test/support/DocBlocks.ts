/**
 * Runnable blocks of the docs, found between `<!-- NAME:start -->` and
 * `<!-- NAME:end -->` and run as pasted, so a walkthrough that drifts from
 * the service fails a test instead of a reader.
 */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"

/** The code of the first fenced block between the markers `NAME:start` and `NAME:end` of a file (repository-relative). */
export const docBlock = (file: string, name: string) => {
  const text = readFileSync(new URL(`../../${file}`, import.meta.url), "utf8")
  const start = text.indexOf(`<!-- ${name}:start -->`)
  const end = text.indexOf(`<!-- ${name}:end -->`)
  expect(start, `${file} has the block ${name}`).toBeGreaterThan(-1)
  expect(end).toBeGreaterThan(start)
  const block = text.slice(start, end)
  const open = block.indexOf("```")
  return block.slice(block.indexOf("\n", open) + 1, block.lastIndexOf("```"))
}

/**
 * Runs shell blocks one after another in one bash (`-euo pipefail`), as pasted into one terminal, in a
 * directory of their own (a block may write files there); answers stdout.
 */
export const runShell = (blocks: ReadonlyArray<string>, env: Record<string, string>) =>
  Effect.acquireUseRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "doc-block-"))),
    (cwd) =>
      // Asynchronously: the server answering the blocks runs in this process.
      Effect.promise(() =>
        promisify(execFile)("bash", ["-euo", "pipefail", "-c", blocks.join("\n")], {
          cwd,
          env: { ...process.env, ...env },
          encoding: "utf8",
          timeout: 280_000
        }).then(({ stdout }) => stdout)
      ),
    (cwd) => Effect.sync(() => rmSync(cwd, { recursive: true, force: true }))
  )
