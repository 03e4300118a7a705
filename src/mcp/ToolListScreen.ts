/**
 * The screen of a `tools/list` answer (Gateway.ts): the tools disabled in
 * tool metadata are left out; so are the tools whose definition is not the
 * one pinned (ToolPins.ts), before anything is decided; the descriptions of
 * the others are decided as one `tool.result` (ToolList.ts), and the
 * listing is recorded with the tools that decision found poisoned (in the
 * caller's environment). A tool not pinned as listed (past the server's pin
 * limit, or pinned first by another listing with another definition) is
 * left out, and so is one that cannot be pinned as listed (no name, a name
 * too long, or an entry of a name listed twice with another definition). Anything that fails withholds the list (fail closed).
 */
import { Effect } from "effect"
import type { Caller } from "../identity/Authentication.js"
import type { Screen } from "./Answer.js"
import type { Verdict } from "./Relay.js"
import { resultFor } from "./Responses.js"
import { listedTools, resultMessage } from "./Screening.js"
import type { ServerTarget } from "./Servers.js"
import { type DecideEvent, whyUndecided } from "./ServerRequestScreen.js"
import { poisonedNames, screenedToolList, toolListText, unscreenedToolList } from "./ToolList.js"
import { definitionsOf, pinnableTools, type ToolPins } from "./ToolPins.js"

export const makeToolListScreen =
  (deps: {
    readonly decide: DecideEvent
    readonly pins: ToolPins
    readonly disabledTools: (workspaceId: string) => Effect.Effect<ReadonlyArray<string>>
  }) =>
  (caller: Caller, target: ServerTarget, session: string | undefined, id: string | number, environmentId: string) =>
    Effect.gen(function* () {
      const workspaceId = caller.workspaceId
      const hidden = new Set(yield* deps.disabledTools(workspaceId))
      const screen: Screen = (message) => {
        const result = resultFor(message, id)
        if (result === undefined) return Effect.succeed<Verdict>("keep")
        return Effect.gen(function* () {
          const listed = listedTools(result, hidden)
          const definitions = definitionsOf(listed)
          const unchanged = listedTools(listed, yield* deps.pins.changed(workspaceId, target.id, definitions))
          const candidate = pinnableTools(unchanged, definitions)
          // The descriptions of the tools it keeps enter the model's context: decided as a tool result.
          const decision = yield* deps.decide(caller, target, session, "tool.result", {
            operation: "tools/list",
            content: toolListText(candidate),
            sources: [{ path: "content", origin: target.resultOrigin, source_id: `mcp:${target.id}/tools` }]
          })
          const poisoned = poisonedNames(candidate, decision)
          const pinned = yield* deps.pins.record(workspaceId, target.id, environmentId, definitions, poisoned)
          const screened = screenedToolList(id, candidate, decision)
          const unpinned = new Set([...definitionsOf(candidate).keys()].filter((tool) => !pinned.has(tool)))
          return {
            replace: unpinned.size === 0 ? screened : resultMessage(id, listedTools(screened.result, unpinned))
          } satisfies Verdict
        }).pipe(
          // Fails closed for the client; operators see why (a server deleted mid-listing, a database outage).
          Effect.catchAllCause((cause) =>
            Effect.logWarning("MCP tool list withheld: it could not be screened", cause).pipe(
              Effect.as<Verdict>({ replace: unscreenedToolList(id, whyUndecided(cause)) })
            )
          )
        )
      }
      return screen
    })
