/**
 * Runs before each test file. Test files share their worker process
 * (`isolate: false` in vitest.config.ts), and @effect/vitest's `layer(...)`
 * assigns its layer-bound `effect`, `scoped` and `layer` onto vitest's one
 * `it` object: a later file's `it.effect` would run inside an earlier file's
 * layer (without the test clock). Each file starts from the defaults again.
 */
import { effect, flakyTest, layer, live, prop, scoped, scopedLive } from "@effect/vitest"
import { it } from "vitest"

Object.assign(it, { effect, flakyTest, layer, live, prop, scoped, scopedLive })
