/**
 * The client as another Node project installs it: `npm run build:client`,
 * `npm pack`, the tarball unpacked into a fresh project's node_modules (its
 * dependencies linked from this checkout's, as an install would provide
 * them), then that project imports `guardrail-service/client`,
 * `guardrail-service/openai-agents` and `guardrail-service/ai-sdk` through
 * the package's `exports`, type-checks against the emitted declarations,
 * and decides an event against a started service.
 */
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import { promisify } from "node:util"
import { createAgent } from "../support/Events.js"
import { createKey, tenant } from "../support/Tenants.js"
import { baseUrl, SERVER_OPTIONS, testServer } from "../support/TestServer.js"

const run = promisify(execFile)
const ROOT = resolve(import.meta.dirname, "../..")
const MODULES = join(ROOT, "node_modules")

const APP = `
import { createGuardrailClient, verifyReceipt, GuardrailError } from "guardrail-service/client"
import { guardrailInput, guardrailOutput, guardTool } from "guardrail-service/openai-agents"
import { guardrailMiddleware } from "guardrail-service/ai-sdk"

const client = createGuardrailClient({
  baseUrl: process.env.BASE_URL,
  apiKey: process.env.API_KEY,
  agentId: "support-bot",
  workspaceId: process.env.WORKSPACE_ID,
  environmentId: process.env.ENVIRONMENT_ID
})
const decision = await client.decide({ kind: "output.proposed", action: { operation: "reply", content: "Hi" } })
const claims = await verifyReceipt(await client.getReceipt(decision.receipt_id), await client.jwks())
const missing = await client.getRun("run_missing").catch((error) => error)
console.log(JSON.stringify({
  effect: decision.effect,
  verified: claims.trace_id === decision.trace_id,
  error: missing instanceof GuardrailError ? missing.status : null,
  adapters: [guardrailInput, guardrailOutput, guardTool, guardrailMiddleware].map((f) => typeof f)
}))
`

const TYPED = `
import { createGuardrailClient, type Decision } from "guardrail-service/client"
import { guardrailMiddleware } from "guardrail-service/ai-sdk"
const client = createGuardrailClient({ baseUrl: "http://127.0.0.1:1", apiKey: "k" })
export const decide = (): Promise<Decision> =>
  client.decide({ kind: "input.received", action: { operation: "user_message", content: "hi" } })
export const middleware = guardrailMiddleware({ client })
`

/** A project in a temporary directory with the packed client installed; removed with the scope. */
const installedProject = Effect.acquireRelease(
  Effect.promise(async () => {
    const dir = mkdtempSync(join(tmpdir(), "guardrail-client-"))
    await run("npm", ["run", "build:client"], { cwd: ROOT })
    const { stdout } = await run("npm", ["pack", "--ignore-scripts", "--pack-destination", dir, "--json"], {
      cwd: ROOT
    })
    const [packed] = JSON.parse(stdout) as Array<{ filename: string; files: Array<{ path: string }> }>
    const modules = join(dir, "node_modules")
    mkdirSync(join(modules, "guardrail-service"), { recursive: true })
    await run("tar", [
      "-xzf",
      join(dir, packed!.filename),
      "-C",
      join(modules, "guardrail-service"),
      "--strip-components=1"
    ])
    for (const entry of readdirSync(MODULES)) {
      if (entry !== "guardrail-service" && entry !== ".bin") symlinkSync(join(MODULES, entry), join(modules, entry))
    }
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "consumer", type: "module", private: true }))
    writeFileSync(join(dir, "app.mjs"), APP)
    writeFileSync(join(dir, "typed.ts"), TYPED)
    return { dir, files: packed!.files.map((file) => file.path) }
  }),
  ({ dir }) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
)

layer(testServer("database"), SERVER_OPTIONS)("the packed client", (it) => {
  it.scoped(
    "installs from an npm pack tarball, imports through exports, type-checks and decides",
    () =>
      Effect.gen(function* () {
        const { dir, files } = yield* installedProject
        expect(files).toContain("dist/client/index.js")
        expect(files).toContain("dist/client/index.d.ts")
        expect(files).toContain("dist/client/adapters/AiSdk.js")
        expect(files.filter((file) => file.startsWith("src/") || file.startsWith("test/"))).toEqual([])

        const base = yield* baseUrl
        const owner = yield* tenant(base)
        yield* createAgent(base, owner, "support-bot")
        const key = yield* createKey(owner)
        const { stdout } = yield* Effect.promise(() =>
          run("node", ["app.mjs"], {
            cwd: dir,
            env: {
              ...process.env,
              BASE_URL: base,
              API_KEY: key.plaintext_key,
              WORKSPACE_ID: owner.workspaceId,
              ENVIRONMENT_ID: owner.defaultEnvironmentId
            }
          })
        )
        expect(JSON.parse(stdout)).toEqual({
          effect: "permit",
          verified: true,
          error: 404,
          adapters: ["function", "function", "function", "function"]
        })

        const tsc = join(MODULES, "typescript", "bin", "tsc")
        const checked = yield* Effect.promise(() =>
          run(
            "node",
            [
              tsc,
              "--noEmit",
              "--strict",
              "--skipLibCheck",
              "--module",
              "nodenext",
              "--moduleResolution",
              "nodenext",
              "--target",
              "es2022",
              "typed.ts"
            ],
            { cwd: dir }
          ).then(
            () => "ok",
            (error: { stdout?: string }) => error.stdout ?? String(error)
          )
        )
        expect(checked).toBe("ok")
      }),
    600_000
  )
})
