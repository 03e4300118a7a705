/**
 * Runs before each test file. Test files share their worker process
 * (`isolate: false` in vitest.config.ts), and @effect/vitest's `layer(...)`
 * assigns its layer-bound `effect`, `scoped` and `layer` onto vitest's one
 * `it` object: a later file's `it.effect` would run inside an earlier file's
 * layer (without the test clock). Each file starts from the defaults again.
 * (Effect 4's @effect/vitest stops mutating `it`, Effect-TS/effect-smol#2177;
 * Effect 3's 0.30 still does.)
 */
import { effect, flakyTest, layer, live, prop, scoped, scopedLive } from "@effect/vitest"
import { it } from "vitest"

Object.assign(it, { effect, flakyTest, layer, live, prop, scoped, scopedLive })
